"""Upstream mode against the real upstream engine: awa-pg 0.6.9 migrates the database,
registers the schedules and runs its own leader and worker in a subprocess; the adapter
reads its tables and acts, and upstream's processes are observed to honour the actions.

Expected instants are worked out by hand in the comments, not by awa-tui's arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from awa_pg_env import UpstreamProcess, installed_version
from helpers import wait_for
from upstream_oracles import every_second, fired_after, insert_schedule, jobs

from awa_tui.engine.core.errors import Conflict, NotFound, ReadOnly, SchemaError
from awa_tui.engine.cron.expression import next_fire
from awa_tui.engine.upstream.adapter import UpstreamAdapter, init_audit
from awa_tui.engine.upstream.models import ActionOutcome, UpcomingFire, UpstreamCapabilities

OPERATOR = "alice@ops"


@pytest.fixture
def adapter(upstream_dsn: str) -> Iterator[UpstreamAdapter]:
    a = UpstreamAdapter(upstream_dsn)
    yield a
    a.close()


# --- reads ---------------------------------------------------------------------------------


def test_schedules_listed_with_next_fires_by_our_arithmetic(
    start_upstream: Callable[..., UpstreamProcess], adapter: UpstreamAdapter
) -> None:
    start_upstream([
        {"name": "every-15-min", "cron": "*/15 * * * *", "args_class": "UpQuarter", "queue": "q1"},
        {"name": "ny-weekdays-9am", "cron": "0 9 * * 1-5", "args_class": "UpMorning", "queue": "q1",
         "timezone": "America/New_York"},
        {"name": "berlin-0230", "cron": "30 2 * * *", "args_class": "UpNight", "queue": "q1",
         "timezone": "Europe/Berlin"},
        {"name": "every-5-seconds", "cron": "*/5 * * * * *", "args_class": "UpFive", "queue": "q1"},
        # croner's day forms (L, #n, nL, nW): upstream accepts them, and so does awa-tui (S55).
        {"name": "last-day-of-month", "cron": "0 0 L * *", "args_class": "UpLast", "queue": "q1"},
        {"name": "second-tuesday", "cron": "0 9 * * TUE#2", "args_class": "UpSecondTue", "queue": "q1",
         "timezone": "America/New_York"},
        {"name": "last-friday", "cron": "0 17 * * 5L", "args_class": "UpLastFri", "queue": "q1",
         "timezone": "Europe/Berlin"},
        {"name": "nearest-15th", "cron": "0 0 15W * *", "args_class": "UpNearest", "queue": "q1"},
    ], [("q1", 2)])
    # Saturday 2027-03-27 12:00:00 UTC: later than any fire upstream can have made today.
    now = datetime(2027, 3, 27, 12, 0, 0, tzinfo=UTC)
    rows = wait_for(lambda: (s := adapter.list_schedules(now)) and len(s) == 8 and s, timeout=30,
                    what="upstream's leader to sync the 8 schedules")
    by_name = {s.name: s for s in rows}
    assert [s.name for s in rows] == sorted(by_name)
    # Next quarter hour.
    assert by_name["every-15-min"].next_fire == datetime(2027, 3, 27, 12, 15, tzinfo=UTC)
    # Saturday: the next weekday is Monday 29 March, 09:00 EDT (DST since 14 March) = 13:00 UTC.
    assert by_name["ny-weekdays-9am"].next_fire == datetime(2027, 3, 29, 13, 0, tzinfo=UTC)
    # 28 March 2027 is Berlin's spring-forward (02:00 CET -> 03:00 CEST at 01:00 UTC): 02:30 does
    # not exist and fires at the end of the gap, 01:00 UTC.
    assert by_name["berlin-0230"].next_fire == datetime(2027, 3, 28, 1, 0, tzinfo=UTC)
    assert by_name["berlin-0230"].next_fire_mark == "gap"
    assert by_name["every-5-seconds"].next_fire == datetime(2027, 3, 27, 12, 0, 5, tzinfo=UTC)
    # Healthy, with next fires: Wed 31 March 2027 00:00 UTC is the last day of March.
    assert (by_name["last-day-of-month"].next_fire, by_name["last-day-of-month"].problem) == (
        datetime(2027, 3, 31, tzinfo=UTC), None)
    # April 2027 starts on a Thursday: Tuesdays 6 and 13; 09:00 EDT = 13:00 UTC.
    assert by_name["second-tuesday"].next_fire == datetime(2027, 4, 13, 13, 0, tzinfo=UTC)
    # Fri 26 March 2027 is past; April's last Friday is the 30th, 17:00 CEST = 15:00 UTC.
    assert by_name["last-friday"].next_fire == datetime(2027, 4, 30, 15, 0, tzinfo=UTC)
    # 15 April 2027 is a Thursday and fires as itself.
    assert by_name["nearest-15th"].next_fire == datetime(2027, 4, 15, tzinfo=UTC)
    assert all(s.problem is None for s in rows)
    assert {(s.kind, s.queue, s.timezone, s.state, s.queue_paused) for s in rows} == {
        ("up_quarter", "q1", "UTC", "active", False), ("up_morning", "q1", "America/New_York", "active", False),
        ("up_night", "q1", "Europe/Berlin", "active", False), ("up_five", "q1", "UTC", "active", False),
        ("up_last", "q1", "UTC", "active", False), ("up_second_tue", "q1", "America/New_York", "active", False),
        ("up_last_fri", "q1", "Europe/Berlin", "active", False), ("up_nearest", "q1", "UTC", "active", False),
    }

    detail = adapter.show("berlin-0230", now=now, count=3)
    cest = timedelta(hours=2)
    assert detail.upcoming == (
        UpcomingFire(datetime(2027, 3, 28, 1, 0, tzinfo=UTC), datetime(2027, 3, 28, 1, 0, tzinfo=UTC), "gap"),
        UpcomingFire(datetime(2027, 3, 29, 0, 30, tzinfo=UTC), datetime(2027, 3, 29, 0, 30, tzinfo=UTC), None),
        UpcomingFire(datetime(2027, 3, 30, 0, 30, tzinfo=UTC), datetime(2027, 3, 30, 0, 30, tzinfo=UTC), None),
    )
    assert [f.local.utcoffset() for f in detail.upcoming] == [cest, cest, cest]
    assert [f.local.replace(tzinfo=None) for f in detail.upcoming] == [
        datetime(2027, 3, 28, 3, 0), datetime(2027, 3, 29, 2, 30), datetime(2027, 3, 30, 2, 30)]
    # Previewed: the last days of March, April (30) and May (31) 2027, at 00:00 UTC.
    assert [f.at for f in adapter.show("last-day-of-month", now=now, count=3).upcoming] == [
        datetime(2027, 3, 31, tzinfo=UTC), datetime(2027, 4, 30, tzinfo=UTC), datetime(2027, 5, 31, tzinfo=UTC)]
    # May 2027 starts on a Saturday: Tuesdays 4 and 11, 13:00 UTC (EDT).
    assert [f.at for f in adapter.show("second-tuesday", now=now, count=2).upcoming] == [
        datetime(2027, 4, 13, 13, 0, tzinfo=UTC), datetime(2027, 5, 11, 13, 0, tzinfo=UTC)]


def _next_nth_weekday(after: date, weekday: int, nth: int) -> date:
    """The first day after `after` that is the `nth` `weekday` (0 = Sunday) of its month,
    by walking the calendar: the oracle for the negative control below."""
    day = after + timedelta(days=1)
    while not (day.isoweekday() % 7 == weekday and (day.day - 1) // 7 + 1 == nth):
        day += timedelta(days=1)
    return day


def test_upstream_fires_todays_nth_weekday_and_our_arithmetic_agrees(
    start_upstream: Callable[..., UpstreamProcess], adapter: UpstreamAdapter, upstream_conn: Any
) -> None:
    # Today's weekday and its occurrence in the month (UTC, DB time): `* * * * * WD#N` fires every
    # second today in upstream's leader; the same weekday with another occurrence never does.
    clock = "SELECT clock_timestamp() AS t"
    if upstream_conn.execute(clock).fetchone()["t"].astimezone(UTC).time() >= time(23, 58, 30):
        wait_for(lambda: upstream_conn.execute(clock).fetchone()["t"].astimezone(UTC).time() < time(23, 0),
                 timeout=120, what="midnight UTC to pass, so that the whole test runs on one day")
    today = upstream_conn.execute(clock).fetchone()["t"].astimezone(UTC).date()
    weekday, nth = today.isoweekday() % 7, (today.day - 1) // 7 + 1
    other = nth % 4 + 1  # 1..4, never today's: every month has a fourth
    today_expr, other_expr = f"* * * * * {weekday}#{nth}", f"* * * * * {weekday}#{other}"
    start_upstream([
        {"name": "todays-nth", "cron": today_expr, "args_class": "UpTodaysNth", "queue": "q1"},
        {"name": "other-nth", "cron": other_expr, "args_class": "UpOtherNth", "queue": "q1"},
    ], [("q1", 2)])
    fired = wait_for(lambda: len(f := jobs(upstream_conn, "todays-nth")) >= 3 and f, timeout=30,
                     what="three fires of today's nth weekday by upstream's leader")
    assert jobs(upstream_conn, "other-nth") == []
    # Every instant upstream fired is a fire of the same expression here.
    for job in fired:
        instant = datetime.fromisoformat(job["metadata"]["cron_fire_time"]).astimezone(UTC)
        assert instant.date() == today
        assert next_fire(today_expr, "UTC", instant - timedelta(seconds=1)).at == instant
    # Both read as healthy; the other occurrence's next fire is midnight of its next day.
    rows = {s.name: s for s in adapter.list_schedules()}
    assert (rows["todays-nth"].problem, rows["other-nth"].problem) == (None, None)
    expected = _next_nth_weekday(today, weekday, other)
    assert rows["other-nth"].next_fire == datetime(expected.year, expected.month, expected.day, tzinfo=UTC)


def test_recent_fires_runtimes_and_queues_read_upstreams_tables(
    start_upstream: Callable[..., UpstreamProcess], adapter: UpstreamAdapter, upstream_conn: Any,
    awa_pg_python: Path,
) -> None:
    proc = start_upstream([every_second("tick", "UpTick")], [("q1", 2)])
    wait_for(lambda: sum(j["state"] == "completed" for j in jobs(upstream_conn, "tick")) >= 2, timeout=30,
             what="two fires completed by upstream's worker")
    # A snapshot saying it leads: its first can be written before its leader election ends.
    wait_for(lambda: upstream_conn.execute("SELECT count(*) AS n FROM awa.runtime_instances WHERE leader")
             .fetchone()["n"], timeout=20, what="upstream's runtime snapshot as leader")
    proc.stop()  # from here on, nothing changes under the reads

    oracle = upstream_conn.execute(
        "SELECT id, state::text AS state, attempt, (metadata ->> 'cron_fire_time')::timestamptz AS fire_time "
        "FROM awa.jobs WHERE metadata ->> 'cron_name' = 'tick' ORDER BY id DESC"
    ).fetchall()
    fires = adapter.recent_fires("tick", limit=1000)
    assert [(f.job_id, f.state, f.attempt, f.fire_time, f.manual) for f in fires] == [
        (j["id"], j["state"], j["attempt"], j["fire_time"], False) for j in oracle]
    assert [f.job_id for f in adapter.recent_fires("tick", limit=2)] == [j["id"] for j in oracle[:2]]

    runtimes = adapter.runtimes()
    # Its leader flag as its last snapshot left it: a clean stop may write one more snapshot
    # after it let the leadership go (or not, as the stop races its snapshot timer).
    stored = upstream_conn.execute("SELECT leader FROM awa.runtime_instances").fetchall()
    assert [(r.pid, r.version, r.queues, r.leader) for r in runtimes] == [
        (proc.proc.pid, installed_version(awa_pg_python), ("q1",), stored[0]["leader"])]
    seen = runtimes[0].last_seen_at
    # upstream's staleness rule: unseen for max(3 x snapshot interval, 30 s); its interval is 10 s.
    assert runtimes[0].snapshot_interval_ms == 10000
    assert [r.stale for r in adapter.runtimes(now=seen + timedelta(seconds=30))] == [False]
    assert [r.stale for r in adapter.runtimes(now=seen + timedelta(seconds=30, microseconds=1))] == [True]

    counts = upstream_conn.execute(
        "SELECT count(*) FILTER (WHERE state = 'completed') AS completed, "
        "count(*) FILTER (WHERE state = 'available') AS available FROM awa.jobs WHERE queue = 'q1'"
    ).fetchone()
    assert [(q.queue, q.paused, q.schedules, q.completed, q.available, q.running) for q in adapter.queues()] == [
        ("q1", False, 1, counts["completed"], counts["available"], 0)]
    assert counts["completed"] >= 2


# --- actions its leader and workers honour ----------------------------------------------------


def test_pause_stops_upstreams_leader_and_resume_restarts_it(
    start_upstream: Callable[..., UpstreamProcess], adapter: UpstreamAdapter, upstream_conn: Any
) -> None:
    start_upstream([every_second("tick-a", "UpTickA"), every_second("tick-b", "UpTickB")], [("q1", 2)])
    wait_for(lambda: len(jobs(upstream_conn, "tick-a")) >= 2, timeout=30, what="upstream to fire tick-a")

    outcome = adapter.pause("tick-a", OPERATOR)
    assert outcome == ActionOutcome("pause", "tick-a", "paused schedule 'tick-a'", audited=False)
    paused_at = upstream_conn.execute("SELECT paused_at FROM awa.cron_jobs WHERE name = 'tick-a'").fetchone()[
        "paused_at"]
    # paused_at is the pause transaction's start; it committed within the next second. A fire
    # stamped later than that was evaluated after the commit and must have been refused.
    settled = paused_at + timedelta(seconds=1)
    violations: list[dict[str, Any]] = []

    def control_fired_three_more() -> bool:
        violations.extend(fired_after(upstream_conn, "tick-a", settled))
        return len(fired_after(upstream_conn, "tick-b", settled)) >= 3

    # The control schedule fires three times after that: upstream's leader made >= 3 passes.
    wait_for(control_fired_three_more, timeout=30, what="three fires of the control schedule after the pause")
    assert violations == []
    assert fired_after(upstream_conn, "tick-a", settled) == []
    paused = next(s for s in adapter.list_schedules() if s.name == "tick-a")
    assert (paused.state, paused.paused_by) == ("paused", OPERATOR)
    row = upstream_conn.execute("SELECT paused_at, paused_by FROM awa.cron_jobs WHERE name = 'tick-a'").fetchone()
    assert row["paused_at"] == paused.paused_at and row["paused_by"] == OPERATOR

    with pytest.raises(Conflict, match=r"^schedule 'tick-a' is already paused \(by 'alice@ops'\)$"):
        adapter.pause("tick-a", OPERATOR)

    assert adapter.resume("tick-a", OPERATOR).summary == "resumed schedule 'tick-a'"
    resumed_at = upstream_conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
    wait_for(lambda: len(fired_after(upstream_conn, "tick-a", resumed_at)) >= 2, timeout=30,
             what="upstream to fire tick-a again after resume")
    assert upstream_conn.execute(
        "SELECT paused_at, paused_by FROM awa.cron_jobs WHERE name = 'tick-a'").fetchone() == {
        "paused_at": None, "paused_by": None}
    with pytest.raises(Conflict, match=r"^schedule 'tick-a' is not paused$"):
        adapter.resume("tick-a", OPERATOR)


def test_trigger_writes_upstreams_job_shape_and_its_worker_runs_it(
    start_upstream: Callable[..., UpstreamProcess], adapter: UpstreamAdapter, upstream_conn: Any
) -> None:
    # Once a year at midnight on 1 January: upstream's leader has nothing to fire today.
    start_upstream([{"name": "yearly", "cron": "0 0 1 1 *", "args_class": "UpRare", "queue": "q1"}], [("q1", 2)])
    wait_for(lambda: adapter.list_schedules(), timeout=30, what="upstream's leader to sync the schedule")
    adapter.pause("yearly", OPERATOR)  # a trigger also works while paused, as upstream's does

    before = upstream_conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
    outcome = adapter.trigger("yearly", OPERATOR)
    after = upstream_conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
    assert outcome.job_id is not None and outcome.job is not None
    assert outcome == ActionOutcome("trigger", "yearly", f"triggered schedule 'yearly': job {outcome.job_id} on "
                                    "queue 'q1'", audited=False, job_id=outcome.job_id, job=outcome.job)
    # The job as the trigger wrote it (the console's and the CLI's answer), in its transaction.
    job = outcome.job
    assert (job.id, job.kind, job.queue, job.state, job.metadata) == (
        outcome.job_id, "up_rare", "q1", "available", {"cron_name": "yearly", "triggered_manually": True})
    assert before <= job.created_at <= after
    done = wait_for(lambda: [j for j in jobs(upstream_conn, "yearly") if j["state"] == "completed"], timeout=30,
                    what="upstream's worker to complete the triggered job")
    assert [(j["id"], j["kind"], j["queue"], j["attempt"], j["metadata"]) for j in done] == [
        (outcome.job_id, "up_rare", "q1", 1, {"cron_name": "yearly", "triggered_manually": True})]
    fires = wait_for(lambda: adapter.recent_fires("yearly"), timeout=10, what="the trigger in recent fires")
    assert [(f.job_id, f.state, f.manual, f.fire_time) for f in fires] == [
        (outcome.job_id, "completed", True, None)]
    # The trigger is not a fire: upstream's schedule state is untouched.
    assert upstream_conn.execute(
        "SELECT last_enqueued_at FROM awa.cron_jobs WHERE name = 'yearly'").fetchone()["last_enqueued_at"] is None


def test_queue_pause_stops_upstreams_dispatch_until_resumed(
    start_upstream: Callable[..., UpstreamProcess], adapter: UpstreamAdapter, upstream_conn: Any
) -> None:
    start_upstream([every_second("tick-q", "UpTickQ", queue="qp")], [("qp", 2)])
    wait_for(lambda: any(j["state"] == "completed" for j in jobs(upstream_conn, "tick-q")), timeout=30,
             what="a first fire completed on qp")

    assert adapter.queue_pause("qp", OPERATOR).summary == "paused queue 'qp'"
    paused_at = upstream_conn.execute("SELECT paused_at FROM awa.queue_meta WHERE queue = 'qp'").fetchone()[
        "paused_at"]
    # The leader still fires into the paused queue; fires stamped a second after the pause
    # transaction began were written after it committed, and nothing may claim them.
    settled = paused_at + timedelta(seconds=1)
    held = wait_for(lambda: (new := fired_after(upstream_conn, "tick-q", settled)) and len(new) >= 3 and new,
                    timeout=30, what="three fires into the paused queue")
    assert {(j["state"], j["attempt"]) for j in held} == {("available", 0)}
    queue = next(q for q in adapter.queues() if q.queue == "qp")
    assert (queue.paused, queue.paused_by) == (True, OPERATOR)
    assert queue.available >= 3
    with pytest.raises(Conflict, match=r"^queue 'qp' is already paused \(by 'alice@ops'\)$"):
        adapter.queue_pause("qp", OPERATOR)

    assert adapter.queue_resume("qp", OPERATOR).summary == "resumed queue 'qp'"
    held_ids = {j["id"] for j in held}
    completed: set[int] = set()  # accumulated: a row may be missing from one read of the view

    def held_jobs_completed() -> bool:
        completed.update(j["id"] for j in jobs(upstream_conn, "tick-q") if j["state"] == "completed")
        return completed >= held_ids

    wait_for(held_jobs_completed, timeout=30, what="upstream's worker to run the held jobs after resume")
    assert next(q for q in adapter.queues() if q.queue == "qp").paused is False


def test_upstream_schedules_preview_with_upstreams_reading_of_the_fields(adapter: UpstreamAdapter,
                                                                          upstream_conn: Any) -> None:
    # S60: upstream reads `5-5` as the 5th alone, `*/1` in day-of-week as restricted (so the
    # day fields OR: every day) and `1/2` in day-of-week up to 7 (Sunday); the previews are
    # the same arithmetic. Rows as upstream's upsert writes them.
    for name, expr in (("fifth", "0 0 5-5 * *"), ("every-day", "0 0 */5 * */1"), ("mon-wed-fri-sun", "0 0 * * 1/2")):
        upstream_conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue) "
                              "VALUES (%s, %s, 'UTC', 'up_rare', 'q1')", (name, expr))
    # Friday 1 January 2027, noon UTC.
    now = datetime(2027, 1, 1, 12, 0, tzinfo=UTC)
    shown = adapter.show("fifth", now=now, count=3)
    assert [f.at for f in shown.upcoming] == [datetime(2027, m, 5, tzinfo=UTC) for m in (1, 2, 3)]
    assert shown.schedule.problem is None
    assert [f.at for f in adapter.show("every-day", now=now, count=3).upcoming] == [
        datetime(2027, 1, d, tzinfo=UTC) for d in (2, 3, 4)]
    # Sat 2 is not one of them: Sun 3, Mon 4, Wed 6.
    assert [f.at for f in adapter.show("mon-wed-fri-sun", now=now, count=3).upcoming] == [
        datetime(2027, 1, d, tzinfo=UTC) for d in (3, 4, 6)]
    by_name = {s.name: s for s in adapter.list_schedules(now)}
    assert by_name["fifth"].next_fire == datetime(2027, 1, 5, tzinfo=UTC)


def test_an_interval_row_upstream_has_no_next_fire_and_says_why(adapter: UpstreamAdapter,
                                                                 upstream_conn: Any) -> None:
    # Upstream's croner has no `@every`: its leader never fires such a row (written by hand).
    upstream_conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue) "
                          "VALUES ('poll', '@every 90s', 'UTC', 'up_rare', 'q1')")
    shown = adapter.show("poll", now=datetime(2027, 1, 1, 12, 0, tzinfo=UTC), count=3)
    assert (shown.schedule.next_fire, shown.upcoming) == (None, ())
    assert shown.schedule.problem == (
        "cron_expr: '@every 90s' is an interval; upstream Awa has no interval schedules, its leader never fires it")


# --- audit, refusals, errors -------------------------------------------------------------------


def test_audit_trail_only_after_init_audit_and_in_its_own_schema(
    upstream_dsn: str, adapter: UpstreamAdapter, upstream_conn: Any
) -> None:
    insert_schedule(upstream_conn, "nightly")
    assert adapter.audited() is False
    assert adapter.pause("nightly", OPERATOR).audited is False
    awa_relations = upstream_conn.execute(
        "SELECT count(*) AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'awa'"
    ).fetchone()["n"]

    assert init_audit(upstream_dsn) is True
    assert init_audit(upstream_dsn) is False
    assert adapter.audited() is True
    assert upstream_conn.execute(
        "SELECT count(*) AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'awa'"
    ).fetchone()["n"] == awa_relations

    resumed = adapter.resume("nightly", OPERATOR)
    assert resumed.audited is True and resumed.audit_id is not None
    paused = adapter.pause("nightly", "bob@ops")
    paused_at = upstream_conn.execute("SELECT paused_at FROM awa.cron_jobs WHERE name = 'nightly'").fetchone()
    entries = adapter.audit_entries("nightly")
    assert [(e.id, e.operator, e.action, e.target) for e in entries] == [
        (paused.audit_id, "bob@ops", "pause", "nightly"), (resumed.audit_id, OPERATOR, "resume", "nightly")]
    assert entries[0].before == {"paused_at": None, "paused_by": None}
    assert entries[0].after["paused_by"] == "bob@ops"
    assert datetime.fromisoformat(entries[0].after["paused_at"]) == paused_at["paused_at"]

    queue = adapter.queue_pause("q1", OPERATOR)
    assert (queue.audited, adapter.audit_entries("queue:q1")[0].action) == (True, "queue_pause")
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
        upstream_conn.execute("DELETE FROM awa_tui_audit.audit_log")


def test_refusals_are_one_line_and_name_the_target(
    upstream_dsn: str, adapter: UpstreamAdapter, upstream_conn: Any, dsn: str
) -> None:
    insert_schedule(upstream_conn, "nightly")
    with pytest.raises(NotFound) as err:
        adapter.pause("nope\x1b[2J", OPERATOR)
    assert str(err.value) == "unknown schedule 'nope\\x1b[2J'"
    with pytest.raises(NotFound, match=r"^unknown schedule 'gone'$"):
        adapter.trigger("gone", OPERATOR)
    with pytest.raises(NotFound, match=r"^unknown queue 'nowhere' \(no schedule, job or pause row uses it\)$"):
        adapter.queue_pause("nowhere", OPERATOR)
    with pytest.raises(Conflict, match=r"^queue 'q1' is not paused$"):
        adapter.queue_resume("q1", OPERATOR)

    read_only = UpstreamAdapter(upstream_dsn, read_only=True)
    try:
        with pytest.raises(ReadOnly, match=r"^pause refused: this client is read-only$"):
            read_only.pause("nightly", OPERATOR)
        assert [s.name for s in read_only.list_schedules()] == ["nightly"]
    finally:
        read_only.close()
    assert upstream_conn.execute("SELECT paused_at FROM awa.cron_jobs").fetchall() == [{"paused_at": None}]

    ours = UpstreamAdapter(dsn)
    try:
        with pytest.raises(SchemaError) as err:
            ours.list_schedules()
        assert str(err.value).startswith("not an upstream Awa database: awa-tui schema version ")
    finally:
        ours.close()
    assert adapter.capabilities() == UpstreamCapabilities(schedule_pause=True, trigger=True, queue_pause=True)
