"""S65: a pause with an end and a reason, on the real database, at injected instants: set
with the pause (an instant or a duration), edited by pausing again, cancelled by resuming,
ended by the leader's duty (audited as `awa-autoresume`), after which the schedule's
missed-fire policy decides what fires, as after any resume. Expected instants are written
out by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from engine_helpers import at, fire_times, force, schedule_row

from awa_tui import Client, Conflict, ValidationError


def _audit(conn: psycopg.Connection[Any], name: str) -> list[dict[str, Any]]:
    return conn.execute("SELECT action, operator, before, after, detail FROM awa.audit_log WHERE target = %s "
                        "ORDER BY id", (name,)).fetchall()


def _window(row: dict[str, Any]) -> tuple[Any, ...]:
    return row["paused_at"], row["paused_by"], row["paused_until"], row["pause_reason"]


def test_pause_until_an_instant_with_a_reason_is_stored_and_audited(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("nightly", "0 2 * * *", last="2025-01-01T02:00:00")
    state = client.actions.pause("nightly", until=at("2025-01-01T14:00:00"), reason="db migration",
                                 operator="alice", now=at("2025-01-01T12:00:00"))
    assert (state.paused_until, state.pause_reason, state.paused_by) == (
        at("2025-01-01T14:00:00"), "db migration", "alice")
    assert _window(schedule_row(conn, "nightly")) == (
        at("2025-01-01T12:00:00"), "alice", at("2025-01-01T14:00:00"), "db migration")
    [entry] = _audit(conn, "nightly")
    assert (entry["action"], entry["operator"]) == ("pause", "alice")
    assert (entry["before"]["paused_until"], entry["after"]["paused_until"], entry["after"]["pause_reason"]) == (
        None, "2025-01-01T14:00:00+00:00", "db migration")


def test_pause_for_a_duration_ends_that_long_after_now(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("d", "* * * * *", last="2025-01-01T00:00:00")
    client.actions.pause("d", until=timedelta(hours=2, minutes=30), now=at("2025-01-01T11:30:00"))
    assert schedule_row(conn, "d")["paused_until"] == at("2025-01-01T14:00:00")


def test_pausing_again_edits_the_end_and_keeps_the_reason_and_since(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("e", "* * * * *", last="2025-01-01T00:00:00")
    client.actions.pause("e", until=at("2025-01-01T14:00:00"), reason="db migration", operator="alice",
                         now=at("2025-01-01T12:00:00"))
    client.actions.pause("e", until=at("2025-01-01T16:00:00"), operator="bob", now=at("2025-01-01T13:00:00"))
    assert _window(schedule_row(conn, "e")) == (
        at("2025-01-01T12:00:00"), "bob", at("2025-01-01T16:00:00"), "db migration")
    edit = _audit(conn, "e")[-1]
    assert (edit["action"], edit["operator"]) == ("pause_edit", "bob")
    assert (edit["before"]["paused_until"], edit["after"]["paused_until"]) == (
        "2025-01-01T14:00:00+00:00", "2025-01-01T16:00:00+00:00")
    client.actions.pause("e", reason="migration ran long", operator="bob", now=at("2025-01-01T13:30:00"))
    assert _window(schedule_row(conn, "e"))[2:] == (at("2025-01-01T16:00:00"), "migration ran long")
    # Without an end or a reason, pausing a paused schedule is refused as it always was.
    with pytest.raises(Conflict, match="already paused"):
        client.actions.pause("e", operator="carol")


def test_resume_cancels_the_end_and_the_reason(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("r", "* * * * *", last="2025-01-01T00:00:00")
    client.actions.pause("r", until=at("2025-01-01T14:00:00"), reason="x", now=at("2025-01-01T12:00:00"))
    client.actions.resume("r", operator="alice")
    assert _window(schedule_row(conn, "r")) == (None, None, None, None)
    resume = _audit(conn, "r")[-1]
    assert (resume["action"], resume["after"]["paused_until"], resume["after"]["pause_reason"]) == (
        "resume", None, None)
    # A resume that knows nothing of the end (an older release, psql) ends it too: a later
    # plain pause must not inherit it, or the leader would resume that one.
    client.actions.pause("r", until=at("2025-01-01T14:00:00"), reason="x", now=at("2025-01-01T12:00:00"))
    conn.execute("UPDATE awa.cron_jobs SET paused_at = NULL, paused_by = NULL WHERE name = 'r'")
    assert _window(schedule_row(conn, "r")) == (None, None, None, None)


def test_the_leader_resumes_at_the_end_and_catch_up_replays_within_its_window(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("replay", "* * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up")
    register("bounded", "* * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up",
             catchup_window="3m")
    register("once", "* * * * *", last="2025-01-01T00:00:00")
    selection = client.actions.bulk("pause", ["replay", "bounded", "once"], until=timedelta(minutes=10),
                                    reason="maintenance", operator="alice", now=at("2025-01-01T00:00:30"))
    assert selection.done == ("bounded", "once", "replay")
    assert client.evaluate(now=at("2025-01-01T00:05:00")).jobs == []  # paused
    assert client.runtime.end_pauses(now=at("2025-01-01T00:10:29.999999")) == []
    ended = client.runtime.end_pauses(now=at("2025-01-01T00:10:30"))
    assert sorted(ended) == [(n, at("2025-01-01T00:10:30")) for n in ("bounded", "once", "replay")]
    for name in ("replay", "bounded", "once"):
        assert _window(schedule_row(conn, name)) == (None, None, None, None)
        resume = _audit(conn, name)[-1]
        assert (resume["action"], resume["operator"], resume["before"]["paused_until"]) == (
            "resume", "awa-autoresume", "2025-01-01T00:10:30+00:00")
        assert resume["detail"]["automatic"] is True
        assert resume["detail"]["runtime"] == str(client.runtime.identity.instance_id)
    assert client.runtime.end_pauses(now=at("2025-01-01T00:10:31")) == []  # nothing left to end
    result = client.evaluate(now=at("2025-01-01T00:10:30"))
    fired: dict[str, list[str]] = {}
    for job in result.jobs:
        fired.setdefault(job.name, []).append(job.fire_time)
    minute = "2025-01-01T00:{:02d}:00Z".format
    assert fired == {
        "replay": [minute(m) for m in range(1, 11)],  # catch_up: every missed instant
        "bounded": [minute(m) for m in range(8, 11)],  # catch_up within 3 minutes of 00:10:30
        "once": [minute(10)],  # coalesce: once, for the latest
    }
    assert result.too_old == [("bounded", "2025-01-01T00:07:00.000000+00:00")]
    assert fire_times(conn, "once") == [minute(10)]


def test_the_duty_skips_a_row_an_operator_holds_and_ends_it_next_round(
    client: Client, conn: psycopg.Connection[Any], register: Any, dsn: str
) -> None:
    register("held", "* * * * *", last="2025-01-01T00:00:00")
    register("free", "* * * * *", last="2025-01-01T00:00:00")
    for name in ("held", "free"):
        client.actions.pause(name, until=at("2025-01-01T01:00:00"), now=at("2025-01-01T00:00:00"))
    with psycopg.connect(dsn) as holder:
        holder.execute("SELECT 1 FROM awa.cron_jobs WHERE name = 'held' FOR UPDATE")
        assert client.runtime.end_pauses(now=at("2025-01-01T01:00:00")) == [("free", at("2025-01-01T01:00:00"))]
    assert client.runtime.end_pauses(now=at("2025-01-01T01:00:00")) == [("held", at("2025-01-01T01:00:00"))]


def test_an_end_in_the_past_or_past_the_schedules_end_is_refused_and_nothing_is_stored(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("ends", "* * * * *", last="2025-01-01T00:00:00", end_at=datetime(2025, 1, 1, 13, tzinfo=UTC))
    register("other", "* * * * *", last="2025-01-01T00:00:00")
    now = at("2025-01-01T12:00:00")
    cases: list[tuple[Any, str | None, str]] = [
        (at("2025-01-01T11:59:59"), None,
         "until: 2025-01-01T11:59:59+00:00 is not in the future (now 2025-01-01T12:00:00+00:00)"),
        (now, None, "until: 2025-01-01T12:00:00+00:00 is not in the future (now 2025-01-01T12:00:00+00:00)"),
        (timedelta(0), None, "until: 2025-01-01T12:00:00+00:00 is not in the future"),
        (timedelta(minutes=-5), None, "until: 2025-01-01T11:55:00+00:00 is not in the future"),
        (at("2025-01-01T13:00:01"), None,
         "until: 2025-01-01T13:00:01+00:00 is after the schedule's end (2025-01-01T13:00:00+00:00)"),
        (datetime(2025, 1, 1, 14), None, "until: must be a timezone-aware instant"),
        (None, "", "reason: one line of 1..500 printable characters is required"),
        (None, "two\nlines", "reason: one line of 1..500 printable characters is required"),
        (None, "x" * 501, "reason: one line of 1..500 printable characters is required"),
    ]
    for until, reason, message in cases:
        with pytest.raises(ValidationError, match="^" + message.replace("(", r"\(").replace(")", r"\)")
                           .replace("+", r"\+").replace(".", r"\.")):
            client.actions.pause("ends", until=until, reason=reason, now=now)
    # In bulk, one schedule that ends first refuses the whole selection, before any batch.
    with pytest.raises(ValidationError, match=r"^until: .* is after the schedule's end .*: schedule ends$"):
        client.actions.bulk("pause", ["other", "ends"], until=timedelta(hours=2), now=now, batch_size=1)
    with pytest.raises(ValidationError, match="applies only to pause"):
        client.actions.bulk("resume", ["other"], until=timedelta(hours=2), now=now)
    for name in ("ends", "other"):
        assert _window(schedule_row(conn, name)) == (None, None, None, None)
        assert _audit(conn, name) == []


def test_bulk_by_filter_pauses_an_owners_schedules_and_edits_the_paused_ones(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    from awa_tui.filters import parse

    for name in ("b1", "b2", "b3", "x1"):
        register(name, "* * * * *", last="2025-01-01T00:00:00")
    force(conn, "UPDATE awa.cron_jobs SET owner = 'billing' WHERE name LIKE 'b%%'")
    client.actions.pause("b2", operator="carol", now=at("2025-01-01T11:00:00"))
    result = client.actions.bulk("pause", where=parse("owner:billing"), until=at("2025-01-01T14:00:00"),
                                 reason="db migration", operator="alice", now=at("2025-01-01T12:00:00"))
    assert (result.done, result.skipped) == (("b1", "b2", "b3"), ())
    assert _window(schedule_row(conn, "b1")) == (
        at("2025-01-01T12:00:00"), "alice", at("2025-01-01T14:00:00"), "db migration")
    # b2 was paused already: its end and reason are set, its pause keeps its start.
    assert _window(schedule_row(conn, "b2")) == (
        at("2025-01-01T11:00:00"), "alice", at("2025-01-01T14:00:00"), "db migration")
    assert _window(schedule_row(conn, "x1")) == (None, None, None, None)
    assert [a["action"] for a in _audit(conn, "b2")] == ["pause", "pause_edit"]


def test_why_says_until_when_and_why_a_schedule_is_paused(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("w", "0 * * * *", last="2025-01-01T11:00:00")
    client.actions.pause("w", until=at("2025-01-01T14:00:00"), reason="db migration", operator="alice",
                         now=at("2025-01-01T12:00:00"))
    text = client.reads.why("w", now=at("2025-01-01T12:30:00")).text
    assert text.endswith(" Now paused until 2025-01-01T14:00:00Z (by alice at 2025-01-01T12:00:00Z): db migration.")
