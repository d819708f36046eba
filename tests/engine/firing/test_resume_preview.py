"""S16: the resume preview says exactly what the first pass after resuming fires.

Expected instants are worked out by hand from each cron expression; the last test
resumes for real and runs the evaluator at the same `now` to hold the preview to it."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from engine_helpers import at, fire_times, job_count, schedule_row

from awa_tui import Client
from awa_tui.engine.core.errors import Conflict, NotFound, ValidationError
from awa_tui.engine.firing.preview import ResumePreview, resume_preview


def _audit_count(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone()
    assert row is not None
    return int(row["n"])


def test_catch_up_lists_every_missed_instant(client: Client, conn: Any, register: Any) -> None:
    # Hourly, last fired 00:00; paused; at 03:30 the missed hours are 01:00, 02:00, 03:00.
    register("hourly", "0 * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up")
    client.actions.pause("hourly")
    preview = client.reads.resume_preview("hourly", now=at("2025-01-01T03:30:00"))
    assert preview == ResumePreview(
        name="hourly", policy="catch_up", now=at("2025-01-01T03:30:00"), count=3,
        first=at("2025-01-01T01:00:00"), last=at("2025-01-01T03:00:00"), coalesced_instant=None,
        instants=(at("2025-01-01T01:00:00"), at("2025-01-01T02:00:00"), at("2025-01-01T03:00:00")),
        more=False, next_fire=at("2025-01-01T04:00:00"),
        explanation="catch_up: resuming fires 3 missed instants now (2025-01-01T01:00:00Z .. 2025-01-01T03:00:00Z)",
    )


def test_catch_up_beyond_the_cap_says_more_follow(dsn: str, conn: Any, register: Any) -> None:
    # Every 10 minutes, last 00:00, now 00:45: 00:10 .. 00:40 missed (4); a cap of 2 per pass.
    capped = Client(dsn, catch_up_limit=2, operator="tester@test")
    try:
        register("ten", "*/10 * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up")
        capped.actions.pause("ten")
        preview = capped.reads.resume_preview("ten", now=at("2025-01-01T00:45:00"))
        assert (preview.count, preview.instants, preview.more, preview.next_fire) == (
            2, (at("2025-01-01T00:10:00"), at("2025-01-01T00:20:00")), True, at("2025-01-01T00:30:00"))
        assert preview.explanation == (
            "catch_up: resuming fires 2 missed instants now (2025-01-01T00:10:00Z .. 2025-01-01T00:20:00Z); "
            "more were missed and follow in the next passes, 2 per pass")
    finally:
        capped.close()


def test_coalesce_fires_once_for_the_latest_missed(client: Client, conn: Any, register: Any) -> None:
    # Every 5 minutes, last 00:00, now 00:17: 00:05, 00:10, 00:15 missed; coalesce fires 00:15 only.
    register("five", "*/5 * * * *", last="2025-01-01T00:00:00")
    client.actions.pause("five")
    preview = client.reads.resume_preview("five", now=at("2025-01-01T00:17:00"))
    assert (preview.policy, preview.count, preview.first, preview.last, preview.coalesced_instant,
            preview.instants, preview.next_fire) == (
        "coalesce", 1, at("2025-01-01T00:15:00"), at("2025-01-01T00:15:00"), at("2025-01-01T00:15:00"),
        (at("2025-01-01T00:15:00"),), at("2025-01-01T00:20:00"))
    assert preview.explanation == (
        "coalesce: resuming fires once now, for the latest due instant 2025-01-01T00:15:00Z "
        "(earlier missed instants are not replayed)")


def test_never_fired_fires_once_even_under_catch_up(client: Client, conn: Any, register: Any) -> None:
    # Created 00:00, never fired, every 15 minutes: at 01:10 the first fire is the latest, 01:00.
    register("fresh", "*/15 * * * *", created="2025-01-01T00:00:00", missed_fire_policy="catch_up")
    client.actions.pause("fresh")
    preview = client.reads.resume_preview("fresh", now=at("2025-01-01T01:10:00"))
    assert (preview.count, preview.instants, preview.coalesced_instant, preview.next_fire) == (
        1, (at("2025-01-01T01:00:00"),), at("2025-01-01T01:00:00"), at("2025-01-01T01:15:00"))
    assert preview.explanation == (
        "never fired: resuming fires once now, for the latest due instant 2025-01-01T01:00:00Z "
        "(earlier missed instants are not replayed)")


def test_nothing_missed(client: Client, conn: Any, register: Any) -> None:
    register("hourly", "0 * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up")
    client.actions.pause("hourly")
    preview = client.reads.resume_preview("hourly", now=at("2025-01-01T00:59:59"))
    assert (preview.count, preview.first, preview.last, preview.coalesced_instant, preview.instants,
            preview.more, preview.next_fire) == (0, None, None, None, (), False, at("2025-01-01T01:00:00"))
    assert preview.explanation == "nothing missed: resuming fires nothing now; the next fire is 2025-01-01T01:00:00Z"


def test_not_paused_and_unknown_are_one_line_errors(client: Client, conn: Any, register: Any) -> None:
    register("hourly", "0 * * * *", last="2025-01-01T00:00:00")
    with pytest.raises(Conflict) as not_paused:
        client.reads.resume_preview("hourly", now=at("2025-01-01T03:30:00"))
    assert str(not_paused.value) == "schedule 'hourly' is not paused"
    with pytest.raises(NotFound) as unknown:
        client.reads.resume_preview("nope", now=at("2025-01-01T03:30:00"))
    assert str(unknown.value) == "unknown schedule 'nope'"


def test_a_row_the_evaluator_would_skip_is_named(client: Client, conn: Any) -> None:
    conn.execute(
        "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, paused_at, paused_by) "
        "VALUES ('bad', '* * * * *', 'Mars/X', 'k', now(), 'ops')")
    with pytest.raises(ValidationError) as bad:
        client.reads.resume_preview("bad", now=at("2025-01-01T03:30:00"))
    assert str(bad.value) == "schedule 'bad' cannot be evaluated: timezone: unknown time zone 'Mars/X'"


def test_connection_form_reads_only(conn: Any, client: Client, register: Any) -> None:
    register("hourly", "0 * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up")
    client.actions.pause("hourly")
    before, audits = schedule_row(conn, "hourly"), _audit_count(conn)
    preview = resume_preview(conn, "hourly", at("2025-01-01T02:00:00"))
    assert preview.instants == (at("2025-01-01T01:00:00"), at("2025-01-01T02:00:00"))
    assert resume_preview(client, "hourly", at("2025-01-01T02:00:00")) == preview
    assert schedule_row(conn, "hourly") == before  # same xmin: the row was not even rewritten
    assert (_audit_count(conn), job_count(conn)) == (audits, 0)


@pytest.mark.parametrize("policy", ["catch_up", "coalesce"])
def test_preview_matches_what_resuming_then_fires(client: Client, conn: Any, register: Any, policy: str) -> None:
    # Created 00:00, first pass at 00:00:30 fires 00:00 and stores the 01:00 hint, then paused.
    register("hourly", "0 * * * *", created="2025-01-01T00:00:00", missed_fire_policy=policy)
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:00:30")).jobs] == ["2025-01-01T00:00:00Z"]
    client.actions.pause("hourly")
    now = at("2025-01-01T03:30:00")
    assert client.evaluate(now=now).fired == 0  # paused: nothing
    preview = client.reads.resume_preview("hourly", now=now)
    expected = {"catch_up": ["2025-01-01T01:00:00Z", "2025-01-01T02:00:00Z", "2025-01-01T03:00:00Z"],
                "coalesce": ["2025-01-01T03:00:00Z"]}[policy]
    assert preview.instants == tuple(at(t) for t in expected)
    client.actions.resume("hourly")
    fired = client.evaluate(now=now)
    assert [j.fire_time for j in fired.jobs] == expected
    assert fire_times(conn, "hourly") == ["2025-01-01T00:00:00Z", *expected]
    assert schedule_row(conn, "hourly")["next_fire_at"] == preview.next_fire == at("2025-01-01T04:00:00")
