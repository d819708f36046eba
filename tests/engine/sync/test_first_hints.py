"""S52: a sync writes the hint of each row it inserts (the first instant at or after
created_at minus S13's one-minute lookback), so a fresh registration needs no hint pass;
a hand edit of the instants a hint derives from resets it (v015)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import psycopg
from croniter import croniter
from engine_helpers import at, fire_times, force, schedule_row

from awa_tui import Client
from awa_tui.engine.schedules.definition import Schedule
from awa_tui.engine.sync.first_hints import FirstHints

EXPRS = ("* * * * *", "*/5 * * * *", "0 * * * *", "30 2 * * *", "15 10 * * 1", "0 0 1 * *", "*/10 * * * * *")
ZONES = ("UTC", "America/New_York", "Asia/Kolkata")


def _oracle(expr: str, zone: str, created: datetime) -> datetime:
    """croniter's first instant at or after created_at - 1 minute (S13's first-fire window)."""
    start = (created - timedelta(minutes=1, microseconds=1)).astimezone(ZoneInfo(zone))
    seconds = len(expr.split()) == 6  # ours puts seconds first, as croniter does when told
    return croniter(expr, start, second_at_beginning=seconds).get_next(datetime).astimezone(created.tzinfo)


def test_a_synced_row_gets_the_hint_croniter_gives(client: Client, conn: psycopg.Connection[Any]) -> None:
    wanted = {}
    for i, expr in enumerate(EXPRS):
        for zone in ZONES:
            wanted[f"s{i}-{zone}"] = (expr, zone)
            client.periodic(f"s{i}-{zone}", expr, "k", timezone=zone)
    assert client.sync()["inserted"] == len(wanted)
    rows = {r["name"]: r for r in conn.execute("SELECT name, created_at, next_fire_at FROM awa.cron_jobs").fetchall()}
    assert len({r["created_at"] for r in rows.values()}) == 1  # one transaction, one created_at
    for name, (expr, zone) in wanted.items():
        assert rows[name]["next_fire_at"] == _oracle(expr, zone, rows[name]["created_at"]), name


def test_rows_with_bounds_are_left_to_the_pass(client: Client, conn: psycopg.Connection[Any]) -> None:
    start = (datetime.now(ZoneInfo("UTC")) + timedelta(days=3)).replace(minute=30, second=0, microsecond=0)
    client.periodic("plain", "0 * * * *", "k")
    client.periodic("starts", "0 * * * *", "k", start_at=start)
    client.periodic("ends", "0 * * * *", "k", end_at=start)
    client.periodic("counted", "0 * * * *", "k", max_fires=2)
    client.sync()
    hints = {r["name"]: r["next_fire_at"] for r in conn.execute("SELECT name, next_fire_at FROM awa.cron_jobs")}
    assert hints["plain"] is not None
    assert (hints["starts"], hints["ends"], hints["counted"]) == (None, None, None)
    # The pass computes the bounded row's hint from its bounds (S46), not from created_at.
    client.evaluate()
    assert schedule_row(conn, "starts")["next_fire_at"] == start + timedelta(minutes=30)


def test_the_first_pass_fires_a_synced_row_as_it_fired_one_without_a_hint(
    client: Client, conn: psycopg.Connection[Any]
) -> None:
    """The lookback instant: a per-minute schedule registered after a boundary fires it."""
    client.periodic("hinted", "* * * * *", "k", missed_fire_policy="catch_up")
    client.periodic("unhinted", "* * * * *", "k", missed_fire_policy="catch_up")
    client.sync()
    created = schedule_row(conn, "hinted")["created_at"]
    force(conn, "UPDATE awa.cron_jobs SET next_fire_at = NULL WHERE name = 'unhinted'")
    boundary = created.replace(second=0, microsecond=0)  # within [created - 1 min, created]
    assert schedule_row(conn, "hinted")["next_fire_at"] == boundary
    # One second later, but never past the minute: the next boundary would be the latest due fire.
    now = min(created + timedelta(seconds=1), boundary + timedelta(seconds=59, microseconds=999999))
    result = client.evaluate(now=now)
    assert sorted((j.name, j.fire_time) for j in result.jobs) == [
        (n, boundary.strftime("%Y-%m-%dT%H:%M:%SZ")) for n in ("hinted", "unhinted")]
    for name in ("hinted", "unhinted"):
        assert schedule_row(conn, name)["next_fire_at"] == boundary + timedelta(minutes=1)
        assert len(fire_times(conn, name)) == 1


def test_an_authoritative_runtime_hints_the_rows_it_declares(dsn: str, conn: psycopg.Connection[Any]) -> None:
    client = Client(dsn, owner="billing", authoritative=True)
    client.periodic("owned", "*/5 * * * *", "k", timezone="Asia/Kolkata")
    client.sync()
    row = schedule_row(conn, "owned")
    assert row["owner"] == "billing"
    assert row["next_fire_at"] == _oracle("*/5 * * * *", "Asia/Kolkata", row["created_at"])
    client.close()


def test_an_update_keeps_the_hint_unless_the_timing_changed(dsn: str, conn: psycopg.Connection[Any]) -> None:
    first = Client(dsn)
    first.periodic("a", "0 * * * *", "k")
    first.periodic("b", "0 * * * *", "k")
    first.sync()
    hint = schedule_row(conn, "a")["next_fire_at"]
    first.close()
    second = Client(dsn)
    second.periodic("a", "0 * * * *", "k", queue="other")  # not timing: the hint stays
    second.periodic("b", "30 * * * *", "k")  # timing: NULL until a pass computes it
    assert second.sync()["updated"] == 2
    assert (schedule_row(conn, "a")["next_fire_at"], schedule_row(conn, "b")["next_fire_at"]) == (hint, None)
    second.close()


def test_a_hand_edit_of_last_enqueued_at_or_created_at_resets_the_hint(
    client: Client, conn: psycopg.Connection[Any]
) -> None:
    """v015: moving last_enqueued_at back replays from there (catch_up), as before S52."""
    client.periodic("replay", "* * * * *", "k", missed_fire_policy="catch_up")
    client.periodic("born", "0 * * * *", "k")
    client.periodic("kept", "0 * * * *", "k")
    client.sync()
    conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = '2025-01-01T00:00:00Z' WHERE name = 'replay'")
    conn.execute("UPDATE awa.cron_jobs SET created_at = '2025-01-01T00:30:00Z' WHERE name = 'born'")
    conn.execute("UPDATE awa.cron_jobs SET paused_at = NULL WHERE name = 'kept'")  # no instant: kept
    hints = {r["name"]: r["next_fire_at"] for r in conn.execute("SELECT name, next_fire_at FROM awa.cron_jobs")}
    assert hints["replay"] is None and hints["born"] is None and hints["kept"] is not None
    result = client.evaluate(now=at("2025-01-01T00:03:30"))
    assert sorted((j.name, j.fire_time) for j in result.jobs) == [
        ("replay", f"2025-01-01T00:0{m}:00Z") for m in (1, 2, 3)]
    # A hand edit that writes the hint too is taken as written.
    conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = '2025-01-01T00:05:00Z', "
                 "next_fire_at = '2025-01-01T00:07:00Z' WHERE name = 'replay'")
    assert schedule_row(conn, "replay")["next_fire_at"] == at("2025-01-01T00:07:00")


def test_past_its_budget_a_sync_leaves_new_pairs_to_the_pass() -> None:
    created = at("2025-06-10T12:34:30")
    schedule = Schedule.build("s", "0 * * * *", "k")
    assert FirstHints(created, budget_s=0).of(schedule) is None
    assert FirstHints(created).of(schedule) == "2025-06-10T13:00:00.000000+00:00"
