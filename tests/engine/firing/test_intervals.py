"""Interval schedules (`@every 90s`, `every="90s"`): instants anchor + k * every, the anchor
being start_at, else 1970-01-01T00:00:00Z; fired exactly once under racing evaluators,
replayed by catch_up after a downtime, previewed; bad input refused in one line.

Every expected instant is written by hand or walked one period at a time from the anchor
(`walk` below), never asked of the code under test."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from engine_helpers import at, fire_times, force, race

from awa_tui import Client
from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.cron.describe import describe
from awa_tui.engine.cron.expression import compile_cron, interval_words, parse_cron

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def walk(anchor: datetime, every: timedelta, after: datetime, count: int) -> list[datetime]:
    """The oracle: step from the anchor one period at a time (never a division)."""
    t = anchor
    while t > after:
        t -= every
    while t <= after:
        t += every
    out = []
    for _ in range(count):
        out.append(t)
        t += every
    return out


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# --- the arithmetic ---------------------------------------------------------------------------


@pytest.mark.parametrize(("expr", "anchor", "after", "expected"), [
    # 2025-01-01T00:00:00Z is 1,735,689,600 s after the epoch = 19,285,440 * 90: an instant.
    ("@every 90s", None, "2025-01-01T00:00:00", ["2025-01-01T00:01:30", "2025-01-01T00:03:00", "2025-01-01T00:04:30"]),
    # 1,735,689,600 = 7 * 247,955,657 + 1: the instant before is 23:59:59, then every 7 s.
    ("@every 7s", None, "2025-01-01T00:00:00", ["2025-01-01T00:00:06", "2025-01-01T00:00:13", "2025-01-01T00:00:20"]),
    ("@every 1s", None, "2025-01-01T00:00:00.5", ["2025-01-01T00:00:01", "2025-01-01T00:00:02", "2025-01-01T00:00:03"]),
    # 1,735,689,600 / 5,400 = 321,424 exactly.
    ("@every 1h30m", None, "2025-01-01T00:10:00",
     ["2025-01-01T01:30:00", "2025-01-01T03:00:00", "2025-01-01T04:30:00"]),
    # Anchored: 25 hours from 2025-03-08T12:00Z, the instants do not care about New York's DST.
    ("@every 25h", "2025-03-08T12:00:00", "2025-03-09T00:00:00",
     ["2025-03-09T13:00:00", "2025-03-10T14:00:00", "2025-03-11T15:00:00"]),
    ("@every 13d", "2025-01-01T00:00:00", "2025-02-01T00:00:00",
     ["2025-02-09T00:00:00", "2025-02-22T00:00:00", "2025-03-07T00:00:00"]),
    # An anchor off the whole second: 2025-01-01T00:00:00.250Z + k * 45 s.
    ("@every 45s", "2025-01-01T00:00:00.250", "2025-01-01T00:01:00",
     ["2025-01-01T00:01:30.250", "2025-01-01T00:02:15.250", "2025-01-01T00:03:00.250"]),
    # Instants before the anchor exist too (k < 0); bounds keep them from firing.
    ("@every 10m", "2025-06-01T00:05:00", "2025-05-31T23:50:00",
     ["2025-05-31T23:55:00", "2025-06-01T00:05:00", "2025-06-01T00:15:00"]),
    ("@every 366d", None, "2025-01-01T00:00:00",
     ["2025-02-11T00:00:00", "2026-02-12T00:00:00", "2027-02-13T00:00:00"]),
])
def test_instants_are_the_anchor_plus_whole_periods(expr: str, anchor: str | None, after: str,
                                                    expected: list[str]) -> None:
    start = at(anchor) if anchor else None
    for zone in ("UTC", "America/New_York", "Australia/Lord_Howe"):  # the zone never moves them
        cron = compile_cron(expr, zone, start)
        assert [f.at for f in cron.upcoming(at(after), 3)] == [at(e) for e in expected]
        assert all(f.mark is None for f in cron.upcoming(at(after), 3))
    every = timedelta(microseconds=parse_cron(expr).every_us or 0)
    assert walk(start or EPOCH, every, at(after), 3) == [at(e) for e in expected]


def test_latest_and_between_agree_with_the_walk() -> None:
    anchor = at("2024-12-31T23:59:58")
    cron = compile_cron("@every 17s", "Europe/Berlin", anchor)
    oracle = walk(anchor, timedelta(seconds=17), at("2025-01-01T00:00:00"), 40)
    assert [f.at for f in cron.between(at("2025-01-01T00:00:00"), oracle[-1], 1000)] == oracle
    assert cron.latest_at_or_before(oracle[5]).at == oracle[5]  # type: ignore[union-attr]
    assert cron.latest_at_or_before(oracle[5] - timedelta(microseconds=1)).at == oracle[4]  # type: ignore[union-attr]
    assert cron.next_after(oracle[5]).at == oracle[6]
    # 0001-01-01T00:00:00Z is not an instant of every 17 s from 2024-12-31T23:59:59Z: the one
    # at or before it lies before the calendar, so there is none.
    cron = compile_cron("@every 17s", "UTC", at("2024-12-31T23:59:59"))
    assert cron.latest_at_or_before(datetime(1, 1, 1, tzinfo=UTC)) is None


def test_written_in_words() -> None:
    assert describe("@every 90s") == "every 90s"
    assert describe("@EVERY  1H30m") == "every 1h30m"
    assert interval_words("@every 15m", at("2026-01-01T09:00:00"), counted=True) == (
        "every 15m, counted from 2026-01-01T09:00:00Z")
    assert interval_words("@every 15m", counted=True) == "every 15m, counted from 1970-01-01T00:00:00Z"
    assert interval_words("*/15 * * * *") is None


@pytest.mark.parametrize(("given", "message"), [
    ({"every": "0s"}, "every: '0s' is zero; an interval is at least 1s"),
    ({"every": "-90s"}, "every: '-90s' is negative; an interval is at least 1s"),
    ({"every": "500ms"}, "every: '500ms' is below one second; an interval is at least 1s"),
    ({"every": "0.5s"}, "every: '0.5s' is below one second; an interval is at least 1s"),
    ({"every": timedelta(milliseconds=500)}, "every: 0:00:00.500000 is below one second; an interval is at least 1s"),
    ({"every": timedelta(seconds=-5)}, "every: -1 day, 23:59:55 is negative; an interval is at least 1s"),
    ({"every": timedelta(seconds=1.5)}, "every: 0:00:01.500000 is not a whole number of seconds"),
    ({"every": "soon"}, "every: expected a duration such as 90s, 15m, 1h30m, 14d, got 'soon'"),
    ({"every": 90}, "every: expected a duration such as 90s, 15m, 1h30m, got 90"),
    ({"every": "367d"}, "every: '367d' is longer than 366 days"),
    ({"cron_expr": "@every 0s"}, "cron_expr: '0s' is zero; an interval is at least 1s"),
    ({"cron_expr": "@every -1m"}, "cron_expr: '-1m' is negative; an interval is at least 1s"),
    ({"cron_expr": "@every ninety"}, "cron_expr: expected a duration such as 90s, 15m, 1h30m, 14d, got 'ninety'"),
    ({"cron_expr": "@every"}, "cron_expr: '@every' names no interval; write a duration: @every 90s"),
    ({"cron_expr": "* * * * *", "every": "90s"}, "every: give a cron expression or every, not both"),
    ({"every": "90s", "jitter": timedelta(seconds=90)},
     "jitter: 0:01:30 must be shorter than the shortest period 0:01:30 of '@every 90s'"),
])
def test_bad_input_is_one_line_and_nothing_is_stored(client: Client, conn: psycopg.Connection[Any],
                                                     given: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as refused:
        client.periodic("bad", kind="k", **given)
    assert refused.value.message == message
    if "every" not in given or "cron_expr" in given:  # the run-time API takes the expression
        with pytest.raises(ValidationError) as refused_at_run_time:
            client.create_schedule("bad", given.get("cron_expr", "* * * * *"), "k",
                                   **{k: v for k, v in given.items() if k != "cron_expr"})
        assert refused_at_run_time.value.message == message
    client.sync()
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone()["n"] == 0  # type: ignore[index]


# --- the fire path ----------------------------------------------------------------------------


def test_every_and_the_written_form_store_the_same_row(client: Client, conn: psycopg.Connection[Any]) -> None:
    client.periodic("a", kind="k", every="90s")
    client.periodic("b", "@every 90s", "k")
    client.periodic("c", kind="k", every=timedelta(minutes=15), start_at=at("2026-01-01T09:00:00"))
    client.sync()
    rows = conn.execute("SELECT name, cron_expr, start_at FROM awa.cron_jobs ORDER BY name").fetchall()
    assert [(r["name"], r["cron_expr"], r["start_at"]) for r in rows] == [
        ("a", "@every 90s", None), ("b", "@every 90s", None), ("c", "@every 900s", at("2026-01-01T09:00:00"))]


def test_racing_evaluators_fire_each_instant_exactly_once(dsn: str, conn: psycopg.Connection[Any]) -> None:
    clients = [Client(dsn, operator=f"racer{i}@test") for i in range(2)]
    anchor = at("2025-01-01T00:00:03")
    for client in clients:
        client.periodic("seven", kind="k", every="7s", missed_fire_policy="catch_up", start_at=anchor)
        client.periodic("thirty", kind="k", every="30s")
        client.sync()
    force(conn, "UPDATE awa.cron_jobs SET created_at = %s, last_enqueued_at = %s, next_fire_at = NULL",
          (at("2025-01-01T00:00:00"), at("2025-01-01T00:00:00")))
    nows = [at("2025-01-01T00:00:00") + timedelta(seconds=s, milliseconds=100) for s in range(1, 100)]
    results = race(clients, nows)
    per_fire = Counter((r["name"], r["fire"]) for r in conn.execute(
        "SELECT metadata ->> 'cron_name' AS name, metadata ->> 'cron_fire_time' AS fire FROM awa.jobs"))
    assert set(per_fire.values()) == {1}
    # 00:00:03, 00:00:10, ... up to 00:01:34 (the last instant at or before 00:01:39.100).
    sevens = walk(anchor, timedelta(seconds=7), at("2025-01-01T00:00:00"), 14)
    assert (stamp(sevens[0]), stamp(sevens[-1])) == ("2025-01-01T00:00:03Z", "2025-01-01T00:01:34Z")
    assert fire_times(conn, "seven") == [stamp(t) for t in sevens]
    assert fire_times(conn, "thirty") == ["2025-01-01T00:00:30Z", "2025-01-01T00:01:00Z", "2025-01-01T00:01:30Z"]
    assert sum(r.fired for r in results) == 14 + 3
    for client in clients:
        client.close()


def test_catch_up_after_a_downtime_replays_exactly_the_missed_instants(
        client: Client, conn: psycopg.Connection[Any]) -> None:
    client.periodic("replay", kind="k", every="90s", missed_fire_policy="catch_up",
                    start_at=at("2025-01-01T00:00:30"))
    client.periodic("latest", kind="k", every="90s", start_at=at("2025-01-01T00:00:30"))
    client.sync()
    force(conn, "UPDATE awa.cron_jobs SET created_at = %s, next_fire_at = NULL", (at("2025-01-01T00:00:00"),))
    assert sorted(j.name for j in client.evaluate(now=at("2025-01-01T00:00:30")).jobs) == ["latest", "replay"]
    # Down from 00:00:31 to 00:10:00: six instants were missed.
    client.evaluate(now=at("2025-01-01T00:10:00"))
    assert fire_times(conn, "replay") == [
        "2025-01-01T00:00:30Z", "2025-01-01T00:02:00Z", "2025-01-01T00:03:30Z", "2025-01-01T00:05:00Z",
        "2025-01-01T00:06:30Z", "2025-01-01T00:08:00Z", "2025-01-01T00:09:30Z"]
    assert fire_times(conn, "latest") == ["2025-01-01T00:00:30Z", "2025-01-01T00:09:30Z"]  # coalesce: the latest
    rows = conn.execute("SELECT name, last_enqueued_at, next_fire_at FROM awa.cron_jobs ORDER BY name").fetchall()
    assert [(r["last_enqueued_at"], r["next_fire_at"]) for r in rows] == [
        (at("2025-01-01T00:09:30"), at("2025-01-01T00:11:00"))] * 2
    assert client.evaluate(now=at("2025-01-01T00:10:59")).jobs == []


def test_previews_follow_the_anchor_and_ignore_the_zone(client: Client, conn: psycopg.Connection[Any]) -> None:
    client.periodic("p", kind="k", every="1h30m", timezone="Asia/Kolkata", start_at=at("2025-03-01T00:10:00"))
    client.periodic("e", kind="k", every="25h", timezone="America/New_York")
    client.sync()
    fires = client.reads.next_fires("p", 3, after=at("2025-03-01T02:00:00"))
    assert [(f.utc, f.local.strftime("%H:%M %Z"), f.dst) for f in fires] == [
        (at("2025-03-01T03:10:00"), "08:40 IST", None), (at("2025-03-01T04:40:00"), "10:10 IST", None),
        (at("2025-03-01T06:10:00"), "11:40 IST", None)]
    # Before its start, the preview starts at the start (k = 0).
    assert [f.utc for f in client.reads.next_fires("p", 2, after=at("2025-02-01T00:00:00"))] == [
        at("2025-03-01T00:10:00"), at("2025-03-01T01:40:00")]
    # 25 h from the epoch across New York's spring forward: 2025-03-09T06:00Z is
    # 1,741,500,000 s = 19,350 * 90,000 s, an instant.
    assert [f.utc for f in client.reads.next_fires("e", 3, after=at("2025-03-09T00:00:00"))] == [
        at("2025-03-09T06:00:00"), at("2025-03-10T07:00:00"), at("2025-03-11T08:00:00")]
    shown = client.reads.get_schedule("p")
    assert (shown.cron_expr, shown.start_at) == ("@every 1h30m", at("2025-03-01T00:10:00"))


def test_a_resume_preview_counts_the_interval_instants(client: Client, conn: psycopg.Connection[Any]) -> None:
    client.periodic("r", kind="k", every="10m", missed_fire_policy="catch_up")
    client.sync()
    force(conn, "UPDATE awa.cron_jobs SET created_at = %s, last_enqueued_at = %s, next_fire_at = NULL, "
                "paused_at = %s, paused_by = 'ops'",
          (at("2025-01-01T00:00:00"), at("2025-01-01T00:00:00"), at("2025-01-01T00:01:00")))
    preview = client.reads.resume_preview("r", now=at("2025-01-01T00:35:00"))
    assert preview.instants == (at("2025-01-01T00:10:00"), at("2025-01-01T00:20:00"), at("2025-01-01T00:30:00"))


def test_backfill_and_the_ledger_count_the_anchored_instants(client: Client, conn: psycopg.Connection[Any]) -> None:
    # Every 20 minutes from 00:05: 00:05, 00:25, 00:45, 01:05 ...
    client.periodic("twenty", kind="k", every="20m", start_at=at("2025-01-01T00:05:00"))
    client.sync()
    force(conn, "UPDATE awa.cron_jobs SET created_at = %s, next_fire_at = NULL", (at("2025-01-01T00:00:00"),))
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:05:00")).jobs] == ["2025-01-01T00:05:00Z"]
    # Back at 01:10: coalesce fires the latest, 01:05; 00:25 and 00:45 were folded into it.
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T01:10:00")).jobs] == ["2025-01-01T01:05:00Z"]
    result = client.actions.backfill("twenty", at("2025-01-01T00:00:00"), at("2025-01-01T01:05:00"),
                                     operator="ops@host", now=at("2025-01-01T01:20:00"))
    assert result.instants == (at("2025-01-01T00:25:00"), at("2025-01-01T00:45:00"))
    verdicts = client.reads.ledger("twenty", now=at("2025-01-01T01:20:00"))
    assert [(v.instant, v.verdict) for v in verdicts] == [
        (at("2025-01-01T00:05:00"), "fired"), (at("2025-01-01T00:25:00"), "backfilled"),
        (at("2025-01-01T00:45:00"), "backfilled"), (at("2025-01-01T01:05:00"), "fired")]


def test_editing_the_start_moves_the_anchor(client: Client, conn: psycopg.Connection[Any]) -> None:
    client.create_schedule("hourly", "@every 1h", "k", start_at=at("2037-01-01T00:00:00"))
    assert [f.utc for f in client.reads.next_fires("hourly", 2, after=at("2037-01-01T05:30:00"))] == [
        at("2037-01-01T06:00:00"), at("2037-01-01T07:00:00")]
    client.update_schedule("hourly", start_at=at("2037-01-01T00:15:00"))
    assert [f.utc for f in client.reads.next_fires("hourly", 2, after=at("2037-01-01T05:30:00"))] == [
        at("2037-01-01T06:15:00"), at("2037-01-01T07:15:00")]
    client.update_schedule("hourly", start_at=None)  # counted from the epoch again: on the hour
    assert [f.utc for f in client.reads.next_fires("hourly", 1, after=at("2037-01-01T05:30:00"))] == [
        at("2037-01-01T06:00:00")]
    row = conn.execute("SELECT cron_expr, start_at, next_fire_at FROM awa.cron_jobs").fetchone()
    assert row == {"cron_expr": "@every 1h", "start_at": None, "next_fire_at": None}  # an edit resets the hint
