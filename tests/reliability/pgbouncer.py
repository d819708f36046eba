"""Debian's real PgBouncer in front of the test server, in one pooling mode.

PgBouncer refuses to run as root: as root it is started with `-u` as the account the
embedded test server runs as (`postgres`, else `nobody`), which may also use that
server's Unix socket; it reads its configuration before it drops to that account. It
listens on a free 127.0.0.1 port, lets any client in (`auth_type = any`) and logs in to
the server as the role of the test DSN. `SHOW CLIENTS` on its admin console says which
client connections went through it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from helpers import wait_for
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row

from .harness import free_port

MODES = ("session", "transaction", "statement")


def executable() -> str:
    """The pgbouncer binary (Debian installs it in /usr/sbin, often not on a user's PATH)."""
    found = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin:/usr/local/sbin")
    if found is None:
        raise AssertionError("pgbouncer is not installed: `make test-tools` installs it (apt-get install -y pgbouncer)")
    return found


def run_as() -> str | None:
    """The account to drop to when we are root (PgBouncer will not run as root)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name).pw_name
        except KeyError:
            continue
    raise AssertionError("running as root without a 'postgres' or 'nobody' account for pgbouncer")


@dataclass
class PgBouncer:
    mode: str
    port: int
    user: str
    proc: subprocess.Popen[bytes]
    log_path: Path

    def dsn(self, dbname: str) -> str:
        return f"host=127.0.0.1 port={self.port} dbname={dbname} user={self.user} connect_timeout=5"

    def clients(self) -> list[str]:
        """The application_name of every client connected to the pooler now."""
        with psycopg.connect(self.dsn("pgbouncer"), autocommit=True, row_factory=dict_row,
                             prepare_threshold=None) as admin:
            rows: list[dict[str, Any]] = admin.execute("SHOW CLIENTS").fetchall()  # type: ignore[assignment]
        return [str(r.get("application_name") or "") for r in rows]

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def _config(upstream: dict[str, Any], mode: str, port: int, pool_size: int) -> str:
    host = upstream.get("host") or "/tmp"
    target = f"host={host} port={upstream.get('port') or 5432} user={upstream.get('user') or 'postgres'}"
    if upstream.get("password"):
        target += f" password={upstream['password']}"
    return (
        f"[databases]\n* = {target}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = any\nadmin_users = {upstream.get('user') or 'postgres'}\n"
        f"pool_mode = {mode}\ndefault_pool_size = {pool_size}\nmax_client_conn = 500\n"
        "logfile =\npidfile =\n"
    )


def _start(upstream: dict[str, Any], mode: str, workdir: Path, pool_size: int) -> PgBouncer:
    port = free_port()
    ini = workdir / f"pgbouncer-{mode}.ini"
    ini.write_text(_config(upstream, mode, port, pool_size))
    ini.chmod(0o600)
    log_path = workdir / f"pgbouncer-{mode}.log"
    user = run_as()
    argv = [executable(), *(["-u", user] if user else []), str(ini)]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    return PgBouncer(mode, port, str(upstream.get("user") or "postgres"), proc, log_path)


def _ready(bouncer: PgBouncer) -> bool | None:
    """True once it answers; None when it exited (its port taken meanwhile); else False."""
    if bouncer.proc.poll() is not None:
        if "Address already in use" in bouncer.log():
            return None
        raise AssertionError(f"pgbouncer exited ({bouncer.proc.returncode}):\n{bouncer.log()}")
    try:
        bouncer.clients()
    except psycopg.OperationalError:
        return False
    return True


@contextmanager
def pgbouncer(upstream_dsn: str, mode: str, workdir: Path, *, pool_size: int = 10) -> Iterator[PgBouncer]:
    """A PgBouncer in `mode` in front of the server of `upstream_dsn`, stopped at the end."""
    assert mode in MODES, mode
    upstream = conninfo_to_dict(upstream_dsn)
    workdir.mkdir(parents=True, exist_ok=True)
    bouncer = _start(upstream, mode, workdir, pool_size)
    try:
        for _ in range(3):  # another process may take the free port before pgbouncer binds it
            wait_for(lambda b=bouncer: _ready(b) is not False, 15,  # type: ignore[misc]
                     what=f"pgbouncer ({mode} mode) accepting connections")
            if _ready(bouncer):
                break
            bouncer = _start(upstream, mode, workdir, pool_size)
        assert _ready(bouncer), f"pgbouncer never started:\n{bouncer.log()}"
        yield bouncer
    finally:
        bouncer.proc.terminate()
        try:
            bouncer.proc.wait(10)
        except subprocess.TimeoutExpired:
            bouncer.proc.kill()
            bouncer.proc.wait(10)
