"""Shared by the security tests: the real `awa-tui` executable, and DSNs whose password has
every awkward shape an operator may paste."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_SCRIPT = Path(sys.executable).with_name("awa-tui")
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "awa_tui"]
_DB_VARIABLES = ("AWA_DATABASE_URL", "DATABASE_URL", "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE",
                 "PGUSER", "PGSERVICE", "PGPASSWORD", "PGPASSFILE")

# The two halves of every password: neither may ever be shown, whatever the separator.
BEFORE, AFTER = "Aq9pre", "Zk7post"

PARSE = "error: the database URL could not be parsed: "
PERCENT = PARSE + "an invalid percent-encoded token (% must be followed by two hex digits)"
SPACES = PARSE + "unexpected spaces (percent-encode them as %20)"
RAW_SEPARATOR = PARSE + "a '/' or '@' in the user name or password must be percent-encoded (%2F, %40)"


def free_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Shape:
    id: str
    template: str  # {port} is filled in; the password is BEFORE <something> AFTER
    parse_error: str | None  # the exact one-line error, or None: it parses (and cannot connect)

    def dsn(self, port: int) -> str:
        return self.template.format(port=port, before=BEFORE, after=AFTER)


URL = "postgresql://app:{before}%s{after}@127.0.0.1:{port}/db"
SHAPES = [
    Shape("percent-zz", URL % "%zz", PERCENT),
    Shape("space", URL % " ", SPACES),
    Shape("slash", URL % "/", RAW_SEPARATOR),
    Shape("at", URL % "@", RAW_SEPARATOR),
    Shape("colon", URL % ":", None),
    Shape("question", URL % "?", None),
    Shape("hash", URL % "#", None),
    Shape("quotes", URL % "'\"", None),
    Shape("unicode", URL % "é✓€", None),
    Shape("very-long", URL % ("x" * 5000), None),
    Shape("query-param", "postgresql://app@127.0.0.1:{port}/db?password={before}%zz{after}", PERCENT),
    Shape("keyword-value", "host=127.0.0.1 port={port} user=app dbname=db password='{before} \\' = {after}'", None),
]
SHAPE_IDS = [s.id for s in SHAPES]


def cannot_connect(port: int) -> str:
    """The one-line error for a DSN that parses, against a closed port."""
    return (f'error: cannot connect to app@127.0.0.1:{port}/db: connection failed: connection to server at '
            f'"127.0.0.1", port {port} failed: Connection refused')


def assert_no_secret(text: str) -> None:
    assert BEFORE not in text and AFTER not in text, text


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DB_VARIABLES}
    env["COLUMNS"] = "200"
    env.update(extra)
    return env


def awa(*args: str, env: dict[str, str] | None = None, cwd: str | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, env=env or cli_env(),
                          timeout=timeout, stdin=subprocess.DEVNULL, cwd=cwd)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The single `error: ...` line of a failed command (and nothing else anywhere)."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]
