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
        leader.runtime.leader_pass()  # evaluates first: one new job each for a and b
        assert leader.runtime.last_pass is not None
        fired = {j.name: j.id for j in leader.runtime.last_pass.jobs}
    finally:
        leader.close()
    assert sorted(fired) == ["a", "b"]
    # `a` now has one more job among its last 50: its 19 oldest go.
    assert _ids(conn) == {*world.a_old[19:], *world.a_busy, *world.a_recent, *world.b_old, *fired.values()}


def test_an_operator_prune_is_audited(client: Client, conn: psycopg.Connection[Any], world: World) -> None:
    result = client.actions.prune_jobs(timedelta(days=14), keep=50, operator="ops-eve", now=world.now)
    assert result.deleted == 19
    rows = conn.execute(
        "SELECT operator, action, target, after FROM awa.audit_log WHERE action = 'jobs_prune' ORDER BY id"
    ).fetchall()
    assert rows == [
        {"operator": "ops-eve", "action": "jobs_prune", "target": "jobs", "after": {"deleted": 19}},
        {"operator": "ops-eve", "action": "jobs_prune", "target": "jobs", "after": {"deleted": 19, "done": True}},
    ]


def test_pruned_instants_read_unknown_not_a_wrong_verdict(
        client: Client, conn: psycopg.Connection[Any], world: World) -> None:
    force(conn, "UPDATE awa.ledger_meta SET leadership_since = %s", (world.base - timedelta(days=2),))
    lead(conn, world.base - timedelta(days=2), lease=timedelta(days=30))
    prune_jobs(conn, timedelta(days=14), keep=50, now=world.now)
    verdicts = client.reads.ledger("a", since=world.base, until=world.base + 19 * M, limit=100, now=world.now)
    assert [(v.instant, v.verdict, v.reason, v.job_id) for v in verdicts] == [
        *((world.base + k * M, "unknown", "pruned", None) for k in range(18)),
        (world.base + 18 * M, "fired", None, world.a_old[18]),
        (world.base + 19 * M, "fired", None, world.a_old[19]),
    ]


def test_bounded_rounds_progress_past_rows_they_must_keep(client: Client, conn: psycopg.Connection[Any]) -> None:
    """140 daily schedules' last jobs past the horizon come first in finish order; rounds of
    one 50-row batch each. Restarting at the oldest finished job, a round re-reads kept rows
    for ever (the negative control deletes nothing); with the leader's cursor the rounds walk
    past them and the deletable jobs go."""
    from awa_tui.engine.ledger.retention import RetentionCursor

    now = db_now(conn)
    base = now - timedelta(days=30)
    for k in range(140):  # each schedule's one (kept: keep=1) job, finished first
        _insert(conn, f"daily-{k:03}", base + k * M, "completed", base + k * M)
    doomed = [_insert(conn, None, base + (200 + k) * M, "completed", base + (200 + k) * M) for k in range(30)]

    def round_(cursor: RetentionCursor | None) -> int:
        return prune_jobs(conn, timedelta(days=14), keep=1, batch=50, max_batches=1, cursor=cursor).deleted

    assert [round_(None) for _ in range(5)] == [0] * 5  # stalled: the first 50 rows are kept ones
    cursor = RetentionCursor()
    assert [round_(cursor) for _ in range(4)] == [0, 0, 10, 20]  # 140 kept read once, then the 30 go
    assert cursor.laps == 1 and (cursor.after_at, cursor.after_id) == (None, 0)
    assert _ids(conn).isdisjoint(doomed) and len(_ids(conn)) == 140


def test_the_leaders_rounds_keep_their_cursor(client: Client) -> None:
    assert client.runtime.retention_cursor is client.runtime.retention_cursor


def _progress(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    row = conn.execute("SELECT lap_started_at, lap_finished_at, laps, walked_to, cutoff, deleted, updated_at "
                       "FROM awa.retention_progress").fetchone()
    assert row is not None
    return dict(row)


def test_the_leaders_rounds_record_how_far_the_walk_got(client: Client, conn: psycopg.Connection[Any]) -> None:
    """v027: each round with the leader's cursor records its lap, where the walk is and what
    it deleted; the lap ends (and the next begins) when a walk reached the end. An operator's
    prune (no cursor) and a dry run record nothing."""
    from awa_tui.engine.ledger.retention import RetentionCursor

    t0 = db_now(conn)
    base = t0 - timedelta(days=30)
    for k in range(140):  # each daily schedule's one job, kept (keep=1)
        _insert(conn, f"daily-{k:03}", base + k * M, "completed", base + k * M)
    for k in range(30):  # no schedule's: deletable
        _insert(conn, None, base + (200 + k) * M, "completed", base + (200 + k) * M)
    never = {"lap_started_at": None, "lap_finished_at": None, "laps": 0, "walked_to": None, "cutoff": None,
             "deleted": 0, "updated_at": None}
    assert _progress(conn) == never
    prune_jobs(conn, timedelta(days=14), keep=1, now=t0, dry_run=True, cursor=RetentionCursor())
    client.actions.prune_jobs(timedelta(days=14), keep=1, dry_run=True)
    assert _progress(conn) == never

    cursor = RetentionCursor()
    rounds = [t0 + timedelta(seconds=10 * k) for k in range(4)]

    def round_(at: datetime) -> None:
        prune_jobs(conn, timedelta(days=14), keep=1, now=at, batch=50, max_batches=1, cursor=cursor)

    round_(rounds[0])  # the 50 oldest: kept ones
    assert _progress(conn) == {"lap_started_at": rounds[0], "lap_finished_at": None, "laps": 0,
                               "walked_to": base + 49 * M, "cutoff": rounds[0] - timedelta(days=14),
                               "deleted": 0, "updated_at": rounds[0]}
    round_(rounds[1])
    round_(rounds[2])  # kept 100-139, then 10 deletable
    assert _progress(conn) | {"cutoff": None} == {
        "lap_started_at": rounds[0], "lap_finished_at": None, "laps": 0, "walked_to": base + 209 * M,
        "cutoff": None, "deleted": 10, "updated_at": rounds[2]}
    round_(rounds[3])  # the last 20: the walk reached the end, a new lap begins
    assert _progress(conn) | {"cutoff": None} == {
        "lap_started_at": rounds[3], "lap_finished_at": rounds[3], "laps": 1, "walked_to": None,
        "cutoff": None, "deleted": 30, "updated_at": rounds[3]}
