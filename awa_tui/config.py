"""Where the database is (DSN resolution) and who the operator is."""

from __future__ import annotations

import getpass
import os
import re
import shlex
import socket
import stat
from datetime import timedelta

from awa_tui.engine.core.errors import AwaError

# The console's --refresh: faster only loads the database; slower is not a live view.
REFRESH_MIN_S = 0.1
REFRESH_MAX_S = 600.0

PG_ENV = ("PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE")


DSN_FILE_MAX_BYTES = 64 * 1024  # a URL, with room for a long multi-host one


def read_dsn_file(path: str, option: str = "--dsn-file") -> str:
    """The DSN kept in a file (--dsn-file): its one line, stripped. Errors name the path,
    never the content. A file every user of the host may read is refused (the password
    in it is then no secret), and so is one that is not a regular file (a FIFO would
    hang, a device never end) or holds more than one line."""
    shown = repr(path)  # repr: a control byte in the path cannot reach the terminal
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise AwaError(f"{option} {shown}: no such file") from None
    except PermissionError:
        raise AwaError(f"{option} {shown}: not readable (permission denied)") from None
    except OSError as exc:
        raise AwaError(f"{option} {shown}: cannot be read ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise AwaError(f"{option} {shown}: is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise AwaError(f"{option} {shown}: not a regular file")
        if info.st_mode & stat.S_IROTH:
            raise AwaError(f"{option} {shown}: readable by every user of this host; "
                           f"make it private first (chmod o-r {shlex.quote(path)})")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            raw = handle.read(DSN_FILE_MAX_BYTES + 1)
    except OSError as exc:
        raise AwaError(f"{option} {shown}: cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)
    if len(raw) > DSN_FILE_MAX_BYTES:
        raise AwaError(f"{option} {shown}: larger than {DSN_FILE_MAX_BYTES // 1024} KiB; it must hold one URL")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise AwaError(f"{option} {shown}: not UTF-8 text") from None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise AwaError(f"{option} {shown}: the file is empty")
    if len(lines) > 1:
        raise AwaError(f"{option} {shown}: {len(lines)} lines; it must hold the database URL alone, on one line")
    return lines[0]


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
