"""The embedded Postgres is reachable only by the OS user who started it and the server's own
account: another local user is refused over the socket and over TCP, and a home made the
old way (trust, world-readable directories) is locked down in place with its data kept.

The intruder is a real throwaway OS user running the wheel's own psql; these tests run as
root (like the rest of the suite) because creating that user needs it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from awa_tui import embedded

PSQL = embedded._wheel_install_dir() / "bin" / "psql"
SERVER_ACCOUNT = "postgres"  # what the server runs as under root here (see embedded._run_user)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def as_os_user(user: pwd.struct_passwd, dsn: str) -> subprocess.CompletedProcess[str]:
    """`SELECT current_user` through psql, run as `user`, never prompting for a password."""
    return subprocess.run(
        [str(PSQL), "-X", "-w", "-At", "-d", dsn, "-c", "SELECT current_user"],
        capture_output=True, text=True, timeout=30, cwd="/", env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
        user=user.pw_uid, group=user.pw_gid, extra_groups=[],
    )


@pytest.fixture
def intruder() -> Iterator[pwd.struct_passwd]:
    """Another local user on the same machine, removed afterwards."""
    assert os.geteuid() == 0, "creating a throwaway OS user needs root"
    name = f"awa-x-{uuid.uuid4().hex[:10]}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=True)


@pytest.fixture
def home() -> Iterator[Path]:
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None  # short socket paths
    path = Path(tempfile.mkdtemp(prefix="awa-sec-", dir=base))
    try:
        yield path
    finally:
        embedded.stop(path)
        shutil.rmtree(path, ignore_errors=True)


def socket_dsn(server: embedded.EmbeddedServer, dbname: str = "postgres") -> str:
    return f"host={server.socket_dir} port={server.port} user=postgres dbname={dbname}"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_another_os_user_is_refused_over_the_socket_and_over_tcp(home: Path, intruder: pwd.struct_passwd) -> None:
    server = embedded.ensure_running(home, port=free_port(), tcp=True, dbname="postgres")

    over_socket = as_os_user(intruder, socket_dsn(server))
    assert (over_socket.returncode, over_socket.stdout) == (2, "")
    assert f'connection to server on socket "{server.socket_dir}/.s.PGSQL.{server.port}" failed: ' \
           "Permission denied" in over_socket.stderr

    # The very DSN a runtime is given (it shows in `ps`): it names the password file, which
    # the intruder cannot read, so there is no password to offer.
    over_tcp = as_os_user(intruder, server.dsn("postgres"))
    assert (over_tcp.returncode, over_tcp.stdout) == (2, "")
    assert "fe_sendauth: no password supplied" in over_tcp.stderr

    # Even with the directories and the socket opened up, peer authentication refuses.
    os.chmod(home, 0o755)
    os.chmod(server.socket_dir, 0o755)
    os.chmod(server.socket_dir / f".s.PGSQL.{server.port}", 0o777)
    reached = as_os_user(intruder, socket_dsn(server))
    assert (reached.returncode, reached.stdout) == (2, "")
    assert 'Peer authentication failed for user "postgres"' in reached.stderr

    # The next start closes them again.
    embedded.ensure_running(home, port=server.port, tcp=True, dbname="postgres")
    assert (mode(home), mode(server.socket_dir)) == (0o710, 0o700)
    assert "Permission denied" in as_os_user(intruder, socket_dsn(server)).stderr


def test_the_starting_user_and_the_server_account_still_connect(home: Path) -> None:
    server = embedded.ensure_running(home, port=free_port(), tcp=True, dbname="awa_sec")

    # The starting user (root here): over the socket by peer, over TCP with the passfile.
    for dsn in (socket_dsn(server, "awa_sec"), server.dsn("awa_sec")):
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT current_user, current_database()").fetchone() == ("postgres", "awa_sec")
    assert "password" not in server.dsn().replace("passfile=", "")
    assert server.dsn() == (f"host=127.0.0.1 port={server.port} user=postgres dbname=awa "
                            f"passfile={home / 'pgpass'}")

    # The server's own account, over the socket.
    account = as_os_user(pwd.getpwnam(SERVER_ACCOUNT), socket_dsn(server))
    assert (account.returncode, account.stdout, account.stderr) == (0, "postgres\n", "")

    # What makes it private: the modes and owners of everything in the home.
    server_user = pwd.getpwnam(SERVER_ACCOUNT)
    home_stat = home.stat()
    assert (home_stat.st_uid, home_stat.st_gid, mode(home)) == (0, server_user.pw_gid, 0o710)
    socket_file = server.socket_dir / f".s.PGSQL.{server.port}"
    assert (server.socket_dir.stat().st_uid, mode(server.socket_dir), mode(socket_file)) == (
        server_user.pw_uid, 0o700, 0o700)
    assert (mode(home / "pgpass"), (home / "pgpass").stat().st_uid) == (0o600, 0)
    assert (mode(home / "postgres.log"), mode(home / ".lock")) == (0o600, 0o600)
    assert (server.data_dir / "pg_ident.conf").read_text().splitlines()[1:] == [
        'awa "root" postgres', f'awa "{SERVER_ACCOUNT}" postgres']
    assert "trust" not in (server.data_dir / "pg_hba.conf").read_text()


def _old_style_home(home: Path, port: int) -> None:
    """A home as the previous version left it: trust authentication, a 0755 home, a
    world-writable socket in a 0755 directory, listening on TCP too; running."""
    user = pwd.getpwnam(SERVER_ACCOUNT)
    ids = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
    os.chmod(home, 0o755)
    bindir = embedded._bindir_for(home, user)
    data, run = home / "data", home / "run"
    data.mkdir(mode=0o700)
    run.mkdir(mode=0o755)
    for path in (data, run):
        os.chown(path, user.pw_uid, user.pw_gid)
    subprocess.run([str(bindir / "initdb"), "--no-sync", "-U", "postgres", "--auth=trust", "-E", "UTF8",
                    "--locale=C", "-D", str(data)], check=True, capture_output=True, **ids)  # type: ignore[arg-type]
    log = home / "postgres.log"
    log.touch()
    os.chown(log, user.pw_uid, user.pw_gid)
    subprocess.run([str(bindir / "pg_ctl"), "-w", "-D", str(data), "-l", str(log), "-o",
                    f"-k {run} -p {port} -c listen_addresses=127.0.0.1", "start"],
                   check=True, capture_output=True, stdin=subprocess.DEVNULL, start_new_session=True,
                   **ids)  # type: ignore[arg-type]


def test_a_home_made_the_old_way_is_locked_down_in_place(home: Path, intruder: pwd.struct_passwd) -> None:
    port = free_port()
    _old_style_home(home, port)
    old = embedded.EmbeddedServer(home=home, bindir=Path(), port=port, tcp=True)
    with psycopg.connect(socket_dsn(old), autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (v text)")
        conn.execute("INSERT INTO kept VALUES ('before the upgrade')")
    # The hole this closes: another user connects as superuser, by socket and by TCP.
    assert as_os_user(intruder, socket_dsn(old)).stdout == "postgres\n"
    assert as_os_user(intruder, f"host=127.0.0.1 port={port} user=postgres dbname=postgres").stdout == "postgres\n"
    postmaster = (home / "data" / "postmaster.pid").read_text().splitlines()[0]

    server = embedded.ensure_running(home, port=port, tcp=True, dbname="postgres")

    # Reloaded, not restarted: the same postmaster, the data untouched.
    assert (home / "data" / "postmaster.pid").read_text().splitlines()[0] == postmaster
    with psycopg.connect(server.dsn("postgres")) as conn:
        assert conn.execute("SELECT v FROM kept").fetchall() == [("before the upgrade",)]
    over_socket = as_os_user(intruder, socket_dsn(server))
    assert (over_socket.returncode, over_socket.stdout) == (2, "")
    assert "Permission denied" in over_socket.stderr
    over_tcp = as_os_user(intruder, f"host=127.0.0.1 port={port} user=postgres dbname=postgres")
    assert (over_tcp.returncode, over_tcp.stdout) == (2, "")
    assert "fe_sendauth: no password supplied" in over_tcp.stderr
    assert (mode(home), mode(home / "run"), mode(home / "postgres.log")) == (0o710, 0o700, 0o600)

    # And after a restart under the new rules, still everything there and still private.
    assert embedded.stop(home)
    server = embedded.ensure_running(home, port=port, tcp=True, dbname="postgres")
    with psycopg.connect(socket_dsn(server)) as conn:
        assert conn.execute("SELECT v FROM kept").fetchall() == [("before the upgrade",)]
    assert mode(server.socket_dir / f".s.PGSQL.{port}") == 0o700
    assert as_os_user(intruder, socket_dsn(server)).returncode == 2


def test_a_server_run_as_nobody_gives_other_nobody_processes_no_superuser(
    monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    """As root on a host without a `postgres` account the server runs as `nobody`, which
    other daemons share: reaching its socket (the directory is the server account's), a
    `nobody` process must not get role postgres by peer authentication."""
    nobody = pwd.getpwnam("nobody")
    # This host has a postgres account; `monkeypatch` comes first so the home is stopped as nobody.
    monkeypatch.setattr(embedded, "_run_user", lambda: nobody)
    server = embedded.ensure_running(home, port=free_port(), dbname="postgres")
    assert server.socket_dir.stat().st_uid == nobody.pw_uid  # the fault's premise: nobody reaches it
    reached = as_os_user(nobody, socket_dsn(server))
    assert (reached.returncode, reached.stdout) == (2, "")
    assert 'Peer authentication failed for user "postgres"' in reached.stderr
    assert (server.data_dir / "pg_ident.conf").read_text().splitlines()[1:] == ['awa "root" postgres']
    with psycopg.connect(socket_dsn(server)) as conn:  # the starting user still does
        assert conn.execute("SELECT current_user").fetchone() == ("postgres",)
