"""Where the database is (DSN resolution) and who the operator is."""

from __future__ import annotations

import getpass
import os
import re
import socket
from datetime import timedelta
from pathlib import Path

from awa_tui.engine.errors import AwaError

# The console's --refresh: faster only loads the database; slower is not a live view.
REFRESH_MIN_S = 0.1
REFRESH_MAX_S = 600.0

PG_ENV = ("PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE")


def read_dsn_file(path: str, option: str = "--dsn-file") -> str:
    """The DSN kept in a file (--dsn-file): its text, stripped. Errors name the path, never
    the content."""
    shown = repr(path)  # repr: a control byte in the path cannot reach the terminal
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AwaError(f"{option} {shown}: no such file") from None
    except PermissionError:
        raise AwaError(f"{option} {shown}: not readable (permission denied)") from None
    except IsADirectoryError:
        raise AwaError(f"{option} {shown}: is a directory, not a file") from None
    except UnicodeDecodeError:
        raise AwaError(f"{option} {shown}: not UTF-8 text") from None
    except OSError as exc:
        raise AwaError(f"{option} {shown}: cannot be read ({exc.strerror})") from None
    dsn = text.strip()
    if not dsn:
        raise AwaError(f"{option} {shown}: the file is empty")
    return dsn


def resolve_dsn(flag: str | None = None, dsn_file: str | None = None) -> str | None:
    """--dsn > --dsn-file > AWA_DATABASE_URL > DATABASE_URL > libpq PG* variables;
    None = not configured."""
    if dsn_file is not None:
        if flag is not None:
            raise AwaError("--dsn and --dsn-file: pass one of them, not both")
        return read_dsn_file(dsn_file)
    for value in (flag, os.environ.get("AWA_DATABASE_URL"), os.environ.get("DATABASE_URL")):
        if value:
            return value
    if any(os.environ.get(name) for name in PG_ENV):
        return ""  # an empty conninfo lets libpq read the PG* variables itself
    return None


LEADER_DSN_ENV = "AWA_LEADER_DATABASE_URL"


def resolve_leader_dsn(flag: str | None = None, dsn_file: str | None = None) -> str | None:
    """The leader connection's own DSN (S57): --leader-dsn > --leader-dsn-file >
    AWA_LEADER_DATABASE_URL; None = the leader connects like everything else."""
    if dsn_file is not None:
        if flag is not None:
            raise AwaError("--leader-dsn and --leader-dsn-file: pass one of them, not both")
        return read_dsn_file(dsn_file, option="--leader-dsn-file")
    return flag or os.environ.get(LEADER_DSN_ENV) or None


def default_operator() -> str:
    """`$SUDO_USER` or `$USER` (else the login name) @ host: who did an operator action."""
    user = os.environ.get("SUDO_USER") or os.environ.get("USER")
    if not user:
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = "unknown"
    return f"{user}@{socket.gethostname()}"


_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)", re.ASCII)
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(option: str, text: str) -> timedelta:
    """A duration option: `30s`, `10m`, `2h`, `1d`, or plain seconds (`90`, `1.5`)."""
    match = _DURATION.fullmatch(text.strip().lower())
    if match is None:
        # repr: the value came from argv and may hold control bytes.
        raise AwaError(f"{option}: expected a duration such as 30s, 10m, 2h or a number of seconds, got {text!r}")
    try:
        return timedelta(seconds=float(match.group(1)) * _UNIT_SECONDS[match.group(2)])
    except OverflowError:
        raise AwaError(f"{option}: duration too large, got {text!r}") from None
