"""S51: rows without a next-fire hint are decided by group (cron_expr, timezone): due ones
fire through the Python path in the same pass, the others get their hint set-based."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import psycopg
from croniter import croniter
from engine_helpers import at, fire_times, schedule_row

from awa_tui import Client
from awa_tui.engine.firing import evaluator, hints


def _insert(conn: Any, name: str, cron_expr: str, *, zone: str = "UTC", created: datetime,
            last: datetime | None = None, policy: str = "coalesce", **bounds: Any) -> None:
    columns = ", ".join(bounds)
    values = "".join(f", %({k})s" for k in bounds)
    conn.execute(
        f"INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, missed_fire_policy, created_at, "
        f"last_enqueued_at{', ' + columns if columns else ''}) "
        f"VALUES (%(name)s, %(expr)s, %(zone)s, 'k', %(policy)s, %(created)s, %(last)s{values})",
        {"name": name, "expr": cron_expr, "zone": zone, "policy": policy, "created": created, "last": last,
         **bounds},
    )


def _hint(conn: Any, name: str) -> datetime | None:
    return schedule_row(conn, name)["next_fire_at"]


def _unhinted(conn: Any) -> list[str]:
    rows = conn.execute("SELECT name FROM awa.cron_jobs WHERE next_fire_at IS NULL ORDER BY name").fetchall()
    return [r["name"] for r in rows]


def _croniter_next(expr: str, zone: str, after: datetime) -> datetime:
    """The oracle: croniter's next instant after `after`, in the zone (no DST edge here)."""
    return croniter(expr, after.astimezone(ZoneInfo(zone))).get_next(datetime).astimezone(after.tzinfo)


def test_rows_without_a_hint_get_the_hints_croniter_gives(client: Client, conn: psycopg.Connection[Any]) -> None:
    now = at("2025-06-10T12:34:30")
    rows: dict[str, tuple[str, str, datetime, datetime | None]] = {}
    exprs = ["*/5 * * * *", "0 * * * *", "30 2 * * *", "15 10 * * 1", "0 0 1 * *", "*/7 3-23 * * *"]
    # Candidates at or after each group's latest instant: nothing is due, the hint is N.
    for i, expr in enumerate(exprs):
        for zone in ("UTC", "Asia/Tokyo", "Asia/Kolkata"):
            for j, (created, last) in enumerate([
                (now - timedelta(seconds=20), None),  # registered just now
                (now - timedelta(days=30), now - timedelta(seconds=1)),  # fired a second ago
                (now + timedelta(seconds=30), None),  # created after now, still in the lookback
            ]):
                name = f"r{i}-{zone}-{j}"
                rows[name] = (expr, zone, created, last)
                _insert(conn, name, expr, zone=zone, created=created, last=last)
    result = client.evaluate(now=now)
    assert (result.jobs, result.errors, result.examined) == ([], [], 0)  # none planned row by row
    for name, (expr, zone, created, last) in rows.items():
        candidate = last if last is not None else created - timedelta(minutes=1, microseconds=1)
        expected = _croniter_next(expr, zone, max(candidate, now))
        assert _croniter_next(expr, zone, candidate) == expected  # the premise: nothing in (C, now]
        assert _hint(conn, name) == expected, name
    assert _unhinted(conn) == []


def test_the_first_fire_lookback_is_exact_on_the_sql_path(client: Client, conn: psycopg.Connection[Any]) -> None:
    """S13: only fires in [created_at - 1 minute, now] count, to the microsecond."""
    now = at("2025-01-01T01:01:30")
    _insert(conn, "in", "0 * * * *", created=at("2025-01-01T01:01:00"))  # 01:00 = created - 1 min: due
    _insert(conn, "out", "0 * * * *", created=at("2025-01-01T01:01:00") + timedelta(microseconds=1))
    result = client.evaluate(now=now)
    assert [(j.name, j.fire_time) for j in result.jobs] == [("in", "2025-01-01T01:00:00Z")]
    assert _hint(conn, "in") == at("2025-01-01T02:00:00")
    assert _hint(conn, "out") == at("2025-01-01T02:00:00")
    assert fire_times(conn, "out") == []


def test_due_rows_without_a_hint_fire_in_the_same_pass(client: Client, conn: psycopg.Connection[Any]) -> None:
    """The group's other rows are hinted in SQL; the due ones fire at once, as S13 says."""
    now = at("2025-01-01T00:03:30")
    _insert(conn, "first", "* * * * *", created=at("2025-01-01T00:03:10"))
    _insert(conn, "coalesce", "* * * * *", created=at("2024-12-01T00:00:00"), last=at("2025-01-01T00:00:00"))
    _insert(conn, "catch-up", "* * * * *", created=at("2024-12-01T00:00:00"), last=at("2025-01-01T00:00:00"),
            policy="catch_up")
    _insert(conn, "not-yet", "* * * * *", created=at("2024-12-01T00:00:00"), last=at("2025-01-01T00:03:00"))
    _insert(conn, "hourly", "0 * * * *", created=at("2025-01-01T00:03:00"))
    result = client.evaluate(now=now)
    assert sorted((j.name, j.fire_time) for j in result.jobs) == [
        ("catch-up", "2025-01-01T00:01:00Z"), ("catch-up", "2025-01-01T00:02:00Z"),
        ("catch-up", "2025-01-01T00:03:00Z"), ("coalesce", "2025-01-01T00:03:00Z"),
        ("first", "2025-01-01T00:03:00Z"),
    ]
    assert result.examined == 3  # only the due rows went through Python
    assert fire_times(conn, "catch-up") == [f"2025-01-01T00:0{m}:00Z" for m in (1, 2, 3)]
    assert {n: _hint(conn, n) for n in ("first", "coalesce", "catch-up", "not-yet", "hourly")} == {
        "first": at("2025-01-01T00:04:00"), "coalesce": at("2025-01-01T00:04:00"),
        "catch-up": at("2025-01-01T00:04:00"), "not-yet": at("2025-01-01T00:04:00"),
        "hourly": at("2025-01-01T01:00:00"),
    }
    # The next pass fires from the hints alone; nothing twice.
    result = client.evaluate(now=at("2025-01-01T00:04:01"))
    assert sorted(j.name for j in result.jobs) == ["catch-up", "coalesce", "first", "not-yet"]
    assert fire_times(conn, "first") == ["2025-01-01T00:03:00Z", "2025-01-01T00:04:00Z"]


def test_dst_hints_on_the_sql_path(client: Client, conn: psycopg.Connection[Any]) -> None:
    """S14 through the group's instants: the gap fires at its end, the fold once, first."""
    ny = "America/New_York"
    _insert(conn, "gap", "30 2 * * *", zone=ny, created=at("2025-03-08T12:00:00"))
    _insert(conn, "fold", "30 1 * * *", zone=ny, created=at("2025-10-01T00:00:00"), last=at("2025-11-01T05:30:00"))
    client.evaluate(now=at("2025-03-09T06:00:00"))
    assert _hint(conn, "gap") == at("2025-03-09T07:00:00")  # 02:30 does not exist: 03:00 EDT
    conn.execute("DELETE FROM awa.cron_jobs WHERE name = 'gap'")
    client.evaluate(now=at("2025-11-02T05:00:00"))
    assert _hint(conn, "fold") == at("2025-11-02T05:30:00")  # 01:30 EDT, the first occurrence
    result = client.evaluate(now=at("2025-11-02T06:40:00"))  # after 01:30 EST too: still one fire
    assert [(j.name, j.fire_time) for j in result.jobs] == [("fold", "2025-11-02T05:30:00Z")]
    assert _hint(conn, "fold") == at("2025-11-03T06:30:00")


def test_a_broken_group_is_reported_per_row_and_the_others_get_hints(
    client: Client, conn: psycopg.Connection[Any]
) -> None:
    now = at("2025-01-01T00:01:30")
    created = at("2025-01-01T00:01:10")
    _insert(conn, "a-bad", "every tuesday", created=created)
    _insert(conn, "b-bad", "every tuesday", created=created)
    _insert(conn, "c-zone", "0 * * * *", zone="Mars/Olympus_Mons", created=created)
    _insert(conn, "d-policy", "0 * * * *", policy="whenever", created=created)
    _insert(conn, "e-good", "0 * * * *", created=created)
    for _ in range(2):
        result = client.evaluate(now=now)
        assert sorted(m.split("'")[1] for m in result.errors) == ["a-bad", "b-bad", "c-zone", "d-policy"]
    assert _hint(conn, "e-good") == at("2025-01-01T01:00:00")
    assert _unhinted(conn) == ["a-bad", "b-bad", "c-zone", "d-policy"]


def test_rows_with_bounds_take_the_python_path(client: Client, conn: psycopg.Connection[Any]) -> None:
    now = at("2025-01-01T00:01:30")
    created = at("2025-01-01T00:01:10")
    _insert(conn, "starts", "0 * * * *", created=created, start_at=at("2025-01-01T05:00:01"))
    _insert(conn, "ended", "0 * * * *", created=created, end_at=at("2025-01-01T00:59:59"))
    _insert(conn, "counted", "0 * * * *", created=created, max_fires=3)
    result = client.evaluate(now=now)
    assert (result.jobs, result.errors, result.examined) == ([], [], 3)
    assert _hint(conn, "starts") == at("2025-01-01T06:00:00")  # not N: the first instant from start_at
    assert schedule_row(conn, "ended")["finished_at"] == now  # finished on this pass, never hinted N
    assert _hint(conn, "counted") == at("2025-01-01T01:00:00")


def test_a_fire_edit_or_pause_between_grouping_and_hint_write_wins(
    client: Client, conn: psycopg.Connection[Any]
) -> None:
    now = at("2025-01-01T00:01:30")
    created = at("2025-01-01T00:01:10")
    for name in ("fired", "edited", "paused", "plain"):
        _insert(conn, name, "0 * * * *", created=created)
    groups = hints.unhinted_groups(conn, now, evaluator.CANDIDATE_LOOKBACK)
    assert groups.instants == {("0 * * * *", "UTC"): hints.GroupInstants(at("2025-01-01T00:00:00"),
                                                                          at("2025-01-01T01:00:00"))}
    # Committed after the grouping, before the hint write:
    conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = '2025-01-01T00:00:00Z', "
                 "next_fire_at = '2025-01-01T02:00:00Z' WHERE name = 'fired'")
    conn.execute("UPDATE awa.cron_jobs SET cron_expr = '30 * * * *' WHERE name = 'edited'")
    client.actions.pause("paused", operator="ops")
    assert hints.write_group_hints(conn, groups, evaluator.FAULT_SQL, evaluator.CANDIDATE_LOOKBACK) == 1
    assert _hint(conn, "plain") == at("2025-01-01T01:00:00")
    assert _hint(conn, "fired") == at("2025-01-01T02:00:00")  # the fire's hint stands
    assert _hint(conn, "edited") is None  # its group is another one now: the next pass decides
    assert _hint(conn, "paused") is None
    client.evaluate(now=now)
    assert _hint(conn, "edited") == at("2025-01-01T00:30:00")


def test_hints_are_written_in_bounded_chunks(client: Client, conn: psycopg.Connection[Any]) -> None:
    now = at("2025-01-01T00:01:30")
    for i in range(5):
        _insert(conn, f"s{i}", "0 * * * *", created=at("2025-01-01T00:01:10"))
    _insert(conn, "fired", "0 * * * *", created=at("2024-01-01T00:00:00"), last=at("2025-01-01T00:00:00"))
    groups = hints.unhinted_groups(conn, now, evaluator.CANDIDATE_LOOKBACK)
    written = [hints.write_group_hints(conn, groups, evaluator.FAULT_SQL, evaluator.CANDIDATE_LOOKBACK, limit=2)
               for _ in range(4)]
    assert written == [3, 2, 1, 0]  # up to `limit` fired rows and `limit` never-fired ones per chunk
    assert _unhinted(conn) == []
    # With every hint written, a pass finds no group and plans nothing.
    assert not hints.unhinted_groups(conn, now, evaluator.CANDIDATE_LOOKBACK)
    assert client.evaluate(now=now).examined == 0


def test_a_faulted_row_is_never_hinted(client: Client, conn: psycopg.Connection[Any]) -> None:
    """S15: a row with a fault holds no hint; it is reported once its instant is due."""
    created = at("2025-01-01T00:01:10")
    _insert(conn, "bad", "0 * * * *", created=created)
    _insert(conn, "good", "0 * * * *", created=created)
    conn.execute("UPDATE awa.cron_jobs SET priority = 9 WHERE name = 'bad'")
    assert client.evaluate(now=at("2025-01-01T00:01:30")).errors == []
    assert _unhinted(conn) == ["bad"]
    result = client.evaluate(now=at("2025-01-01T01:00:01"))
    assert [j.name for j in result.jobs] == ["good"]
    assert result.errors == ["schedule 'bad' skipped: priority: must be an integer 1..4, got 9"]
