"""The schedules panel's outcome strip (issue 13): the verdict of each of a schedule's
last 20 due instants, one character each, read for a whole page at once.

Every expected strip is written out by hand from the scenario. Each one is also checked
against the ledger itself (the detail screen's verdicts of the same instants), so the page's
set-based read and the ledger can never tell two stories.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg
from helpers import wait_for
from ledger_helpers import at, audit_at, db_now, force, lead, register, whole_second_after

from awa_tui import Client
from awa_tui.engine.ledger.models import MANUAL, instant_outcome
from awa_tui.tui.formatting import outcome_strip

S = timedelta(seconds=1)


def strip(client: Client, name: str, now: datetime) -> str:
    """The page's strip of `name` at `now`, after checking it instant by instant against
    the ledger: the last 20 of its verdicts (no manual entries), as the detail screen's
    ledger of the last 50 gives them."""
    [row] = [r for r in client.reads.schedule_page(now=now).rows if r.name == name]
    last20 = [v for v in client.reads.outcome_strip(name, count=20, now=now)]
    detail = {v.instant: v for v in client.reads.ledger(name, limit=50, now=now) if v.verdict != MANUAL}
    assert [(v.instant, v.verdict, v.job_state) for v in last20] == [
        (v.instant, detail[v.instant].verdict, detail[v.instant].job_state) for v in last20]
    assert row.outcomes == tuple(instant_outcome(v.verdict, v.job_state) for v in last20)
    return outcome_strip(row.outcomes)


def states(conn: psycopg.Connection[Any], name: str) -> dict[str, int]:
    rows = conn.execute("SELECT id, metadata ->> 'cron_fire_time' AS fire FROM awa.jobs "
                        "WHERE metadata ->> 'cron_name' = %s", (name,)).fetchall()
    return {r["fire"]: r["id"] for r in rows}


def test_paused_over_two_boundaries(client: Client, conn: psycopg.Connection[Any]) -> None:
    start = whole_second_after(db_now(conn))
    register(client, conn, "tick", "* * * * * *", start - 3 * S)
    lead(conn, start - 10 * S)
    client.evaluate(now=start - 3 * S)
    client.actions.pause("tick", operator="ops-cat")
    paused = audit_at(conn, "tick", "pause")
    wait_for(lambda: db_now(conn) >= whole_second_after(paused) + S + timedelta(milliseconds=50),
             what="two boundaries while paused")
    client.actions.resume("tick", operator="ops-cat")
    resumed = audit_at(conn, "tick", "resume")
    nxt = whole_second_after(resumed)
    wait_for(lambda: db_now(conn) >= nxt + timedelta(milliseconds=50), what="a boundary after resume")
    assert len(client.evaluate(now=nxt).jobs) == 1
    expected, t = "", start - 3 * S
    while t <= nxt:  # fired: waiting (no worker); paused: skipped; the rest folded into the last fire
        expected += "w" if t in (start - 3 * S, nxt) else "-" if paused <= t < resumed else "~"
        t += S
    assert expected.count("-") >= 2 and len(expected) <= 20
    assert strip(client, "tick", nxt) == expected


def test_retired_then_restored(client: Client, conn: psycopg.Connection[Any]) -> None:
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
    client.evaluate(now=nxt)
    expected, t = "", start - 2 * S
    while t <= nxt:
        expected += "w" if t in (start - 2 * S, nxt) else "-" if retired <= t < restored else "~"
        t += S
    assert expected.count("-") >= 2
    assert strip(client, "tick", nxt) == expected


def _leader_gap(client: Client, conn: psycopg.Connection[Any], policy: str) -> None:
    """Every 30 s from 00:00:00; led 00:00:00-00:01:00, nobody for 90 s, led again from
    00:02:30 (its first pass then)."""
    register(client, conn, "half", "*/30 * * * * *", at("2025-01-01T00:00:00"), missed_fire_policy=policy)
    lead(conn, at("2025-01-01T00:00:00"), lease=timedelta(seconds=60))
    client.evaluate(now=at("2025-01-01T00:00:00"))
    client.evaluate(now=at("2025-01-01T00:00:30"))
    lead(conn, at("2025-01-01T00:02:30"))
    client.evaluate(now=at("2025-01-01T00:02:30"))


def test_leader_absent_90s_with_coalesce(client: Client, conn: psycopg.Connection[Any]) -> None:
    _leader_gap(client, conn, "coalesce")
    # 00:00, 00:30 fired; 01:00, 01:30, 02:00 nobody led; 02:30 fired; 03:00 due, no pass yet.
    assert strip(client, "half", at("2025-01-01T00:03:10")) == "ww???w_"


def test_leader_absent_90s_with_catch_up(client: Client, conn: psycopg.Connection[Any]) -> None:
    _leader_gap(client, conn, "catch_up")
    # The gap's three instants fired late, at the new leader's first pass: every one fired.
    assert strip(client, "half", at("2025-01-01T00:02:40")) == "wwwwww"


def test_a_failed_job_with_two_attempts(client: Client, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "flaky", "* * * * *", at("2025-01-01T00:00:30"), kind="flaky.run", max_attempts=2)
    lead(conn, at("2025-01-01T00:00:00"))

    def explode(job: Any) -> None:
        raise RuntimeError(f"disk full on attempt {job.attempt}")

    client.register_handler("flaky.run", explode)
    [job] = client.evaluate(now=at("2025-01-01T00:01:00")).jobs
    assert [state for _, state in client.work_once()] == ["retryable"]
    assert strip(client, "flaky", at("2025-01-01T00:01:30")) == "r"  # failed, will run again
    conn.execute("UPDATE awa.jobs SET run_at = now() WHERE id = %s", (job.id,))  # skip the backoff
    assert [state for _, state in client.work_once()] == ["discarded"]
    assert strip(client, "flaky", at("2025-01-01T00:01:30")) == "x"  # failed for good


def test_running_waiting_and_cancelled_jobs(client: Client, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "jobs", "* * * * *", at("2025-01-01T00:00:30"))
    lead(conn, at("2025-01-01T00:00:00"))
    for minute in (1, 2, 3):
        client.evaluate(now=at(f"2025-01-01T00:0{minute}:00"))
    ids = states(conn, "jobs")
    conn.execute("UPDATE awa.jobs SET state = 'running', attempt = 1 WHERE id = %s", (ids["2025-01-01T00:01:00Z"],))
    client.actions.cancel_job(ids["2025-01-01T00:03:00Z"], operator="ops-eve")
    client.actions.trigger("jobs", operator="ops-eve")  # a manual trigger is no due instant: not in the strip
    assert strip(client, "jobs", at("2025-01-01T00:03:30")) == ">wc"


def test_a_skipped_overlap_instant(client: Client, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "overlap", "* * * * *", at("2025-01-01T00:00:30"), overlap="skip")
    lead(conn, at("2025-01-01T00:00:00"))
    client.evaluate(now=at("2025-01-01T00:01:00"))
    assert client.evaluate(now=at("2025-01-01T00:02:00")).skipped == [("overlap", "2025-01-01T00:02:00.000000+00:00")]
    # 00:01's job still waits: the overlap policy kept 00:02 out.
    assert strip(client, "overlap", at("2025-01-01T00:02:30")) == "w-"


def test_a_schedule_created_five_minutes_ago_has_five_instants(client: Client, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "young", "* * * * *", at("2025-01-01T00:00:30"))
    lead(conn, at("2025-01-01T00:00:00"))
    client.evaluate(now=at("2025-01-01T00:01:00"))
    client.evaluate(now=at("2025-01-01T00:03:00"))  # coalesce: 00:02 folds into 00:03's fire
    # 00:04 and 00:05 are due with no pass since; nothing before 00:00:30 was due.
    assert strip(client, "young", at("2025-01-01T00:05:30")) == "w~w__"


def test_a_backfilled_instant_shows_its_job(client: Client, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "hourly", "0 * * * *", at("2025-01-01T00:00:00"))
    lead(conn, at("2025-01-01T00:00:00"), lease=timedelta(days=1))
    client.evaluate(now=at("2025-01-01T01:00:00"))  # coalesce: 00:00 folds into 01:00's fire
    client.evaluate(now=at("2025-01-01T03:30:00"))  # and 02:00 into 03:00's
    assert strip(client, "hourly", at("2025-01-01T03:30:00")) == "~w~w"
    result = client.actions.backfill("hourly", at("2025-01-01T02:00:00"), at("2025-01-01T02:00:00"),
                                     operator="ops@host",
                             now=at("2025-01-01T03:30:00"))
    conn.execute("UPDATE awa.jobs SET state = 'completed' WHERE id = %s", (result.job_ids[0],))
    assert strip(client, "hourly", at("2025-01-01T03:30:00")) == "~w.w"  # 02:00: its job's outcome


def test_a_broken_row_has_no_strip_and_the_others_keep_theirs(client: Client, conn: psycopg.Connection[Any]) -> None:
    for name in ("bad-expr", "bad-created", "good"):
        register(client, conn, name, "* * * * *", at("2025-01-01T00:00:30"))
    lead(conn, at("2025-01-01T00:00:00"))
    client.evaluate(now=at("2025-01-01T00:01:00"))
    force(conn, "UPDATE awa.cron_jobs SET cron_expr = 'every day at noon' WHERE name = 'bad-expr'")
    force(conn, "UPDATE awa.cron_jobs SET created_at = 'infinity' WHERE name = 'bad-created'")
    page = client.reads.schedule_page(now=at("2025-01-01T00:01:30"))
    assert {r.name: (bool(r.fault), outcome_strip(r.outcomes)) for r in page.rows} == {
        "bad-expr": (True, ""), "bad-created": (True, ""), "good": (False, "w")}


def test_hand_written_fire_times_are_read_as_the_ledger_reads_them(
        client: Client, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "odd", "* * * * *", at("2025-01-01T00:00:30"))
    lead(conn, at("2025-01-01T00:00:00"))
    for minute in (1, 2, 3):
        client.evaluate(now=at(f"2025-01-01T00:0{minute}:00"))
    ids = states(conn, "odd")
    # 00:01 in another spelling of the same instant (fired); 00:02 an impossible date and
    # 00:03 no instant at all: jobs for no due instant, so those two were never fired.
    for fire, text in (("00:01", "2025-01-01 00:01:00+00"), ("00:02", "2025-02-30T00:02:00Z"),
                       ("00:03", "soon")):
        force(conn, "UPDATE awa.jobs SET metadata = metadata || jsonb_build_object('cron_fire_time', %s::text) "
                    "WHERE id = %s", (text, ids[f"2025-01-01T{fire}:00Z"]))
    assert strip(client, "odd", at("2025-01-01T00:03:30")) == "w__"


def test_instants_older_than_the_catch_up_window(client: Client, conn: psycopg.Connection[Any]) -> None:
    # S66: the pass at 00:06:30 replays 00:05 and 00:06 (within 2 minutes) and skips 00:02 .. 00:04.
    register(client, conn, "bounded", "* * * * *", at("2025-01-01T00:00:30"), missed_fire_policy="catch_up",
             catchup_window="2m")
    lead(conn, at("2025-01-01T00:00:00"))
    client.evaluate(now=at("2025-01-01T00:01:00"))
    assert client.evaluate(now=at("2025-01-01T00:06:30")).too_old == [
        ("bounded", "2025-01-01T00:04:00.000000+00:00")]
    assert strip(client, "bounded", at("2025-01-01T00:06:40")) == "w---ww"
    verdicts = [v.verdict for v in client.reads.ledger("bounded", now=at("2025-01-01T00:06:40"))]
    assert verdicts == ["fired", "skipped_too_old", "skipped_too_old", "skipped_too_old", "fired", "fired"]
