"""Issue 15: backfill fills instants that never fired, never a second job for one that did.

Scenarios at an explicit `now`, expected instants written out by hand; the concurrent test
runs a real leader (Client.start: election, evaluator loop on DB time) beside backfills
and checks every instant against generate_series.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest
from engine_helpers import at, fire_times, force, schedule_row
from helpers import wait_for

from awa_tui import Client, Conflict, NotFound, ValidationError

H = timedelta(hours=1)


def _hourly(client: Client, conn: psycopg.Connection[Any], register: Any, **kwargs: Any) -> None:
    """Hourly, created at 00:00; the leader fired 01:00 (first fire) and, back after a gap,
    05:00 (coalesce folded 02:00-04:00)."""
    register("hourly", "0 * * * *", created="2025-01-01T00:00:00", **kwargs)
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T01:00:00")).jobs] == ["2025-01-01T01:00:00Z"]
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T05:30:00")).jobs] == ["2025-01-01T05:00:00Z"]


def _backfills(conn: psycopg.Connection[Any]) -> list[tuple[str, Any]]:
    rows = conn.execute(
        "SELECT metadata ->> 'cron_fire_time' AS fire, metadata -> 'backfilled_by' AS by FROM awa.jobs "
        "WHERE metadata ? 'backfill' ORDER BY id").fetchall()
    return [(r["fire"], r["by"]) for r in rows]


def test_backfill_fills_the_instants_that_never_fired(client: Client, conn: Any, register: Any) -> None:
    _hourly(client, conn, register)
    result = client.actions.backfill("hourly", at("2025-01-01T00:00:00"), at("2025-01-01T05:00:00"),
                             operator="ops@host", now=at("2025-01-01T06:00:00"))
    assert result.instants == (at("2025-01-01T00:00:00"), at("2025-01-01T02:00:00"), at("2025-01-01T03:00:00"),
                               at("2025-01-01T04:00:00"))
    assert (result.already_fired, result.left_to_scheduler, len(result.job_ids)) == (2, 0, 4)
    assert _backfills(conn) == [("2025-01-01T00:00:00Z", "ops@host"), ("2025-01-01T02:00:00Z", "ops@host"),
                                ("2025-01-01T03:00:00Z", "ops@host"), ("2025-01-01T04:00:00Z", "ops@host")]
    # The token is untouched: the scheduler's next fire is 06:00, as before.
    assert schedule_row(conn, "hourly")["last_enqueued_at"] == at("2025-01-01T05:00:00")
    verdicts = client.reads.ledger("hourly", now=at("2025-01-01T05:30:00"))
    assert [(v.instant.hour, v.verdict, v.by) for v in verdicts] == [
        (0, "backfilled", "ops@host"), (1, "fired", None), (2, "backfilled", "ops@host"),
        (3, "backfilled", "ops@host"), (4, "backfilled", "ops@host"), (5, "fired", None)]
    audit = conn.execute("SELECT operator, action, target, after, detail FROM awa.audit_log "
                         "WHERE action = 'backfill'").fetchall()
    assert [(a["operator"], a["target"], a["after"], a["detail"]["from"], a["detail"]["to"], a["detail"]["count"])
            for a in audit] == [("ops@host", "hourly", {"count": 4}, "2025-01-01T00:00:00Z",
                                 "2025-01-01T05:00:00Z", 4)]


def test_a_second_backfill_of_the_same_range_enqueues_nothing(client: Client, conn: Any, register: Any) -> None:
    _hourly(client, conn, register)
    now = at("2025-01-01T06:00:00")
    client.actions.backfill("hourly", at("2025-01-01T00:00:00"), at("2025-01-01T05:00:00"), operator="a@h", now=now)
    again = client.actions.backfill("hourly", at("2025-01-01T00:00:00"), at("2025-01-01T05:00:00"), operator="b@h",
                                    now=now)
    assert (again.instants, again.already_fired, again.job_ids) == ((), 6, ())
    assert len(fire_times(conn, "hourly")) == 6


def test_a_dry_run_counts_and_changes_nothing(client: Client, conn: Any, register: Any) -> None:
    _hourly(client, conn, register)
    result = client.actions.backfill("hourly", at("2025-01-01T01:30:00"), at("2025-01-01T05:00:00"), dry_run=True,
                             operator="ops@host", now=at("2025-01-01T06:00:00"))
    assert (result.count, result.already_fired, result.job_ids, result.dry_run) == (3, 1, (), True)
    assert _backfills(conn) == []
    assert conn.execute("SELECT count(*) AS n FROM awa.audit_log WHERE action = 'backfill'").fetchone()["n"] == 0


def test_instants_after_the_last_fire_are_left_to_the_scheduler(client: Client, conn: Any, register: Any) -> None:
    _hourly(client, conn, register)
    # 06:00 is due but the leader has not fired it yet: it is the scheduler's, not backfill's.
    result = client.actions.backfill("hourly", at("2025-01-01T05:00:00"), at("2025-01-01T06:00:00"),
                                     operator="ops@host",
                             now=at("2025-01-01T06:10:00"))
    assert (result.instants, result.already_fired, result.left_to_scheduler) == ((), 1, 1)
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T06:10:00")).jobs] == ["2025-01-01T06:00:00Z"]
    assert fire_times(conn, "hourly") == ["2025-01-01T01:00:00Z", "2025-01-01T05:00:00Z", "2025-01-01T06:00:00Z"]


def test_backfill_respects_the_bounds_and_does_not_count_toward_max_fires(
    client: Client, conn: Any, register: Any
) -> None:
    _hourly(client, conn, register, start_at=at("2025-01-01T01:00:00"), max_fires=3)
    result = client.actions.backfill("hourly", at("2025-01-01T00:00:00"), at("2025-01-01T05:00:00"),
                                     operator="ops@host",
                             now=at("2025-01-01T06:00:00"))
    assert [t.hour for t in result.instants] == [2, 3, 4]  # 00:00 is before start_at
    assert schedule_row(conn, "hourly")["fires_count"] == 2
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T06:00:00")).jobs] == ["2025-01-01T06:00:00Z"]
    assert schedule_row(conn, "hourly")["finished_at"] == at("2025-01-01T06:00:00")


@pytest.mark.parametrize(("lo", "hi", "message"), [
    ("2025-01-01T05:00:00", "2025-01-01T02:00:00",
     r"^backfill range reversed: from 2025-01-01T05:00:00Z is after to 2025-01-01T02:00:00Z$"),
    ("2025-01-01T05:00:00", "2025-01-01T06:00:01",
     r"^backfill range in the future: to 2025-01-01T06:00:01Z is after now 2025-01-01T06:00:00Z$"),
    ("2024-12-17T05:59:59", "2025-01-01T02:00:00",
     r"^backfill range older than the job-retention horizon \(14 days\): from 2024-12-17T05:59:59Z is before "
     r"2024-12-18T06:00:00Z; older instants cannot be checked$"),
])
def test_bad_ranges_are_refused_with_one_line(
    client: Client, conn: Any, register: Any, lo: str, hi: str, message: str
) -> None:
    _hourly(client, conn, register)
    with pytest.raises(ValidationError, match=message):
        client.actions.backfill("hourly", at(lo), at(hi), operator="ops@host", now=at("2025-01-01T06:00:00"))
    assert _backfills(conn) == []


def test_over_the_limit_is_refused_naming_the_count(client: Client, conn: Any, register: Any) -> None:
    _hourly(client, conn, register)
    with pytest.raises(ValidationError, match=r"^backfill of 'hourly' would enqueue 4 jobs, over the limit of 3; "
                                              r"pass a higher max$"):
        client.actions.backfill("hourly", at("2025-01-01T00:00:00"), at("2025-01-01T05:00:00"), max_count=3,
                        operator="ops@host", now=at("2025-01-01T06:00:00"))
    assert _backfills(conn) == []
    assert client.actions.backfill("hourly", at("2025-01-01T00:00:00"), at("2025-01-01T05:00:00"), max_count=4,
                           operator="ops@host", now=at("2025-01-01T06:00:00")).count == 4


def test_a_pruned_range_is_refused(client: Client, conn: Any, register: Any) -> None:
    _hourly(client, conn, register)
    conn.execute("INSERT INTO awa.ledger_pruned (cron_name, pruned_through) VALUES ('hourly', '2025-01-01T01:00:00Z')")
    with pytest.raises(ValidationError, match=r"^backfill of 'hourly': jobs up to 2025-01-01T01:00:00Z were pruned; "
                                              r"instants from 2025-01-01T00:00:00Z cannot be checked$"):
        client.actions.backfill("hourly", at("2025-01-01T00:00:00"), at("2025-01-01T05:00:00"), operator="ops@host",
                        now=at("2025-01-01T06:00:00"))


def test_unknown_and_retired_schedules_are_refused(client: Client, conn: Any, register: Any) -> None:
    _hourly(client, conn, register)
    with pytest.raises(NotFound, match=r"^unknown schedule 'nope'$"):
        client.actions.backfill("nope", at("2025-01-01T00:00:00"), at("2025-01-01T05:00:00"), operator="ops@host",
                        now=at("2025-01-01T06:00:00"))
    force(conn, "UPDATE awa.cron_jobs SET retired_at = now(), retired_by = 'x' WHERE name = 'hourly'")
    with pytest.raises(Conflict, match=r"^schedule 'hourly' is retired; restore it before a backfill$"):
        client.actions.backfill("hourly", at("2025-01-01T00:00:00"), at("2025-01-01T05:00:00"), operator="ops@host",
                        now=at("2025-01-01T06:00:00"))


def test_backfill_beside_a_running_leader_never_doubles_an_instant(dsn: str, conn: psycopg.Connection[Any]) -> None:
    """A real leader fires a per-second coalesce schedule while backfills run over the last
    minute again and again: each backfill holds the row, so the leader's pass skips it and
    folds instants that the next backfill fills. At the end one backfill over the whole
    span leaves every instant from creation to the token with exactly one job."""
    leader = Client(dsn, operator="leader@test")
    leader.periodic("tick", "* * * * * *", "test.tick")
    leader.sync()
    force(conn, "UPDATE awa.cron_jobs SET created_at = date_trunc('second', now()) - interval '30 seconds' "
                "WHERE name = 'tick'")
    operator = Client(dsn, operator="ops@test")
    rounds = 0
    try:
        leader.start(run_worker=False)
        wait_for(lambda: schedule_row(conn, "tick")["fires_count"] >= 1, timeout=15, what="the leader's first fire")
        first_token = schedule_row(conn, "tick")["last_enqueued_at"]
        while rounds < 40 or schedule_row(conn, "tick")["last_enqueued_at"] < first_token + timedelta(seconds=3):
            now = operator.reads.db_time()
            operator.actions.backfill("tick", now - timedelta(seconds=60), now)
            rounds += 1
    finally:
        leader.close()
    now = operator.reads.db_time()
    token = schedule_row(conn, "tick")["last_enqueued_at"]
    # From a minute before creation: instants before it never fire on their own, and are
    # the scheduler's past as much as the folded ones.
    lo = schedule_row(conn, "tick")["created_at"] - timedelta(minutes=1)
    operator.actions.backfill("tick", lo, now)
    operator.close()
    per_instant = conn.execute(
        "SELECT g.t, count(j.id) AS n "
        "FROM generate_series(%s::timestamptz, %s::timestamptz, interval '1 second') g(t) "
        "LEFT JOIN awa.jobs j ON j.metadata ->> 'cron_name' = 'tick' "
        "AND (j.metadata ->> 'cron_fire_time')::timestamptz = g.t GROUP BY g.t ORDER BY g.t",
        (lo, token)).fetchall()
    assert [r["n"] for r in per_instant] == [1] * len(per_instant)
    total = conn.execute("SELECT count(*) AS n FROM awa.jobs WHERE metadata ->> 'cron_name' = 'tick'").fetchone()
    assert total is not None and total["n"] == len(per_instant)  # nothing outside [lo, token] either
    backfilled = conn.execute("SELECT count(*) AS n FROM awa.jobs WHERE metadata ? 'backfill'").fetchone()["n"]
    assert backfilled >= 89  # at least the 90 instants before the first fire, bar that fire itself
