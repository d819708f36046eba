"""Retention: finished jobs older than the horizon are pruned in batches, each schedule's
last N jobs are always kept, waiting and running jobs are never touched, and the ledger
says `unknown (pruned)` for instants whose jobs may be gone."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from ledger_helpers import db_now, force, lead

from awa_tui import Client
from awa_tui.engine.ledger.retention import prune_jobs

M = timedelta(minutes=1)


def _insert(conn: psycopg.Connection[Any], name: str | None, fire: datetime, state: str,
            finished: datetime | None) -> int:
    metadata = {} if name is None else {"cron_name": name, "cron_fire_time": fire.strftime("%Y-%m-%dT%H:%M:%SZ")}
    row = conn.execute(
        "INSERT INTO awa.jobs (kind, queue, state, attempt, created_at, attempted_at, finalized_at, metadata) "
        "VALUES ('test.job', 'default', %s, %s, %s, %s, %s, %s::jsonb) RETURNING id",
        (state, 0 if state == "available" else 1, fire, fire, finished, psycopg.types.json.Jsonb(metadata)),
    ).fetchone()
    assert row is not None
    return int(row["id"])


class World:
    """Schedule `a` (60 old finished jobs, one running, one waiting, one retryable, five
    recent), schedule `b` (10 old finished), one old job of no schedule."""

    def __init__(self, client: Client, conn: psycopg.Connection[Any]) -> None:
        self.now = db_now(conn)
        self.base = (self.now - timedelta(days=20)).replace(second=0, microsecond=0)
        for name in ("a", "b"):
            client.periodic(name, "* * * * *", "test.job")
        client.sync()
        force(conn, "UPDATE awa.cron_jobs SET created_at = %s", (self.base - timedelta(days=1),))
        self.a_old = [_insert(conn, "a", self.base + k * M, "completed", self.base + k * M + timedelta(seconds=1))
                      for k in range(60)]
        old = self.base + 61 * M  # old, but not finished: never pruned
        self.a_busy = [_insert(conn, "a", old, "running", None), _insert(conn, "a", old + M, "available", None),
                       _insert(conn, "a", old + 2 * M, "retryable", None)]
        recent = self.now - timedelta(days=1)
        self.a_recent = [_insert(conn, "a", recent + k * M, "completed", recent + k * M) for k in range(5)]
        self.b_old = [_insert(conn, "b", self.base + k * M, "discarded", self.base + k * M) for k in range(10)]
        self.orphan = _insert(conn, None, self.base, "cancelled", self.base)


def _ids(conn: psycopg.Connection[Any]) -> set[int]:
    return {r["id"] for r in conn.execute("SELECT id FROM awa.jobs").fetchall()}


@pytest.fixture
def world(client: Client, conn: psycopg.Connection[Any]) -> Iterator[World]:
    yield World(client, conn)


def test_prune_keeps_the_last_n_per_schedule_and_never_touches_waiting_or_running(
        conn: psycopg.Connection[Any], world: World) -> None:
    before = _ids(conn)
    # 50 kept of `a`: 5 recent + 3 busy + the 42 newest old ones; so its 18 oldest go.
    doomed = set(world.a_old[:18]) | {world.orphan}
    dry = prune_jobs(conn, timedelta(days=14), keep=50, now=world.now, dry_run=True, batch=7)
    assert (dry.deleted, dry.by_schedule, dry.done) == (19, {"a": 18}, True)
    assert _ids(conn) == before  # a dry run deletes nothing
    result = prune_jobs(conn, timedelta(days=14), keep=50, now=world.now, batch=7)
    assert (result.deleted, result.by_schedule, result.done) == (19, {"a": 18}, True)
    assert result.batches == 11  # 72 finished old jobs seen 7 at a time: 10 full batches and a short one
    assert _ids(conn) == before - doomed
    mark = conn.execute("SELECT pruned_through, pruned_jobs FROM awa.ledger_pruned WHERE cron_name = 'a'").fetchone()
    assert mark == {"pruned_through": world.base + 17 * M, "pruned_jobs": 18}
    # Again: nothing more to do.
    assert prune_jobs(conn, timedelta(days=14), keep=50, now=world.now).deleted == 0


def test_keep_zero_still_spares_waiting_and_running_jobs(conn: psycopg.Connection[Any], world: World) -> None:
    result = prune_jobs(conn, timedelta(days=14), keep=0, now=world.now)
    assert result.by_schedule == {"a": 60, "b": 10}
    assert _ids(conn) == set(world.a_busy) | set(world.a_recent)


def test_max_batches_bounds_one_round(conn: psycopg.Connection[Any], world: World) -> None:
    first = prune_jobs(conn, timedelta(days=14), keep=0, now=world.now, batch=10, max_batches=2)
    assert (first.deleted, first.batches, first.done) == (20, 2, False)
    rest = prune_jobs(conn, timedelta(days=14), keep=0, now=world.now, batch=10)
    assert (rest.deleted, rest.done) == (51, True)


def test_the_leader_prunes_during_housekeeping(dsn: str, conn: psycopg.Connection[Any], world: World) -> None:
    leader = Client(dsn, operator="tester@test", job_retention=timedelta(days=14), job_keep=50)
    try:
        leader.leader_pass()  # evaluates first: one new job each for a and b
        assert leader.last_pass is not None
        fired = {j.name: j.id for j in leader.last_pass.jobs}
    finally:
        leader.close()
    assert sorted(fired) == ["a", "b"]
    # `a` now has one more job among its last 50: its 19 oldest go.
    assert _ids(conn) == {*world.a_old[19:], *world.a_busy, *world.a_recent, *world.b_old, *fired.values()}


def test_an_operator_prune_is_audited(client: Client, conn: psycopg.Connection[Any], world: World) -> None:
    result = client.prune_jobs(timedelta(days=14), keep=50, operator="ops-eve", now=world.now)
    assert result.deleted == 19
    rows = conn.execute(
        "SELECT operator, action, target, after FROM awa.audit_log WHERE action = 'jobs_prune' ORDER BY id"
    ).fetchall()
    assert rows == [
        {"operator": "ops-eve", "action": "jobs_prune", "target": "jobs", "after": {"started": True}},
        {"operator": "ops-eve", "action": "jobs_prune", "target": "jobs", "after": {"deleted": 19, "done": True}},
    ]


def test_pruned_instants_read_unknown_not_a_wrong_verdict(
        client: Client, conn: psycopg.Connection[Any], world: World) -> None:
    force(conn, "UPDATE awa.ledger_meta SET leadership_since = %s", (world.base - timedelta(days=2),))
    lead(conn, world.base - timedelta(days=2), lease=timedelta(days=30))
    prune_jobs(conn, timedelta(days=14), keep=50, now=world.now)
    verdicts = client.ledger("a", since=world.base, until=world.base + 19 * M, limit=100, now=world.now)
    assert [(v.instant, v.verdict, v.reason, v.job_id) for v in verdicts] == [
        *((world.base + k * M, "unknown", "pruned", None) for k in range(18)),
        (world.base + 18 * M, "fired", None, world.a_old[18]),
        (world.base + 19 * M, "fired", None, world.a_old[19]),
    ]
