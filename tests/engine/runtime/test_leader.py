"""S7/S8 leadership and S11 crash safety with real runtimes, connections and processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
from engine_helpers import fire_times, force
from helpers import wait_for
from leader_app import CATCH_UP_SCHEDULES, setup

from awa_tui import Client
from awa_tui.engine.core.db import LEADER_LOCK_KEY
from awa_tui.engine.firing.evaluator import PassResult

HERE = Path(__file__).resolve().parent
LOCK_WHERE = (
    "locktype = 'advisory' AND granted AND classid = %s AND objid = %s AND objsubid = 1"
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)
LOCK_PARAMS = (LEADER_LOCK_KEY >> 32, LEADER_LOCK_KEY & 0xFFFFFFFF)


def _lock_holder(conn: psycopg.Connection[Any]) -> str | None:
    row = conn.execute(
        f"SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE {LOCK_WHERE}",
        LOCK_PARAMS,
    ).fetchone()
    return row["application_name"] if row else None


def _runtime(dsn: str, label: str) -> tuple[Client, list[PassResult]]:
    client = Client(dsn, operator=f"{label}@test", application_name=f"awa-tui {label}")
    client.periodic("tick", "* * * * * *", "test.tick")
    passes: list[PassResult] = []
    client.runtime.on_pass.append(passes.append)
    return client, passes


def test_terminated_leader_connection_stops_evaluating_and_a_follower_takes_over(
    dsn: str, conn: psycopg.Connection[Any]
) -> None:
    first, first_passes = _runtime(dsn, "first")
    second, second_passes = _runtime(dsn, "second")
    try:
        first.start(run_worker=False)
        wait_for(lambda: first.is_leader and first_passes, timeout=5, what="the first runtime to lead")
        second.start(run_worker=False)
        assert _lock_holder(conn) == "awa-tui first leader"
        assert second.is_leader is False and second_passes == []

        row = conn.execute(
            "SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity "
            "WHERE application_name = 'awa-tui first leader'"
        ).fetchone()
        assert row == {"killed": True}
        killed_at = time.monotonic()
        wait_for(lambda: second.is_leader and not first.is_leader, timeout=2.0, what="the follower to take over")
        assert time.monotonic() - killed_at < 2.0
        assert _lock_holder(conn) == "awa-tui second leader"

        stopped_at = len(first_passes)
        wait_for(lambda: len(second_passes) >= 2, timeout=5, what="two passes by the new leader")
        assert len(first_passes) == stopped_at  # the deposed leader evaluates no more
        assert first.is_leader is False
    finally:
        first.close()
        second.close()
    per_fire = Counter(fire_times(conn, "tick"))
    assert per_fire and set(per_fire.values()) == {1}


def test_only_one_of_several_runtimes_leads(dsn: str, conn: psycopg.Connection[Any]) -> None:
    runtimes = [_runtime(dsn, f"r{i}") for i in range(3)]
    try:
        for client, _ in runtimes:
            client.start(run_worker=False)
        wait_for(lambda: sum(c.is_leader for c, _ in runtimes) == 1, timeout=5, what="one leader")
        leader = next(c for c, _ in runtimes if c.is_leader)
        wait_for(lambda: leader.runtime.last_pass is not None, timeout=5, what="a pass")
        assert [c.is_leader for c, _ in runtimes].count(True) == 1
        assert all(passes == [] for c, passes in runtimes if c is not leader)
        leader.close()  # a clean stop releases the lock at once
        wait_for(lambda: sum(c.is_leader for c, _ in runtimes if c is not leader) == 1, timeout=2, what="a new leader")
    finally:
        for client, _ in runtimes:
            client.close()
    assert _lock_holder(conn) is None


def _fire_batch_in_flight(conn: psycopg.Connection[Any]) -> bool:
    """Whether the `awa-tui run` subprocess is executing a fire batch right now."""
    row = conn.execute(
        "SELECT count(*) AS n FROM pg_stat_activity "
        "WHERE state = 'active' AND application_name = 'awa-tui run' AND query LIKE %s",
        # The statement's first line names it (pg_stat_activity keeps only 1024 bytes).
        ("%-- awa fire batch%",),
    ).fetchone()
    return bool(row and row["n"])


def test_kill_9_of_a_leader_mid_catch_up_loses_and_doubles_nothing(dsn: str, conn: psycopg.Connection[Any]) -> None:
    """A leader process killed while its catch-up batch is in flight: a follower takes over
    within 2 s and finishes the catch-up; every fire is in awa.jobs exactly once."""
    registrar = Client(dsn)
    setup(registrar)
    registrar.sync()
    registrar.close()
    force(conn, "UPDATE awa.cron_jobs SET last_enqueued_at = date_trunc('second', now()) - interval '2500 seconds'")
    start = conn.execute("SELECT min(last_enqueued_at) AS t FROM awa.cron_jobs").fetchone()["t"]
    env = {**os.environ, "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    leader = subprocess.Popen(
        [sys.executable, "-m", "awa_tui", "run", "--app", "leader_app:setup", "--dsn", dsn],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    follower = Client(dsn, application_name="awa-tui follower")
    setup(follower)
    try:
        wait_for(lambda: _lock_holder(conn) == "awa-tui run leader", timeout=15, what="the subprocess to lead")
        follower.start(run_worker=False)
        wait_for(lambda: _fire_batch_in_flight(conn), timeout=15, interval=0.005,
                 what="the leader's catch-up batch to be in flight")
        os.kill(leader.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        assert leader.wait(10) == -signal.SIGKILL
        wait_for(lambda: follower.is_leader, timeout=2.0, what="the follower to take over")
        assert time.monotonic() - killed_at < 2.0  # S7: within 2 s of Postgres noticing (at once here)
        wait_for(lambda: follower.runtime.last_pass is not None
                 and follower.runtime.last_pass.fired <= len(CATCH_UP_SCHEDULES)
                 and follower.runtime.last_pass.lost_races == 0, timeout=30, what="the catch-up to finish")
    finally:
        if leader.poll() is None:
            leader.kill()
            leader.wait(10)
        follower.close()

    rows = conn.execute("SELECT name, last_enqueued_at FROM awa.cron_jobs ORDER BY name").fetchall()
    assert [r["name"] for r in rows] == CATCH_UP_SCHEDULES
    for row in rows:
        seconds = int((row["last_enqueued_at"] - start).total_seconds())
        assert seconds >= 2500
        expected = [(start + timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ") for s in range(1, seconds + 1)]
        assert fire_times(conn, row["name"]) == expected, row["name"]


def test_the_snapshot_shows_leadership_at_once_not_after_a_snapshot_interval(dsn, conn):
    runtime = Client(dsn, operator="tester@test", snapshot_interval=timedelta(seconds=60))
    runtime.start()
    try:
        wait_for(lambda: runtime.is_leader, timeout=5, what="election")
        # The interval is 60 s: only the leadership change itself can write this row now.
        wait_for(
            lambda: conn.execute(
                "SELECT is_leader FROM awa.runtime_instances WHERE instance_id = %s", (runtime.identity.instance_id,)
            ).fetchone()["is_leader"],
            timeout=3,
            what="is_leader in the snapshot row",
        )
    finally:
        runtime.close()


def test_close_from_two_threads_at_once_releases_once_and_both_return(dsn, conn):
    """The console closes its engine from a signal handler and from its `finally` together."""
    import threading

    runtime = Client(dsn, operator="tester@test")
    runtime.start()
    wait_for(lambda: runtime.is_leader, timeout=5, what="election")
    closers = [threading.Thread(target=runtime.close) for _ in range(2)]
    for closer in closers:
        closer.start()
    for closer in closers:
        closer.join(15)
    assert not any(c.is_alive() for c in closers)
    assert _lock_holder(conn) is None
    row = conn.execute("SELECT health, stopped_at FROM awa.runtime_instances").fetchone()
    assert row["health"] == "stopped" and row["stopped_at"] is not None
