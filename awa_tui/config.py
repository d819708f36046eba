"""Where the database is (DSN resolution) and who the operator is."""

from __future__ import annotations

import getpass
import os
import socket

PG_ENV = ("PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE")


def resolve_dsn(flag: str | None = None) -> str | None:
    """--dsn > AWA_DATABASE_URL > DATABASE_URL > libpq PG* variables; None = not configured."""
    for value in (flag, os.environ.get("AWA_DATABASE_URL"), os.environ.get("DATABASE_URL")):
        if value:
            return value
    if any(os.environ.get(name) for name in PG_ENV):
        return ""  # an empty conninfo lets libpq read the PG* variables itself
    return None


def default_operator() -> str:
    """`$SUDO_USER` or `$USER` (else the login name) @ host: who did an operator action."""
    user = os.environ.get("SUDO_USER") or os.environ.get("USER")
    if not user:
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = "unknown"
    return f"{user}@{socket.gethostname()}"
