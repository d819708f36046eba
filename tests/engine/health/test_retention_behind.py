"""`check` warns when the leader's retention runs but its walk over the finished jobs has not
reached the end in an hour (the jobs table grows until it does); not when it has, nor when
retention has stopped running (a choice, or a leader problem reported on its own)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg

from awa_tui.engine.health.check import check
from awa_tui.engine.ledger.retention import RetentionCursor, prune_jobs

M = timedelta(minutes=1)


def _finished(conn: psycopg.Connection[Any], name: str, at: datetime) -> None:
    conn.execute("INSERT INTO awa.jobs (kind, queue, state, attempt, created_at, finalized_at, metadata) "
                 "VALUES ('test.job', 'default', 'completed', 1, %s, %s, jsonb_build_object('cron_name', %s::text))",
                 (at, at, name))


def _behind(conn: psycopg.Connection[Any], now: datetime) -> list[tuple[str, bool]]:
    return [(p.message, p.warning) for p in check(conn, now=now).fleet if p.code == "retention_behind"]


def test_a_walk_longer_than_an_hour_while_rounds_run_is_a_warning(conn: psycopg.Connection[Any], client: Any) -> None:
    client.migrate()
    t0 = datetime.fromisoformat("2026-12-06T12:00:00+00:00")
    base = t0 - timedelta(days=30)
    for k in range(120):  # kept jobs (keep=1), one per schedule: the walk takes rounds
        _finished(conn, f"daily-{k:03}", base + k * M)
    cursor = RetentionCursor()

    def round_(at: datetime) -> None:
        prune_jobs(conn, timedelta(days=14), keep=1, now=at, batch=50, max_batches=1, cursor=cursor)

    round_(t0)
    assert _behind(conn, t0 + timedelta(minutes=59)) == []  # under an hour: nothing to say
    round_(t0 + timedelta(minutes=61))  # still walking (100 of 120 seen)
    assert _behind(conn, t0 + timedelta(minutes=61, seconds=5)) == [(
        "retention has not been through the finished jobs since 2026-12-06T12:00:00+00:00 (1h01m); it has reached "
        "jobs finished 2026-11-06T13:39:00+00:00, the horizon is 2026-11-22T13:01:00+00:00: the jobs table grows "
        "until it is", True)]
    # Rounds stopped 11 minutes ago (retention off, or no leader): not this warning's to say.
    assert _behind(conn, t0 + timedelta(minutes=72, seconds=1)) == []
    round_(t0 + timedelta(minutes=73))  # the walk reaches the end: a new lap, nothing behind
    assert _behind(conn, t0 + timedelta(minutes=73, seconds=5)) == []
