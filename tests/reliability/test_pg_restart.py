"""Postgres restarts under running runtimes (S7, S8, S11, S13): a dedicated embedded server
over TCP is stopped (fast shutdown, or immediate: a crash with recovery) and started
again; the runtimes reconnect with backoff, one leader resumes, catch_up schedules
replay every fire they missed and nothing is doubled."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import tempfile
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_for

from awa_tui import embedded
from awa_tui.engine.migrations import migrate
from awa_tui.engine.runtime import leader
from awa_tui.engine.runtime.loops import MAX_BACKOFF_S

from .harness import (
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
    settle,
)

# Real processes for tens of seconds: `-m "not slow"` leaves them out of a quick local run.
pytestmark = pytest.mark.slow

SERVER_FLAGS = ("-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off")
SCHEDULES = 50
DBNAME = "awa_rel"
# After the server is back: the election retry, one evaluator tick, and at most the
# longest backoff of a loop that failed during the outage.
RECOVERY_BOUND_S = 2.0 + MAX_BACKOFF_S


@pytest.fixture
def tcp_server() -> Iterator[embedded.EmbeddedServer]:
    """A server of our own (it gets restarted), listening on 127.0.0.1."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    home = Path(tempfile.mkdtemp(prefix="awa-rel-pg-", dir=base))
    try:
        yield embedded.ensure_running(home, port=free_port(), tcp=True, server_flags=SERVER_FLAGS, dbname=DBNAME)
    finally:
        embedded.stop(home)
        shutil.rmtree(home, ignore_errors=True)


def stop_server(server: embedded.EmbeddedServer, mode: str) -> None:
    if mode == "fast":
        assert embedded.stop(server.home)
        return
    # Immediate shutdown (SIGQUIT): no checkpoint, crash recovery at the next start.
    pid_file = server.data_dir / "postmaster.pid"
    os.kill(int(pid_file.read_text().split()[0]), 3)
    wait_for(lambda: not pid_file.exists(), 30, what="the postmaster to exit")


def start_server(server: embedded.EmbeddedServer) -> None:
    embedded.ensure_running(server.home, port=server.port, tcp=True, server_flags=SERVER_FLAGS, dbname=DBNAME)


async def test_postgres_restart(
    tcp_server: embedded.EmbeddedServer, log_dir: Path, scale: int, summary: Summary
) -> None:
    """Runtimes and a console (headless, the same App) across each restart. Blocking steps
    run in threads so the console keeps rendering meanwhile."""
    from .console import make_console, until

    restarts = 2 * scale  # alternately a fast shutdown and a crash
    dsn = tcp_server.dsn(DBNAME)
    migrate(dsn)
    started = time.monotonic()
    conn = connect(dsn)
    install_job_origin(conn)
    _leader_session_keeps_alive(dsn)
    recoveries: list[float] = []
    console_stale: list[float] = []  # server down -> console says STALE
    with fleet(dsn, log_dir, count=SCHEDULES) as f:
        f.spawn()
        f.spawn()
        await asyncio.to_thread(settle, conn, f.names)
        # Both runtimes past start-up (a snapshot each) before the first outage: one still
        # starting when the server goes down exits by design (no database at start-up).
        await asyncio.to_thread(wait_for, lambda: conn.execute(
            "SELECT count(*) AS n FROM awa.runtime_instances WHERE stopped_at IS NULL").fetchone()["n"] == 2,
            60, what="both runtimes running")
        app = make_console(dsn)
        try:
            async with app.run_test(size=(120, 36)) as pilot:
                await until(pilot, lambda: app.apply_times and not app.freshness.stale, 30, what="the console")
                for n in range(restarts):
                    down = db_now(conn)
                    conn.close()
                    await asyncio.to_thread(stop_server, tcp_server, "fast" if n % 2 == 0 else "immediate")
                    stopped = time.monotonic()
                    await until(pilot, lambda: app.freshness.stale, 30, what="the console saying STALE")
                    console_stale.append(time.monotonic() - stopped)
                    await pilot.pause(max(0.0, random.uniform(2.0, 4.0) - console_stale[-1]))  # the outage
                    await asyncio.to_thread(start_server, tcp_server)
                    conn = connect(dsn)
                    back = db_now(conn)
                    first: Any = await asyncio.to_thread(
                        wait_for, lambda b=back, c=conn: first_fire_after(c, b), 30, what="fires after the restart")
                    recoveries.append((first - back).total_seconds())
                    assert current_leader(conn) is not None
                    assert all(p.alive() for p in f.live) and len(f.live) == 2
                    # Every fire of the outage is replayed (catch_up), once.
                    await asyncio.to_thread(
                        wait_for, lambda d=down, c=conn: caught_up(c, f.names, d + timedelta(seconds=5)), 60,
                        what="the replay")
                    await until(pilot, lambda: not app.freshness.stale, 60, what="the console fresh again")
                assert app.is_running
        finally:
            app.client.close()
        end = db_now(conn)
        await asyncio.to_thread(wait_for, lambda: caught_up(conn, f.names, end), 60, what="every schedule caught up")
        statuses = f.stop_all()
        problems = f.problems()
    check = check_fires(conn, f.names, f.expr, end)
    summary.runs = restarts
    summary.count(check)
    summary.max_failover_s = max(recoveries)
    summary.seconds = time.monotonic() - started
    summary.notes = (f"max failover = server back -> first fire; outages 2-4 s, fast and immediate shutdowns; "
                     f"console STALE after {max(console_stale):.1f}s at most, then fresh again")
    summary.extra = {"recoveries_s": recoveries, "console_stale_s": console_stale}
    assert check.ok, check.describe()
    assert max(recoveries) <= RECOVERY_BOUND_S, f"slow recovery: {recoveries}"
    assert set(statuses.values()) == {0}, f"unclean stop: {statuses}\n{f.logs()}"
    assert not problems, "\n".join(problems)


def _leader_session_keeps_alive(dsn: str) -> None:
    """Over TCP the lock session asks Postgres to drop it within ~10 s once its peer goes
    silent, which frees the lock for a follower (S7, S8)."""
    elector = leader.LeaderElector(dsn, application_name="rel-probe leader")
    try:
        elector.step()
        assert elector._conn is not None
        row = elector._conn.execute("SHOW tcp_keepalives_idle").fetchone()
        assert row is not None and row["tcp_keepalives_idle"] == "5"
    finally:
        elector.release()
