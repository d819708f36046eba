"""S66: the catch-up window. Every pass runs at an explicit `now`; the expected instants are
written out by hand (a per-minute schedule: the instants are the whole minutes), never
computed by the code under test."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest
from engine_helpers import at, fire_times, force, schedule_row

from awa_tui import Client, ValidationError
from awa_tui.engine.schedules.definition import Schedule


def _records(conn: psycopg.Connection[Any], name: str) -> list[tuple[str, str]]:
    rows = conn.execute(
        "SELECT to_char(fire_time AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AS t, reason "
        "FROM awa.fire_skips WHERE cron_name = %s ORDER BY fire_time", (name,)).fetchall()
    return [(r["t"], r["reason"]) for r in rows]


def _minutes(day: str, first: int, last: int, hour: int = 0) -> list[str]:
    return [f"{day}T{hour:02d}:{m:02d}:00Z" for m in range(first, last + 1)]


def test_catch_up_replays_only_the_instants_within_the_window(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("replay", "* * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up",
             catchup_window="10m")
    assert schedule_row(conn, "replay")["catchup_window"] == 600
    result = client.evaluate(now=at("2025-01-01T01:00:30"))
    # The floor is 00:50:30: 00:51 .. 01:00 fire; 00:01 .. 00:50 are too old.
    assert [j.fire_time for j in result.jobs] == [*_minutes("2025-01-01", 51, 59), "2025-01-01T01:00:00Z"]
    assert result.too_old == [("replay", "2025-01-01T00:50:00.000000+00:00")]
    assert _records(conn, "replay") == [("2025-01-01T00:50:00Z", "too_old")]
    row = schedule_row(conn, "replay")
    assert (row["last_enqueued_at"], row["next_fire_at"], row["fires_count"]) == (
        at("2025-01-01T01:00:00"), at("2025-01-01T01:01:00"), 10)
    verdicts = client.reads.ledger("replay", since=at("2025-01-01T00:00:30"), limit=100,
                                   now=at("2025-01-01T01:00:30"))
    assert [(v.instant.strftime("%H:%M"), v.verdict) for v in verdicts] == (
        [(f"00:{m:02d}", "skipped_too_old") for m in range(1, 51)]
        + [(f"00:{m:02d}", "fired") for m in range(51, 60)] + [("01:00", "fired")])
    assert {v.since for v in verdicts if v.verdict == "skipped_too_old"} == {at("2025-01-01T01:00:30")}


def test_an_instant_exactly_as_old_as_the_window_still_fires(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("edge", "* * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up",
             catchup_window=timedelta(minutes=10))
    result = client.evaluate(now=at("2025-01-01T01:00:00"))
    # 00:50 is exactly ten minutes old at 01:00: it fires; 00:49 is one minute older.
    assert [j.fire_time for j in result.jobs] == [*_minutes("2025-01-01", 50, 59), "2025-01-01T01:00:00Z"]
    assert _records(conn, "edge") == [("2025-01-01T00:49:00Z", "too_old")]


def test_everything_too_old_moves_the_token_and_fires_nothing(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("hourly", "0 * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up",
             catchup_window=600)
    result = client.evaluate(now=at("2025-01-01T05:30:00"))
    assert (result.jobs, result.too_old) == ([], [("hourly", "2025-01-01T05:00:00.000000+00:00")])
    row = schedule_row(conn, "hourly")
    assert (row["last_enqueued_at"], row["next_fire_at"], row["fires_count"]) == (
        at("2025-01-01T05:00:00"), at("2025-01-01T06:00:00"), 0)
    assert client.evaluate(now=at("2025-01-01T05:59:59")).jobs == []  # nothing is due again
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T06:00:00")).jobs] == ["2025-01-01T06:00:00Z"]
    assert fire_times(conn, "hourly") == ["2025-01-01T06:00:00Z"]
    verdicts = client.reads.ledger("hourly", since=at("2025-01-01T00:30:00"), now=at("2025-01-01T06:00:10"))
    assert [(v.instant.strftime("%H:%M"), v.verdict) for v in verdicts] == [
        ("01:00", "skipped_too_old"), ("02:00", "skipped_too_old"), ("03:00", "skipped_too_old"),
        ("04:00", "skipped_too_old"), ("05:00", "skipped_too_old"), ("06:00", "fired")]


def test_coalesce_skips_a_latest_instant_older_than_the_window(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("daily", "30 2 * * *", last="2025-01-01T02:30:00", catchup_window="1h")
    register("daily_wide", "30 2 * * *", last="2025-01-01T02:30:00", catchup_window="3h")
    result = client.evaluate(now=at("2025-01-02T05:00:00"))
    # 02:30 is 2h30m old: past one hour, within three.
    assert [(j.name, j.fire_time) for j in result.jobs] == [("daily_wide", "2025-01-02T02:30:00Z")]
    assert result.too_old == [("daily", "2025-01-02T02:30:00.000000+00:00")]
    assert schedule_row(conn, "daily")["next_fire_at"] == at("2025-01-03T02:30:00")
    why = client.reads.why("daily", now=at("2025-01-02T05:00:10"))
    assert why.verdict is not None and why.verdict.verdict == "skipped_too_old"
    assert why.text == (
        "daily: last due instant 2025-01-02T02:30:00Z: not fired: too old to catch up: when the leader could "
        "fire it at 2025-01-02T05:00:00Z, it was older than the schedule's catch-up window (1h00m). "
        "Next due 2025-01-03T02:30:00Z.")


def test_a_schedule_without_a_window_replays_everything_as_before(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("unbounded", "* * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up")
    result = client.evaluate(now=at("2025-01-01T00:30:00"))
    assert [j.fire_time for j in result.jobs] == _minutes("2025-01-01", 1, 30)
    assert (result.too_old, _records(conn, "unbounded")) == ([], [])


def test_the_window_is_checked_in_the_same_statement_for_a_mixed_batch(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    # One pass, one statement: rows of one shape share a plan, but not across windows.
    for name, window in (("a", "5m"), ("b", None), ("c", "5m"), ("d", "20m")):
        register(name, "* * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up",
                 **({"catchup_window": window} if window else {}))
    result = client.evaluate(now=at("2025-01-01T00:15:00"))
    fired: dict[str, list[str]] = {}
    for job in result.jobs:
        fired.setdefault(job.name, []).append(job.fire_time)
    assert fired == {"a": _minutes("2025-01-01", 10, 15), "b": _minutes("2025-01-01", 1, 15),
                     "c": _minutes("2025-01-01", 10, 15), "d": _minutes("2025-01-01", 1, 15)}
    assert sorted(result.too_old) == [("a", "2025-01-01T00:09:00.000000+00:00"),
                                      ("c", "2025-01-01T00:09:00.000000+00:00")]


@pytest.mark.parametrize("window", [0, -1, timedelta(0), timedelta(seconds=-30), "0s", "0m", "-5m", "soon",
                                    1.5, True])
def test_a_window_of_zero_negative_or_garbage_is_refused_and_nothing_is_stored(
    client: Client, conn: psycopg.Connection[Any], window: Any
) -> None:
    with pytest.raises(ValidationError, match=r"^catchup_window: "):
        client.periodic("bad", "* * * * *", "test.job", catchup_window=window)
    assert client.sync() == {"inserted": 0, "updated": 0}
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone() == {"n": 0}


def test_a_hand_written_bad_window_is_refused_by_the_database(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("hand", "* * * * *", catchup_window="1m")
    with pytest.raises(psycopg.errors.CheckViolation, match="catchup_window: must be a positive number of seconds"):
        conn.execute("UPDATE awa.cron_jobs SET catchup_window = 0 WHERE name = 'hand'")
    assert schedule_row(conn, "hand")["catchup_window"] == 60


def test_the_window_travels_in_the_definition_only_when_set() -> None:
    assert "catchup_window" not in Schedule.build("n", "* * * * *", "k").definition()
    assert Schedule.build("n", "* * * * *", "k", catchup_window="1h30m").definition()["catchup_window"] == 5400


def test_a_changed_window_is_synced_and_audited_as_a_redefinition(
    conn: psycopg.Connection[Any], dsn: str
) -> None:
    with Client(dsn) as first:
        first.periodic("audited", "* * * * *", "test.job", catchup_window="1h")
        first.sync()
    with Client(dsn) as second:
        second.periodic("audited", "* * * * *", "test.job", catchup_window="2h")
        assert second.sync() == {"inserted": 0, "updated": 1}
    assert schedule_row(conn, "audited")["catchup_window"] == 7200
    audit = conn.execute("SELECT action, before, after FROM awa.audit_log WHERE target = 'audited' "
                         "AND after ? 'catchup_window' ORDER BY id").fetchall()
    assert [(a["action"], a["before"], a["after"]) for a in audit] == [
        ("sync_definition", {"catchup_window": 3600}, {"catchup_window": 7200})]
    force(conn, "UPDATE awa.cron_jobs SET catchup_window = NULL WHERE name = 'audited'")  # bypasses the trail


def test_the_resume_preview_names_what_the_window_leaves_out(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("paused", "* * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up",
             catchup_window="5m")
    client.actions.pause("paused", now=at("2025-01-01T00:00:30"))
    preview = client.reads.resume_preview("paused", now=at("2025-01-01T00:30:00"))
    assert (preview.count, preview.first, preview.last) == (6, at("2025-01-01T00:25:00"), at("2025-01-01T00:30:00"))
    assert preview.explanation == (
        "catch_up: resuming fires 6 missed instants now (2025-01-01T00:25:00Z .. 2025-01-01T00:30:00Z); the "
        "instants up to 2025-01-01T00:24:00Z are older than the catch-up window (5m00s) and are skipped")


def test_a_backfill_of_some_too_old_instants_leaves_the_others_too_old(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("filled", "0 * * * *", last="2025-01-01T00:00:00", missed_fire_policy="catch_up",
             catchup_window=600)
    client.evaluate(now=at("2025-01-01T05:30:00"))  # 01:00 .. 05:00 too old
    client.actions.backfill("filled", at("2025-01-01T03:00:00"), at("2025-01-01T03:00:00"), operator="ops",
                            now=at("2025-01-01T05:40:00"))
    verdicts = client.reads.ledger("filled", since=at("2025-01-01T00:30:00"), now=at("2025-01-01T05:45:00"))
    assert [(v.instant.strftime("%H:%M"), v.verdict) for v in verdicts] == [
        ("01:00", "skipped_too_old"), ("02:00", "skipped_too_old"), ("03:00", "backfilled"),
        ("04:00", "skipped_too_old"), ("05:00", "skipped_too_old")]
