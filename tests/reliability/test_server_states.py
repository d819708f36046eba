"""A server that cannot take the leader's writes or sessions (S59): the database turned
read-only (a maintenance window, a failover to the wrong target) and max_connections
exhausted by other sessions. The runtime logs one clean line per failure (no stack
trace), gives leadership up, takes it back by itself when the server recovers, and the
catch-up after recovery is exact (catch_up: every missed fire once)."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_for

from awa_tui import embedded
from awa_tui.engine.migrations import migrate
from awa_tui.engine.runtime.loops import MAX_BACKOFF_S

from .harness import (
    Fleet,
    Summary,
    caught_up,
    check_fires,
    connect,
    current_leader,
    db_now,
    first_fire_after,
    fleet,
    free_port,
    install_job_origin,
    pause,
    settle,
    terminate_sessions,
)

pytestmark = pytest.mark.slow

SCHEDULES = 10
OUTAGE_S = 6.0
# After the server recovers: the election retry, one evaluator tick, the longest back-off.
RECOVERY_BOUND_S = 2.0 + MAX_BACKOFF_S


def _clean_lines(f: Fleet, needle: str) -> list[str]:
    """The runtime log lines that mention `needle`; there must be some, and no traceback."""
    lines = [x for p in f.procs for x in p.log().splitlines() if needle in x]
    assert lines, f"no log line mentions {needle!r}\n{f.logs()}"
    assert not f.problems(), "\n".join(f.problems())
    return lines


def _recover(conn: psycopg.Connection[Any], f: Fleet, back: datetime, summary: Summary, what: str) -> float:
    first: Any = wait_for(lambda: first_fire_after(conn, back), 30, what=f"fires after {what}")
    recovery = (first - back).total_seconds()
    end = db_now(conn)
    wait_for(lambda: caught_up(conn, f.names, end), 30, what="every schedule caught up")
    statuses = f.stop_all()
    check = check_fires(conn, f.names, f.expr, end)
    summary.runs = 1
    summary.count(check)
    summary.max_failover_s = recovery
    assert check.ok, check.describe()
    assert recovery <= RECOVERY_BOUND_S, recovery
    assert set(statuses.values()) == {0}, f.logs()
    assert not f.problems(), "\n".join(f.problems())
    return recovery


def test_a_read_only_database(dsn: str, log_dir: Path, summary: Summary) -> None:
    conn = connect(dsn)
    install_job_origin(conn)
    dbname = conn.info.dbname
    with fleet(dsn, log_dir, count=SCHEDULES) as f:
        runtime = f.spawn()
        settle(conn, f.names)
        conn.execute(f'ALTER DATABASE "{dbname}" SET default_transaction_read_only = on')
        # A failover to a read-only target: every session is new, and read-only.
        terminate_sessions(conn, runtime.app)
        down = db_now(conn)
        wait_for(lambda: current_leader(conn) is None, 10, what="leadership given up")
        probe = connect(dsn)
        assert probe.execute("SHOW default_transaction_read_only").fetchone() == {
            "default_transaction_read_only": "on"}  # the fault is in place for new sessions
        probe.close()
        pause(OUTAGE_S)
        # Nobody leads while it lasts (it keeps trying), and nothing fired.
        assert current_leader(conn) is None
        assert first_fire_after(conn, down) is None
        conn.execute(f'ALTER DATABASE "{dbname}" RESET default_transaction_read_only')
        back = db_now(conn)
        lines = _clean_lines(f, "read-only")
        recovery = _recover(conn, f, back, summary, "the database is writable again")
    summary.notes = (f"read-only {OUTAGE_S:.0f} s: {len(lines)} one-line errors, no leader meanwhile; "
                     f"first fire {recovery:.1f} s after it was writable again")


SERVER_FLAGS = ("-c fsync=off", "-c synchronous_commit=off", "-c max_connections=20",
                "-c superuser_reserved_connections=0")
DBNAME = "awa_rel"


@pytest.fixture
def small_server() -> Iterator[embedded.EmbeddedServer]:
    """A server of our own with 20 connection slots (exhausting the shared one would stop
    every other test)."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    home = Path(tempfile.mkdtemp(prefix="awa-rel-pg-", dir=base))
    try:
        yield embedded.ensure_running(home, port=free_port(), tcp=True, server_flags=SERVER_FLAGS, dbname=DBNAME)
    finally:
        embedded.stop(home)
        shutil.rmtree(home, ignore_errors=True)


def _fill(dsn: str) -> list[psycopg.Connection[Any]]:
    """Sessions in every free slot, until the server refuses one."""
    held: list[psycopg.Connection[Any]] = []
    while True:
        try:
            held.append(psycopg.connect(dsn, autocommit=True, connect_timeout=5))
        except psycopg.OperationalError as exc:
            assert "too many clients already" in str(exc), exc
            return held


def test_max_connections_exhausted(small_server: embedded.EmbeddedServer, log_dir: Path, summary: Summary) -> None:
    dsn = small_server.dsn(DBNAME)
    migrate(dsn)
    conn = connect(dsn)
    install_job_origin(conn)
    with fleet(dsn, log_dir, count=SCHEDULES) as f:
        runtime = f.spawn()
        settle(conn, f.names)
        # Frozen while its sessions are cut and every slot is taken, so the outage starts
        # with the runtime holding none (it cannot win a slot back in between).
        os.kill(runtime.pid, signal.SIGSTOP)
        try:
            terminate_sessions(conn, runtime.app)
            wait_for(lambda: conn.execute("SELECT count(*) AS n FROM pg_stat_activity WHERE application_name "
                                          "LIKE %s", (runtime.app + "%",)).fetchone()["n"] == 0, 10,
                     what="the runtime's sessions gone")
            held = _fill(dsn)
        finally:
            os.kill(runtime.pid, signal.SIGCONT)
        down = db_now(conn)
        try:
            wait_for(lambda: current_leader(conn) is None, 10, what="leadership given up")
            pause(OUTAGE_S)
            assert current_leader(conn) is None
            assert first_fire_after(conn, down) is None
            lines = _clean_lines(f, "too many clients already")
        finally:
            for c in held:
                c.close()
        back = db_now(conn)
        recovery = _recover(conn, f, back, summary, "the slots were freed")
    summary.notes = (f"max_connections 20, all taken {OUTAGE_S:.0f} s ({len(held)} other sessions): {len(lines)} "
                     f"one-line errors, no leader meanwhile; first fire {recovery:.1f} s after the release")
