"""The fire ledger's verdicts, pinned with exact instants on a real Postgres.

Expected verdicts are written out by hand from the scenario (instants, terms, jobs), never
computed by the ledger itself. Scenarios with pauses and retirements run on the database's
own clock (the audit trail stamps DB time and cannot be backdated): they use a schedule
firing every second and wait for real boundaries to pass.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
from helpers import wait_for
from ledger_helpers import at, audit_at, db_now, job_created, lead, register, whole_second_after

from awa_tui import Client

S = timedelta(seconds=1)


def _rows(verdicts: list[Any]) -> list[tuple[Any, ...]]:
    return [(v.instant, v.verdict, v.job_id, v.into, v.folded, v.gap_from, v.gap_until) for v in verdicts]


def _job_ids(conn: psycopg.Connection[Any], name: str) -> dict[str, int]:
    rows = conn.execute(
        "SELECT id, metadata ->> 'cron_fire_time' AS fire FROM awa.jobs WHERE metadata ->> 'cron_name' = %s",
        (name,),
    ).fetchall()
    return {r["fire"]: r["id"] for r in rows}


# --- leader absent for 90 s -------------------------------------------------------------


def _leader_gap(client: Client, conn: psycopg.Connection[Any], policy: str) -> None:
    """Every 30 s from 00:00:00; leadership 00:00:00-00:01:00, none for 90 s, again from
    00:02:30, whose first pass runs at 00:02:30."""
    register(client, conn, "half", "*/30 * * * * *", at("2025-01-01T00:00:00"), missed_fire_policy=policy)
    lead(conn, at("2025-01-01T00:00:00"), lease=timedelta(seconds=60))
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:00:00")).jobs] == ["2025-01-01T00:00:00Z"]
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:00:30")).jobs] == ["2025-01-01T00:00:30Z"]
    lead(conn, at("2025-01-01T00:02:30"))
    client.evaluate(now=at("2025-01-01T00:02:30"))


def test_leader_absent_90s_with_coalesce(client: Client, conn: psycopg.Connection[Any]) -> None:
    _leader_gap(client, conn, "coalesce")
    ids = _job_ids(conn, "half")
    assert sorted(ids) == ["2025-01-01T00:00:00Z", "2025-01-01T00:00:30Z", "2025-01-01T00:02:30Z"]
    gap_from, gap_until, into = at("2025-01-01T00:01:00"), at("2025-01-01T00:02:30"), at("2025-01-01T00:02:30")
    verdicts = client.reads.ledger("half", now=at("2025-01-01T00:03:10"))
    assert _rows(verdicts) == [
        (at("2025-01-01T00:00:00"), "fired", ids["2025-01-01T00:00:00Z"], None, 0, None, None),
        (at("2025-01-01T00:00:30"), "fired", ids["2025-01-01T00:00:30Z"], None, 0, None, None),
        # 00:01:00 is the instant the first term's lease ran out: nobody led at it.
        (at("2025-01-01T00:01:00"), "no_leader", None, into, 3, gap_from, gap_until),
        (at("2025-01-01T00:01:30"), "no_leader", None, into, 3, gap_from, gap_until),
        (at("2025-01-01T00:02:00"), "no_leader", None, into, 3, gap_from, gap_until),
        (at("2025-01-01T00:02:30"), "fired", ids["2025-01-01T00:02:30Z"], None, 3, None, None),
        # Due 10 s ago under a leader, no pass since: the next pass decides.
        (at("2025-01-01T00:03:00"), "pending", None, None, 0, None, None),
    ]
    late = verdicts[5]
    assert late.lateness_s == (job_created(conn, late.job_id) - at("2025-01-01T00:02:30")).total_seconds()
    text = client.reads.why("half", at=at("2025-01-01T00:01:30"), now=at("2025-01-01T00:03:10")).text
    assert text == (
        "half: due instant 2025-01-01T00:01:30Z: not fired: no runtime held leadership from "
        "2025-01-01T00:01:00Z until 2025-01-01T00:02:30Z; coalesced into the fire at 2025-01-01T00:02:30Z "
        "(3 instants)."
    )


def test_leader_absent_90s_with_catch_up(client: Client, conn: psycopg.Connection[Any]) -> None:
    _leader_gap(client, conn, "catch_up")
    ids = _job_ids(conn, "half")
    fired = ["2025-01-01T00:00:00", "2025-01-01T00:00:30", "2025-01-01T00:01:00", "2025-01-01T00:01:30",
             "2025-01-01T00:02:00", "2025-01-01T00:02:30"]
    verdicts = client.reads.ledger("half", now=at("2025-01-01T00:02:40"))
    assert _rows(verdicts) == [(at(t), "fired", ids[t + "Z"], None, 0, None, None) for t in fired]
    # The three instants of the gap fired late, at the new leader's first pass.
    for v in verdicts[2:5]:
        assert v.lateness_s == (job_created(conn, v.job_id) - v.instant).total_seconds()
        assert job_created(conn, v.job_id) == job_created(conn, verdicts[5].job_id)


def test_no_leader_while_still_absent_has_no_fire_to_fold_into(client: Client, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "half", "*/30 * * * * *", at("2025-01-01T00:00:00"))
    lead(conn, at("2025-01-01T00:00:00"), lease=timedelta(seconds=45))
    client.evaluate(now=at("2025-01-01T00:00:00"))
    client.evaluate(now=at("2025-01-01T00:00:30"))
    verdicts = client.reads.ledger("half", now=at("2025-01-01T00:01:40"))
    assert [(v.instant, v.verdict, v.gap_from, v.gap_until, v.into) for v in verdicts[2:]] == [
        (at("2025-01-01T00:01:00"), "no_leader", at("2025-01-01T00:00:45"), None, None),
        (at("2025-01-01T00:01:30"), "no_leader", at("2025-01-01T00:00:45"), None, None),
    ]
    assert client.reads.why("half", now=at("2025-01-01T00:01:40")).text == (
        "half: last due instant 2025-01-01T00:01:30Z: not fired: no runtime held leadership from "
        "2025-01-01T00:00:45Z and none holds it now. Next due 2025-01-01T00:02:00Z."
    )


# --- a paused queue, a failed job, a trigger ---------------------------------------------


def test_a_paused_queue_does_not_stop_the_fire(client: Client, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "minutely", "* * * * *", at("2025-01-01T00:00:30"), queue="reports")
    lead(conn, at("2025-01-01T00:00:00"))
    client.actions.queue_pause("reports", operator="ops-ann")
    [job] = client.evaluate(now=at("2025-01-01T00:01:00")).jobs
    [v] = client.reads.ledger("minutely", now=at("2025-01-01T00:01:30"))
    assert (v.instant, v.verdict, v.job_id, v.job_state, v.result, v.queue, v.queue_paused_by) == (
        at("2025-01-01T00:01:00"), "fired", job.id, "available", "waiting", "reports", "ops-ann")
    late = (job_created(conn, job.id) - at("2025-01-01T00:01:00")).total_seconds()
    late_text = f"{late:.3f}".rstrip("0").rstrip(".")
    assert client.reads.why("minutely", now=at("2025-01-01T00:01:30")).text == (
        f"minutely: last due instant 2025-01-01T00:01:00Z: fired (job {job.id}, {late_text}s late), waiting "
        "to run; its queue reports is paused (by ops-ann). Next due 2025-01-01T00:02:00Z."
    )


def test_a_failed_job_with_two_attempts_and_their_errors(client: Client, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "flaky", "* * * * *", at("2025-01-01T00:00:30"), kind="flaky.run", max_attempts=2)
    lead(conn, at("2025-01-01T00:00:00"))
    calls: list[int] = []

    def explode(job: Any) -> None:
        calls.append(job.attempt)
        raise RuntimeError(f"disk full on attempt {job.attempt}")

    client.register_handler("flaky.run", explode)
    [job] = client.evaluate(now=at("2025-01-01T00:01:00")).jobs
    assert [state for _, state in client.work_once()] == ["retryable"]
    conn.execute("UPDATE awa.jobs SET run_at = now() WHERE id = %s", (job.id,))  # skip the backoff
    assert [state for _, state in client.work_once()] == ["discarded"]
    assert calls == [1, 2]
    detail = client.reads.job_detail(job.id)
    assert (detail.job.state, detail.job.result, detail.job.attempt, detail.job.last_error) == (
        "discarded", "failed", 2, "RuntimeError: disk full on attempt 2")
    assert [(a.attempt, a.error, a.runtime) for a in detail.attempts] == [
        (1, "RuntimeError: disk full on attempt 1", str(client.identity.instance_id)),
        (2, "RuntimeError: disk full on attempt 2", str(client.identity.instance_id)),
    ]
    for a in detail.attempts:
        assert a.traceback is not None and "in explode" in a.traceback and a.traceback.endswith(
            f"RuntimeError: disk full on attempt {a.attempt}\n")
        assert a.started_at is not None and a.ended_at is not None and a.started_at <= a.ended_at
    [v] = client.reads.ledger("flaky", now=at("2025-01-01T00:01:30"))
    assert (v.verdict, v.job_id, v.job_state, v.result, v.error) == (
        "fired", job.id, "discarded", "failed", "RuntimeError: disk full on attempt 2")
    assert client.reads.last_results(["flaky"])["flaky"].result == "failed"


def test_a_trigger_is_a_manual_entry(client: Client, conn: psycopg.Connection[Any]) -> None:
    created = whole_second_after(db_now(conn)) - timedelta(hours=2)
    register(client, conn, "hourly", "0 * * * *", created)
    lead(conn, created - timedelta(minutes=5))
    job = client.actions.trigger("hourly", operator="ops-bob")
    verdicts = client.reads.ledger("hourly")
    manual = [v for v in verdicts if v.verdict == "manual"]
    assert [(v.instant, v.job_id, v.by, v.result) for v in manual] == [
        (job.created_at, job.id, "ops-bob", "waiting")]
    # The due instants of the last two hours were never evaluated: pending or folded,
    # none of them is the manual job.
    assert all(v.job_id is None for v in verdicts if v.verdict != "manual")


# --- pauses and retirements: the database's own clock -----------------------------------


def test_paused_over_two_boundaries(client: Client, conn: psycopg.Connection[Any]) -> None:
    start = whole_second_after(db_now(conn))
    register(client, conn, "tick", "* * * * * *", start - 3 * S)
    lead(conn, start - 10 * S)
    client.evaluate(now=start - 3 * S)  # fires start-3s
    client.actions.pause("tick", operator="ops-cat")
    paused = audit_at(conn, "tick", "pause")
    first = whole_second_after(paused)
    wait_for(lambda: db_now(conn) >= first + S + timedelta(milliseconds=50), what="two boundaries while paused")
    client.actions.resume("tick", operator="ops-cat")
    resumed = audit_at(conn, "tick", "resume")
    after_resume = whole_second_after(resumed)
    wait_for(lambda: db_now(conn) >= after_resume + timedelta(milliseconds=50), what="a boundary after resume")
    result = client.evaluate(now=after_resume)  # coalesce: only the latest instant
    [fired] = result.jobs
    assert fired.fire_time == after_resume.strftime("%Y-%m-%dT%H:%M:%SZ")
    verdicts = client.reads.ledger("tick", now=after_resume)
    expected: list[tuple[Any, ...]] = []
    t = start - 3 * S
    while t <= after_resume:
        if t == start - 3 * S or t == after_resume:
            expected.append((t, "fired", None))
        elif paused <= t < resumed:
            expected.append((t, "skipped_paused", "ops-cat"))
        else:  # between the first fire and the pause, or the pause and the last fire
            expected.append((t, "coalesced", None))
        t += S
    assert [(v.instant, v.verdict, v.by) for v in verdicts] == expected
    assert sum(1 for v in verdicts if v.verdict == "skipped_paused") >= 2
    assert all(v.since == paused for v in verdicts if v.verdict == "skipped_paused")


def test_retired_and_restored(client: Client, conn: psycopg.Connection[Any]) -> None:
    start = whole_second_after(db_now(conn))
    register(client, conn, "tick", "* * * * * *", start - 2 * S)
    lead(conn, start - 10 * S)
    client.evaluate(now=start - 2 * S)
    client.actions.retire("tick", operator="ops-dan")
    retired = audit_at(conn, "tick", "retire")
    wait_for(lambda: db_now(conn) >= whole_second_after(retired) + S + timedelta(milliseconds=50),
             what="two boundaries while retired")
    client.actions.restore("tick", operator="ops-dan")
    restored = audit_at(conn, "tick", "restore")
    nxt = whole_second_after(restored)
    wait_for(lambda: db_now(conn) >= nxt + timedelta(milliseconds=50), what="a boundary after restore")
    [fired] = client.evaluate(now=nxt).jobs
    verdicts = client.reads.ledger("tick", now=nxt)
    expected: list[tuple[Any, ...]] = []
    t = start - 2 * S
    while t <= nxt:
        if t in (start - 2 * S, nxt):
            expected.append((t, "fired", None))
        elif retired <= t < restored:
            expected.append((t, "skipped_retired", "ops-dan"))
        else:
            expected.append((t, "coalesced", None))
        t += S
    assert [(v.instant, v.verdict, v.by) for v in verdicts] == expected
    assert sum(1 for v in verdicts if v.verdict == "skipped_retired") >= 2
    assert verdicts[-1].job_id == fired.id


def test_a_redefinition_changes_the_due_instants_from_its_moment(
        client: Client, dsn: str, conn: psycopg.Connection[Any]) -> None:
    hour = db_now(conn).replace(minute=0, second=0, microsecond=0)
    register(client, conn, "report", "0 * * * *", hour - timedelta(hours=3))
    lead(conn, hour - timedelta(hours=4), lease=timedelta(days=1))
    later = Client(dsn, operator="tester@test")
    try:
        later.periodic("report", "30 * * * *", "test.job")
        later.sync()  # redefined now (DB time): on the hour before, at half past after
    finally:
        later.close()
    redefined = conn.execute(
        "SELECT at FROM awa.audit_log WHERE target = 'report' AND after ? 'cron_expr' ORDER BY id DESC LIMIT 1"
    ).fetchone()
    assert redefined is not None
    changed = redefined["at"]
    now = hour + timedelta(hours=2, minutes=10)
    old = [hour - timedelta(hours=k) for k in (3, 2, 1, 0) if hour - timedelta(hours=k) < changed]
    new = [t for t in (hour + timedelta(minutes=30), hour + timedelta(hours=1, minutes=30)) if t >= changed]
    verdicts = client.reads.ledger("report", now=now)
    assert [v.instant for v in verdicts] == old + new
    assert {v.verdict for v in verdicts} == {"pending"}  # nothing evaluated, a leader all along
