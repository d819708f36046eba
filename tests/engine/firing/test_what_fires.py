"""Issue 15: the overlap policy and the bounds (start_at, end_at, max_fires), exact instants.

Every pass runs at an explicit `now`; expected fires are written out by hand. The slow
handler is the real worker (engine/runtime/worker.py) running a handler that blocks on an
event until the test releases it: the job is `running` in the database meanwhile.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from engine_helpers import at, fire_times, force, schedule_row

from awa_tui import Client, ValidationError
from awa_tui.engine.jobs.context import Job
from awa_tui.engine.schedules.definition import Schedule


def _skips(conn: psycopg.Connection[Any], name: str) -> list[str]:
    rows = conn.execute(
        "SELECT to_char(fire_time AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AS t "
        "FROM awa.fire_skips WHERE cron_name = %s ORDER BY fire_time", (name,)).fetchall()
    return [r["t"] for r in rows]


def _verdicts(client: Client, name: str, now: str) -> list[tuple[str, str]]:
    # From 00:01: the instant the test's `last` stands for (00:00) has no job and is unknown.
    verdicts = client.reads.ledger(name, since=at("2025-01-01T00:00:30"), now=at(now))
    return [(v.instant.strftime("%H:%M"), v.verdict) for v in verdicts]


class SlowHandler:
    """Blocks the first job it runs until released; later jobs run at once."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.ran: list[str] = []

    def __call__(self, job: Job) -> None:
        self.ran.append(job.metadata["cron_fire_time"])
        if len(self.ran) == 1:
            self.started.set()
            assert self.release.wait(30), "the test never released the slow job"


def _work_in_background(client: Client) -> threading.Thread:
    thread = threading.Thread(target=client.work_once, kwargs={"limit": 1})
    thread.start()
    return thread


# --- overlap: skip -----------------------------------------------------------------------


def test_skip_with_a_slow_handler_skips_instants_while_the_job_runs(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    handler = SlowHandler()
    client.register_handler("test.job", handler)
    register("slow", "* * * * *", last="2025-01-01T00:00:00", overlap="skip")
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:01:00")).jobs] == ["2025-01-01T00:01:00Z"]
    worker = _work_in_background(client)
    assert handler.started.wait(30)
    # 00:01's job runs longer than the period: 00:02 and 00:03 are not enqueued.
    result = client.evaluate(now=at("2025-01-01T00:02:00"))
    assert (result.jobs, result.skipped, result.lost_races) == ([], [("slow", "2025-01-01T00:02:00.000000+00:00")], 0)
    assert client.evaluate(now=at("2025-01-01T00:03:00")).jobs == []
    handler.release.set()
    worker.join(30)
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:04:00")).jobs] == ["2025-01-01T00:04:00Z"]
    assert fire_times(conn, "slow") == ["2025-01-01T00:01:00Z", "2025-01-01T00:04:00Z"]
    assert _skips(conn, "slow") == ["2025-01-01T00:02:00Z", "2025-01-01T00:03:00Z"]
    assert handler.ran == ["2025-01-01T00:01:00Z"]
    assert _verdicts(client, "slow", "2025-01-01T00:04:30") == [
        ("00:01", "fired"), ("00:02", "skipped_overlap"), ("00:03", "skipped_overlap"), ("00:04", "fired"),
    ]
    row = schedule_row(conn, "slow")
    assert (row["last_enqueued_at"], row["fires_count"]) == (at("2025-01-01T00:04:00"), 2)


def test_skip_with_no_worker_enqueues_only_the_first_catch_up_replay(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("nowork", "* * * * *", last="2025-01-01T00:00:00", overlap="skip", missed_fire_policy="catch_up")
    result = client.evaluate(now=at("2025-01-01T00:05:00"))
    # Replays of one pass overlap each other: the first is enqueued, the rest skipped.
    assert [j.fire_time for j in result.jobs] == ["2025-01-01T00:01:00Z"]
    assert len(result.skipped) == 4
    # The job still waits (no worker): every later instant is skipped too.
    assert client.evaluate(now=at("2025-01-01T00:07:00")).jobs == []
    assert fire_times(conn, "nowork") == ["2025-01-01T00:01:00Z"]
    assert _skips(conn, "nowork") == [f"2025-01-01T00:0{m}:00Z" for m in range(2, 8)]
    assert schedule_row(conn, "nowork")["last_enqueued_at"] == at("2025-01-01T00:07:00")


def test_allow_is_the_default_and_enqueues_behind_a_waiting_job(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("plain", "* * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up")
    assert schedule_row(conn, "plain")["overlap"] == "allow"
    assert len(client.evaluate(now=at("2025-01-01T00:03:00")).jobs) == 3
    assert _skips(conn, "plain") == []


def test_a_manual_trigger_counts_as_overlapping_for_skip(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("manual", "* * * * *", last="2025-01-01T00:00:00", overlap="skip")
    client.actions.trigger("manual", operator="ops@host")
    assert client.evaluate(now=at("2025-01-01T00:01:00")).jobs == []
    assert _skips(conn, "manual") == ["2025-01-01T00:01:00Z"]


def test_skip_enqueues_again_once_the_job_failed_for_good_but_not_while_retryable(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    def fail(job: Job) -> None:
        raise RuntimeError("boom")

    client.register_handler("test.job", fail)
    register("flaky", "* * * * *", last="2025-01-01T00:00:00", overlap="skip", max_attempts=2)
    client.evaluate(now=at("2025-01-01T00:01:00"))
    assert [state for _, state in client.work_once()] == ["retryable"]
    assert client.evaluate(now=at("2025-01-01T00:02:00")).jobs == []  # a retryable job overlaps
    force(conn, "UPDATE awa.jobs SET run_at = now() - interval '1 second'")
    assert [state for _, state in client.work_once()] == ["discarded"]
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:03:00")).jobs] == ["2025-01-01T00:03:00Z"]



def test_one_pass_decides_each_guarded_schedule_of_a_mixed_batch_by_its_own_jobs(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    # One statement for all of them. The probe reads jobs between the batch's first and
    # last guarded name (a range for the planner, issue 18): the guarded names sit at both
    # ends and in between allow schedules, with names that need quoting in array literals.
    cases = {  # name: (policy, jobs it has, enqueued?)
        " a first": ("skip", ["running"], False),
        "b, allow": ("allow", ["available"], True),
        'c "quoted"': ("buffer_one", ["running"], True),
        "d {braces}": ("buffer_one", ["running", "available"], False),
        "e idle": ("skip", ["completed"], True),
        "f\\back": ("skip", ["retryable"], False),
        "g allow": ("allow", ["running"], True),
        "zz last": ("skip", ["available"], False),
    }
    for name, (policy, _, _) in cases.items():
        register(name, "* * * * *", last="2025-01-01T00:00:00", overlap=policy)
    for name, (_, states, _) in cases.items():
        for state in states:
            force(conn, "INSERT INTO awa.jobs (kind, state, metadata) VALUES ('test.job', %s, "
                        "jsonb_build_object('cron_name', %s::text, 'cron_fire_time', 'earlier'))", (state, name))
    result = client.evaluate(now=at("2025-01-01T00:01:00"))
    assert sorted(j.name for j in result.jobs) == sorted(n for n, (_, _, fires) in cases.items() if fires)
    assert sorted(n for n, _ in result.skipped) == sorted(n for n, (_, _, fires) in cases.items() if not fires)
    assert result.lost_races == 0 and result.errors == []
    for name, (_, _, fires) in cases.items():
        assert _skips(conn, name) == ([] if fires else ["2025-01-01T00:01:00Z"]), name
        assert schedule_row(conn, name)["last_enqueued_at"] == at("2025-01-01T00:01:00"), name


# --- overlap: buffer_one -------------------------------------------------------------------


def test_buffer_one_with_a_slow_handler_keeps_one_job_waiting_behind_the_running_one(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    handler = SlowHandler()
    client.register_handler("test.job", handler)
    register("buf", "* * * * *", last="2025-01-01T00:00:00", overlap="buffer_one")
    client.evaluate(now=at("2025-01-01T00:01:00"))
    worker = _work_in_background(client)
    assert handler.started.wait(30)
    # 00:01 runs: 00:02 is buffered behind it, 00:03 finds one waiting and is skipped.
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:02:00")).jobs] == ["2025-01-01T00:02:00Z"]
    assert client.evaluate(now=at("2025-01-01T00:03:00")).jobs == []
    handler.release.set()
    worker.join(30)
    # 00:01 finished, 00:02 still waits (nobody claimed it): 00:04 is skipped too.
    assert client.evaluate(now=at("2025-01-01T00:04:00")).jobs == []
    assert [state for _, state in client.work_once()] == ["completed"]
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:05:00")).jobs] == ["2025-01-01T00:05:00Z"]
    assert fire_times(conn, "buf") == ["2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z", "2025-01-01T00:05:00Z"]
    assert _skips(conn, "buf") == ["2025-01-01T00:03:00Z", "2025-01-01T00:04:00Z"]
    assert handler.ran == ["2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z"]


def test_buffer_one_with_no_worker_enqueues_one_and_skips_the_rest(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("bufnw", "* * * * *", last="2025-01-01T00:00:00", overlap="buffer_one", missed_fire_policy="catch_up")
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:03:00")).jobs] == ["2025-01-01T00:01:00Z"]
    assert client.evaluate(now=at("2025-01-01T00:04:00")).jobs == []
    assert fire_times(conn, "bufnw") == ["2025-01-01T00:01:00Z"]
    assert _skips(conn, "bufnw") == ["2025-01-01T00:02:00Z", "2025-01-01T00:03:00Z", "2025-01-01T00:04:00Z"]


def test_an_unknown_overlap_policy_is_refused_in_code_and_in_sql(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    with pytest.raises(ValidationError,
                       match=r"^overlap: must be 'allow', 'skip', 'buffer_one' or 'replace', got 'sometimes'$"):
        client.periodic("bad", "* * * * *", "k", overlap="sometimes")
    register("good", "* * * * *")
    with pytest.raises(psycopg.errors.CheckViolation,
                       match=r"^overlap: must be 'allow', 'skip', 'buffer_one' or 'replace', got \"sometimes\""):
        conn.execute("UPDATE awa.cron_jobs SET overlap = 'sometimes' WHERE name = 'good'")
    assert schedule_row(conn, "good")["overlap"] == "allow"


# --- bounds --------------------------------------------------------------------------------


def test_start_at_exactly_on_an_instant_includes_it(client: Client, conn: Any, register: Any) -> None:
    register("s", "* * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up",
             start_at=at("2025-01-01T00:05:00"))
    assert client.evaluate(now=at("2025-01-01T00:04:59")).jobs == []
    result = client.evaluate(now=at("2025-01-01T00:07:00"))
    assert [j.fire_time for j in result.jobs] == [
        "2025-01-01T00:05:00Z", "2025-01-01T00:06:00Z", "2025-01-01T00:07:00Z"]


def test_start_at_one_microsecond_after_an_instant_excludes_it(client: Client, conn: Any, register: Any) -> None:
    register("s", "* * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up",
             start_at=at("2025-01-01T00:05:00") + timedelta(microseconds=1))
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:07:00")).jobs] == [
        "2025-01-01T00:06:00Z", "2025-01-01T00:07:00Z"]
    assert schedule_row(conn, "s")["finished_at"] is None


def test_end_at_exactly_on_an_instant_fires_it_and_finishes(client: Client, conn: Any, register: Any) -> None:
    register("e", "* * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up",
             end_at=at("2025-01-01T00:03:00"))
    result = client.evaluate(now=at("2025-01-01T00:10:00"))
    assert [j.fire_time for j in result.jobs] == [
        "2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z", "2025-01-01T00:03:00Z"]
    row = schedule_row(conn, "e")
    assert (row["finished_at"], row["fires_count"], row["last_enqueued_at"]) == (
        at("2025-01-01T00:10:00"), 3, at("2025-01-01T00:03:00"))
    assert client.evaluate(now=at("2025-01-01T00:20:00")).examined == 0  # not even fetched
    info = client.reads.get_schedule("e")
    assert (info.state, info.fault) == ("finished", None)
    assert client.reads.next_fires("e") == []


def test_end_at_with_coalesce_fires_the_last_instant_within_it(client: Client, conn: Any, register: Any) -> None:
    register("ec", "* * * * *", last="2025-01-01T00:00:00", end_at=at("2025-01-01T00:03:30"))
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:10:00")).jobs] == ["2025-01-01T00:03:00Z"]
    assert schedule_row(conn, "ec")["finished_at"] == at("2025-01-01T00:10:00")


def test_end_at_one_microsecond_before_an_instant_finishes_after_the_previous(
    client: Client, conn: Any, register: Any
) -> None:
    register("e2", "* * * * *", last="2025-01-01T00:00:00",
             end_at=at("2025-01-01T00:02:00") - timedelta(microseconds=1))
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:01:00")).jobs] == ["2025-01-01T00:01:00Z"]
    # The next instant (00:02) is past the end: finished in the same statement as the fire.
    assert schedule_row(conn, "e2")["finished_at"] == at("2025-01-01T00:01:00")


def test_end_at_before_any_fire_finishes_without_firing(client: Client, conn: Any, register: Any) -> None:
    register("never", "0 * * * *", created="2025-01-01T00:30:00", end_at=at("2025-01-01T00:45:00"))
    result = client.evaluate(now=at("2025-01-01T00:31:00"))
    assert (result.jobs, result.lost_races) == ([], 0)
    row = schedule_row(conn, "never")
    assert (row["finished_at"], row["fires_count"], row["last_enqueued_at"]) == (at("2025-01-01T00:31:00"), 0, None)


def test_max_fires_counts_scheduled_fires_only(client: Client, conn: Any, register: Any) -> None:
    register("m", "* * * * *", last="2025-01-01T00:00:00", max_fires=2)
    client.actions.trigger("m", operator="ops@host")  # manual triggers do not count
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:01:00")).jobs] == ["2025-01-01T00:01:00Z"]
    assert schedule_row(conn, "m")["finished_at"] is None
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:02:00")).jobs] == ["2025-01-01T00:02:00Z"]
    row = schedule_row(conn, "m")
    assert (row["fires_count"], row["finished_at"]) == (2, at("2025-01-01T00:02:00"))
    assert client.evaluate(now=at("2025-01-01T00:03:00")).jobs == []
    assert fire_times(conn, "m") == [None, "2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z"]


def test_paging_next_fires_forward_stops_at_max_fires(client: Client, conn: Any, register: Any) -> None:
    """The detail pages the next fires forward (`after` = the last one shown): a later page
    counts the fires of the earlier ones against max_fires, so five fires are shown in all."""
    register("mp", "* * * * *", max_fires=5)
    first = client.reads.next_fires("mp", 3)
    second = client.reads.next_fires("mp", 3, after=first[-1].utc)
    assert client.reads.next_fires("mp", 3, after=second[-1].utc) == []
    start = first[0].utc
    assert start.second == 0 and start.microsecond == 0
    assert [f.utc for f in first + second] == [start + timedelta(minutes=k) for k in range(5)]


def test_max_fires_cuts_a_catch_up_replay(client: Client, conn: Any, register: Any) -> None:
    register("mc", "* * * * *", last="2025-01-01T00:00:00", max_fires=3, missed_fire_policy="catch_up")
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:05:00")).jobs] == [
        "2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z", "2025-01-01T00:03:00Z"]
    row = schedule_row(conn, "mc")
    assert (row["fires_count"], row["finished_at"]) == (3, at("2025-01-01T00:05:00"))
    # The ledger shows no due instant after the count ran out.
    verdicts = client.reads.ledger("mc", since=at("2025-01-01T00:00:30"), now=at("2025-01-01T00:05:00"))
    assert [v.instant for v in verdicts] == [
        at("2025-01-01T00:01:00"), at("2025-01-01T00:02:00"), at("2025-01-01T00:03:00")]


def test_max_fires_with_skip_counts_enqueued_fires_not_skipped_instants(
    client: Client, conn: Any, register: Any
) -> None:
    register("ms", "* * * * *", last="2025-01-01T00:00:00", max_fires=2, overlap="skip",
             missed_fire_policy="catch_up")
    assert len(client.evaluate(now=at("2025-01-01T00:03:00")).jobs) == 1
    assert schedule_row(conn, "ms")["fires_count"] == 1
    conn.execute("UPDATE awa.jobs SET state = 'completed', finalized_at = now()")
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:04:00")).jobs] == ["2025-01-01T00:04:00Z"]
    row = schedule_row(conn, "ms")
    assert (row["fires_count"], row["finished_at"]) == (2, at("2025-01-01T00:04:00"))


def test_changed_bounds_reopen_a_finished_schedule(client: Client, conn: Any, register: Any) -> None:
    register("again", "* * * * *", last="2025-01-01T00:00:00", max_fires=1)
    client.evaluate(now=at("2025-01-01T00:01:00"))
    assert schedule_row(conn, "again")["finished_at"] == at("2025-01-01T00:01:00")
    redeclared = Client(client.dsn)
    try:
        redeclared.periodic("again", "* * * * *", "test.job", max_fires=2)
        assert redeclared.sync() == {"inserted": 0, "updated": 1}
    finally:
        redeclared.close()
    row = schedule_row(conn, "again")
    assert (row["finished_at"], row["next_fire_at"], row["max_fires"]) == (None, None, 2)
    audit = conn.execute("SELECT operator, action, before, after FROM awa.audit_log WHERE target = 'again' "
                         "ORDER BY id").fetchall()
    assert [(a["operator"], a["action"], a["before"], a["after"]) for a in audit] == [
        ("awa-sync", "sync_definition", {"max_fires": 1}, {"max_fires": 2})]
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:02:00")).jobs] == ["2025-01-01T00:02:00Z"]
    assert schedule_row(conn, "again")["finished_at"] == at("2025-01-01T00:02:00")


def test_bounds_are_refused_with_one_line_naming_the_value() -> None:
    with pytest.raises(ValidationError, match=r"^start_at: 2025-01-02T00:00:00\+00:00 is after end_at "
                                              r"2025-01-01T00:00:00\+00:00"):
        Schedule.build("b", "* * * * *", "k", start_at=at("2025-01-02T00:00:00"), end_at=at("2025-01-01T00:00:00"))
    with pytest.raises(ValidationError, match=r"^max_fires: must be an integer 1\.\.2147483647, got 0"):
        Schedule.build("b", "* * * * *", "k", max_fires=0)
    with pytest.raises(ValidationError, match=r"^end_at: must be a timezone-aware datetime"):
        Schedule.build("b", "* * * * *", "k", end_at=at("2025-01-01T00:00:00").replace(tzinfo=None))


def test_a_hand_written_bad_bound_is_refused_by_the_database(conn: Any, register: Any) -> None:
    register("hb", "* * * * *")
    with pytest.raises(psycopg.errors.CheckViolation, match=r"^max_fires: must be an integer 1\.\.2147483647, got 0"):
        conn.execute("UPDATE awa.cron_jobs SET max_fires = 0 WHERE name = 'hb'")
    with pytest.raises(psycopg.errors.CheckViolation, match=r"^start_at: 2025-02-01 00:00:00\+00 is after end_at "
                                                            r"2025-01-01 00:00:00\+00"):
        conn.execute("UPDATE awa.cron_jobs SET start_at = '2025-02-01Z', end_at = '2025-01-01Z' WHERE name = 'hb'")
    with pytest.raises(psycopg.errors.CheckViolation, match=r"^start_at/end_at: outside the supported range"):
        conn.execute("UPDATE awa.cron_jobs SET end_at = 'infinity' WHERE name = 'hb'")


def test_declared_bounds_agree_with_the_stored_row(client: Client, conn: Any) -> None:
    """The definition JSON and the stored columns render instants alike (sync writes once)."""
    client.periodic("agree", "* * * * *", "k", start_at=at("2025-01-01T00:00:00") + timedelta(microseconds=500000),
                    end_at=at("2026-01-01T00:00:00"), max_fires=7, overlap="buffer_one")
    assert client.sync() == {"inserted": 1, "updated": 0}
    assert client.sync() == {"inserted": 0, "updated": 0}
    row = schedule_row(conn, "agree")
    assert (row["start_at"], row["end_at"], row["max_fires"], row["overlap"]) == (
        at("2025-01-01T00:00:00") + timedelta(microseconds=500000), at("2026-01-01T00:00:00"), 7, "buffer_one")


def test_skip_records_past_the_horizon_are_pruned_and_read_unknown(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("old", "* * * * *", last="2025-01-01T00:00:00", overlap="skip", missed_fire_policy="catch_up")
    client.evaluate(now=at("2025-01-01T00:03:00"))
    assert _skips(conn, "old") == ["2025-01-01T00:02:00Z", "2025-01-01T00:03:00Z"]
    conn.execute("UPDATE awa.fire_skips SET skipped_at = now() - interval '15 days'")
    client.actions.prune_jobs(timedelta(days=14))
    assert _skips(conn, "old") == []
    mark = conn.execute("SELECT pruned_through FROM awa.ledger_pruned WHERE cron_name = 'old'").fetchone()
    assert mark == {"pruned_through": at("2025-01-01T00:03:00")}
    assert [(v.verdict, v.reason) for v in client.reads.ledger("old", since=at("2025-01-01T00:01:30"),
                                                          now=at("2025-01-01T00:03:30"))] == [
        ("unknown", "pruned"), ("unknown", "pruned")]


def test_a_finished_schedule_is_neither_active_nor_late_in_filters(client: Client, conn: Any, register: Any) -> None:
    from awa_tui.filters import parse

    register("done", "* * * * *", last="2025-01-01T00:00:00", max_fires=1)
    register("stuck", "* * * * *", last="2025-01-01T00:00:00")
    client.evaluate(now=at("2025-01-01T00:01:00"))  # fires both; `done` finishes
    conn.execute("UPDATE awa.cron_jobs SET next_fire_at = '2025-01-01T00:02:00Z'")
    later = at("2025-01-01T01:00:00")  # both hints long past: `stuck` is late, `done` is not
    names = {q: [r.name for r in client.reads.list_schedules(where=parse(q), now=later)]
             for q in ("late", "active", "state:finished", "finished")}
    assert names == {"late": ["stuck"], "active": ["stuck"], "state:finished": ["done"], "finished": ["done"]}
