"""S56: exclusions and named calendars, on the real database, with instants written by hand.

Every pass runs at an explicit `now`. 2026-12-25 is a Friday; Europe/Paris is UTC+1 in
December, so a 00:30 Paris fire on the 25th is 2026-12-24T23:30Z.
"""

from __future__ import annotations

import threading
from datetime import date, datetime
from typing import Any

import psycopg
import pytest
from engine_helpers import at, fire_times, force, race, schedule_row
from helpers import wait_for

from awa_tui import Client, ValidationError
from awa_tui.engine.schedules.definition import Schedule


def _daily(client: Client, register: Any, name: str = "nightly", **kwargs: Any) -> None:
    register(name, "0 9 * * *", last="2026-12-23T09:00:00", created="2026-12-01T00:00:00", **kwargs)


# --- validation at once (periodic) -------------------------------------------------------


@pytest.mark.parametrize(("exclude", "message"), [
    ([(date(2026, 12, 31), date(2026, 12, 20))], "exclude: range 2026-12-31..2026-12-20 ends before it starts"),
    (["2026-12-25"], "exclude: expected a date or a (start, end) pair of dates, got '2026-12-25'"),
    ([datetime(2026, 12, 25, 9)], "exclude: expected a date or a (start, end) pair of dates, got "
                                  "datetime.datetime(2026, 12, 25, 9, 0)"),
    ([date(1900, 1, 1)], "exclude: 1900-01-01 is outside 1970-01-01..2199-12-31"),
    ([(date(2026, 1, 1), date(2026, 1, 2), date(2026, 1, 3))], "exclude: a range is a (start, end) pair of dates"),
    (date(2026, 12, 25), "exclude: expected a list of dates and (start, end) pairs"),
])
def test_a_bad_exclusion_is_refused_at_once_in_one_line(exclude: Any, message: str) -> None:
    with pytest.raises(ValidationError) as err:
        Schedule.build("x", "0 9 * * *", "test.job", exclude=exclude)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("calendar", ["", "bad name", "-lead", "x" * 65, [7], ["ok", "no/slash"]])
def test_a_bad_calendar_name_is_refused_at_once(calendar: Any) -> None:
    with pytest.raises(ValidationError, match=r"^calendar: a calendar name is 1\.\.64 letters"):
        Schedule.build("x", "0 9 * * *", "test.job", calendar=calendar)


def test_exclusions_are_stored_canonically_with_the_schedule(
        client: Client, conn: psycopg.Connection[Any], register: Any) -> None:
    client.actions.set_calendar("alpha", [date(2026, 12, 26)], operator="ops@test")
    client.actions.set_calendar("zeta", [date(2026, 12, 31)], operator="ops@test")
    _daily(client, register, exclude=[(date(2026, 12, 27), date(2027, 1, 3)), date(2026, 12, 25),
                                      date(2026, 12, 25)],
           calendar=["zeta", "alpha"])
    row = schedule_row(conn, "nightly")
    assert row["exclude_dates"] == [["2026-12-25", "2026-12-25"], ["2026-12-27", "2027-01-03"]]
    assert row["exclude_calendars"] == ["alpha", "zeta"]
    plain = Schedule.build("plain", "0 9 * * *", "test.job")
    assert (plain.exclude_dates, plain.exclude_calendars) == (None, None)


def test_an_unknown_calendar_is_refused_at_sync_naming_it_and_nothing_is_written(
        client: Client, conn: psycopg.Connection[Any]) -> None:
    client.periodic("ok", "0 9 * * *", "test.job")
    client.periodic("hol", "0 9 * * *", "test.job", calendar="company-holidays")
    with pytest.raises(ValidationError) as err:
        client.sync()
    assert str(err.value) == ("calendar: schedule 'hol' names unknown calendar 'company-holidays'; "
                              "create it first (awa-tui calendar set)")
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone() == {"n": 0}
    client.actions.set_calendar("company-holidays", [date(2026, 12, 25)], operator="ops@test")
    assert client.sync() == {"inserted": 2, "updated": 0}


# --- firing --------------------------------------------------------------------------------


def test_an_excluded_date_is_not_enqueued_and_the_token_moves_past_it(
        client: Client, conn: psycopg.Connection[Any], register: Any) -> None:
    _daily(client, register, exclude=[date(2026, 12, 25)])
    assert [j.fire_time for j in client.evaluate(now=at("2026-12-24T09:00:00")).jobs] == ["2026-12-24T09:00:00Z"]
    result = client.evaluate(now=at("2026-12-25T09:00:00"))
    assert (result.jobs, result.errors, result.lost_races) == ([], [], 0)
    row = schedule_row(conn, "nightly")
    assert row["last_enqueued_at"] == at("2026-12-25T09:00:00")  # consumed: never replayed
    assert row["next_fire_at"] == at("2026-12-26T09:00:00")
    assert client.evaluate(now=at("2026-12-25T09:00:30")).jobs == []  # nothing doubled
    assert [j.fire_time for j in client.evaluate(now=at("2026-12-26T09:00:00")).jobs] == ["2026-12-26T09:00:00Z"]
    assert fire_times(conn, "nightly") == ["2026-12-24T09:00:00Z", "2026-12-26T09:00:00Z"]


def test_catch_up_never_replays_an_excluded_instant(
        client: Client, conn: psycopg.Connection[Any], register: Any) -> None:
    _daily(client, register, missed_fire_policy="catch_up", exclude=[(date(2026, 12, 25), date(2026, 12, 26))])
    result = client.evaluate(now=at("2026-12-28T10:00:00"))
    assert sorted(j.fire_time for j in result.jobs) == [
        "2026-12-24T09:00:00Z", "2026-12-27T09:00:00Z", "2026-12-28T09:00:00Z"]
    assert schedule_row(conn, "nightly")["last_enqueued_at"] == at("2026-12-28T09:00:00")


def test_the_date_is_the_schedules_own_zone(client: Client, conn: psycopg.Connection[Any], register: Any) -> None:
    # 00:30 in Paris on the 25th is 23:30 UTC on the 24th: excluded; the 24th's (23:30Z on
    # the 23rd) is not.
    register("paris", "30 0 * * *", timezone="Europe/Paris", last="2026-12-22T23:30:00",
             created="2026-12-01T00:00:00", missed_fire_policy="catch_up", exclude=[date(2026, 12, 25)])
    result = client.evaluate(now=at("2026-12-25T00:00:00"))
    assert [j.fire_time for j in result.jobs] == ["2026-12-23T23:30:00Z"]
    assert schedule_row(conn, "paris")["last_enqueued_at"] == at("2026-12-24T23:30:00")


def test_a_calendar_excludes_and_an_edit_is_seen_by_the_next_pass(
        client: Client, conn: psycopg.Connection[Any], register: Any) -> None:
    client.actions.set_calendar("company-holidays", [date(2026, 12, 24)], operator="ops@test")
    _daily(client, register, calendar="company-holidays")
    assert client.evaluate(now=at("2026-12-24T09:00:00")).jobs == []
    client.actions.set_calendar("company-holidays", [date(2026, 12, 31)],
                                operator="ops@test")  # the 25th is a workday now
    assert [j.fire_time for j in client.evaluate(now=at("2026-12-25T09:00:00")).jobs] == ["2026-12-25T09:00:00Z"]
    client.actions.set_calendar("company-holidays", [(date(2026, 12, 26), date(2026, 12, 27))], operator="ops@test")
    assert client.evaluate(now=at("2026-12-26T09:00:00")).jobs == []
    assert fire_times(conn, "nightly") == ["2026-12-25T09:00:00Z"]


def test_calendars_are_read_only_when_they_changed(
        client: Client, conn: psycopg.Connection[Any], register: Any, dsn: str) -> None:
    """The version probe: with awa.calendars locked by another session, passes that plan a
    calendar row still complete (they never read the table); after a change the next pass
    does read it (negative control: it waits on that very lock)."""
    client.actions.set_calendar("company-holidays", [date(2026, 12, 25)], operator="ops@test")
    _daily(client, register, calendar="company-holidays")
    client.evaluate(now=at("2026-12-24T09:00:00"))

    def in_thread(now: str) -> tuple[threading.Thread, list[Any]]:
        out: list[Any] = []
        thread = threading.Thread(target=lambda: out.append(client.evaluate(now=at(now))))
        thread.start()
        return thread, out

    with psycopg.connect(dsn) as locker:
        locker.execute("LOCK TABLE awa.calendars IN ACCESS EXCLUSIVE MODE")
        for day in (25, 26, 27):
            thread, out = in_thread(f"2026-12-{day}T09:00:00")
            thread.join(30)
            assert not thread.is_alive(), "a pass read the calendars although they had not changed"
        locker.rollback()
    assert fire_times(conn, "nightly") == ["2026-12-24T09:00:00Z", "2026-12-26T09:00:00Z", "2026-12-27T09:00:00Z"]
    client.actions.set_calendar("company-holidays", [date(2026, 12, 28)], operator="ops@test")
    with psycopg.connect(dsn) as locker:
        locker.execute("LOCK TABLE awa.calendars IN ACCESS EXCLUSIVE MODE")
        thread, out = in_thread("2026-12-28T09:00:00")
        wait_for(lambda: conn.execute(
            "SELECT count(*) AS n FROM pg_locks WHERE relation = 'awa.calendars'::regclass AND NOT granted"
        ).fetchone() == {"n": 1}, what="the pass after a change waiting to read the calendars")
        locker.rollback()
    thread.join(30)
    assert out[0].jobs == []  # the 28th, read after the change, is excluded


def test_an_unknown_calendar_in_a_hand_written_row_is_a_bad_row_and_the_others_fire(
        client: Client, conn: psycopg.Connection[Any], register: Any) -> None:
    _daily(client, register, "good")
    _daily(client, register, "typo")
    force(conn, "UPDATE awa.cron_jobs SET exclude_calendars = '[\"no-such\"]' WHERE name = 'typo'")
    result = client.evaluate(now=at("2026-12-24T09:00:00"))
    assert [j.fire_time for j in result.jobs] == ["2026-12-24T09:00:00Z"]
    assert [j.name for j in result.jobs] == ["good"]
    assert result.errors == ["schedule 'typo' skipped: calendar: unknown calendar 'no-such'"]
    assert schedule_row(conn, "typo")["last_enqueued_at"] == at("2026-12-23T09:00:00")  # nothing lost
    force(conn, "UPDATE awa.cron_jobs SET exclude_dates = '[[\"2026-13-01\", \"x\"]]', exclude_calendars = NULL "
                "WHERE name = 'typo'")
    result = client.evaluate(now=at("2026-12-25T09:00:00"))
    assert [j.name for j in result.jobs] == ["good"]
    assert result.errors == ["schedule 'typo' skipped: exclude: not an ISO date pair: ['2026-13-01', 'x']"]


def test_an_exclusion_change_is_a_definition_change_synced_and_audited(
        dsn: str, conn: psycopg.Connection[Any]) -> None:
    first = Client(dsn, operator="deployer@test")
    first.periodic("nightly", "0 9 * * *", "test.job")
    assert first.sync() == {"inserted": 1, "updated": 0}
    first.close()
    second = Client(dsn, operator="deployer@test")
    second.periodic("nightly", "0 9 * * *", "test.job", exclude=[date(2026, 12, 25)])
    assert second.sync() == {"inserted": 0, "updated": 1}
    assert second.sync() == {"inserted": 0, "updated": 0}
    second.close()
    audit = conn.execute("SELECT action, before, after FROM awa.audit_log WHERE target = 'nightly' "
                         "AND after ? 'exclude_dates'").fetchall()
    assert audit == [{"action": "sync_definition", "before": {"exclude_dates": None},
                      "after": {"exclude_dates": [["2026-12-25", "2026-12-25"]]}}]


def test_a_resume_preview_and_a_backfill_skip_excluded_instants(
        client: Client, conn: psycopg.Connection[Any], register: Any) -> None:
    _daily(client, register, missed_fire_policy="catch_up", exclude=[date(2026, 12, 25)])
    client.actions.pause("nightly", operator="ops@test")
    preview = client.reads.resume_preview("nightly", now=at("2026-12-26T10:00:00"))
    assert preview.instants == (at("2026-12-24T09:00:00"), at("2026-12-26T09:00:00"))
    force(conn, "UPDATE awa.cron_jobs SET last_enqueued_at = %s WHERE name = 'nightly'", (at("2026-12-27T09:00:00"),))
    result = client.actions.backfill("nightly", at("2026-12-24T00:00:00"), at("2026-12-26T23:00:00"),
                             now=at("2026-12-27T10:00:00"), operator="ops@test")
    assert result.instants == (at("2026-12-24T09:00:00"), at("2026-12-26T09:00:00"))
    assert result.excluded == 1


def test_racing_evaluators_never_double_or_lose_around_excluded_instants(
        dsn: str, conn: psycopg.Connection[Any]) -> None:
    """Three evaluators race over six days of a catch_up schedule that excludes two of
    them: each day not excluded gets exactly one job, the excluded ones none, and the
    token ends on the last instant."""
    clients = [Client(dsn, operator=f"racer{i}@test") for i in range(3)]
    try:
        clients[0].actions.set_calendar("company-holidays", [date(2026, 12, 25)], operator="ops@test")
        for client in clients:
            client.periodic("nightly", "0 9 * * *", "test.job", missed_fire_policy="catch_up",
                            calendar="company-holidays", exclude=[date(2026, 12, 27)])
            client.sync()
        force(conn, "UPDATE awa.cron_jobs SET last_enqueued_at = %s, created_at = %s, next_fire_at = NULL",
              (at("2026-12-22T09:00:00"), at("2026-12-01T00:00:00")))
        race(clients, [at(f"2026-12-{day}T09:00:00") for day in (23, 24, 25, 26, 27, 28)])
        assert fire_times(conn, "nightly") == ["2026-12-23T09:00:00Z", "2026-12-24T09:00:00Z",
                                               "2026-12-26T09:00:00Z", "2026-12-28T09:00:00Z"]
        assert schedule_row(conn, "nightly")["last_enqueued_at"] == at("2026-12-28T09:00:00")
    finally:
        for client in clients:
            client.close()


def test_a_hand_written_calendar_is_audited_and_a_bad_one_makes_its_schedules_bad_rows(
        client: Client, conn: psycopg.Connection[Any], register: Any) -> None:
    conn.execute("INSERT INTO awa.calendars (name, dates) VALUES ('by-hand', '[[\"2026-12-24\", \"2026-12-24\"]]')")
    audit = conn.execute("SELECT action, target, operator, before, after FROM awa.audit_log "
                         "WHERE target = 'calendar:by-hand'").fetchall()
    assert audit == [{"action": "calendar_create", "target": "calendar:by-hand", "operator": "postgres",
                      "before": None, "after": {"dates": [["2026-12-24", "2026-12-24"]]}}]
    _daily(client, register, "held", calendar="by-hand")
    _daily(client, register, "other")
    assert [j.name for j in client.evaluate(now=at("2026-12-24T09:00:00")).jobs] == ["other"]
    conn.execute("UPDATE awa.calendars SET dates = '[[\"2026-12-26\", \"2026-12-25\"]]' WHERE name = 'by-hand'")
    result = client.evaluate(now=at("2026-12-25T09:00:00"))
    assert [j.name for j in result.jobs] == ["other"]
    assert result.errors == ["schedule 'held' skipped: calendar 'by-hand': range 2026-12-26..2026-12-25 ends "
                             "before it starts"]
    assert schedule_row(conn, "held")["last_enqueued_at"] == at("2026-12-24T09:00:00")


def test_coalesce_fires_the_latest_instant_that_is_not_excluded(
        client: Client, conn: psycopg.Connection[Any], register: Any) -> None:
    """Missed the 24th, 25th and 26th (no pass), the 25th and 26th excluded: coalesce fires
    once, for the 24th (the most recent instant that was due); the token moves to the 26th."""
    _daily(client, register, exclude=[(date(2026, 12, 25), date(2026, 12, 26))])
    result = client.evaluate(now=at("2026-12-26T12:00:00"))
    assert [j.fire_time for j in result.jobs] == ["2026-12-24T09:00:00Z"]
    assert schedule_row(conn, "nightly")["last_enqueued_at"] == at("2026-12-26T09:00:00")
    # Nothing left to coalesce: every instant since the token is excluded.
    force(conn, "UPDATE awa.cron_jobs SET last_enqueued_at = %s, next_fire_at = NULL WHERE name = 'nightly'",
          (at("2026-12-24T09:00:00"),))
    assert client.evaluate(now=at("2026-12-26T12:00:00")).jobs == []
    assert schedule_row(conn, "nightly")["last_enqueued_at"] == at("2026-12-26T09:00:00")
    assert fire_times(conn, "nightly") == ["2026-12-24T09:00:00Z"]
