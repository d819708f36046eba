"""S9-S13: which fires are due, and the job each fire writes. Every pass at an explicit `now`."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import psycopg
from engine_helpers import at, fire_times, job_count, schedule_row

from awa_tui import Client


def _iso(seconds_after: int, base: str) -> str:
    return (at(base) + timedelta(seconds=seconds_after)).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- first fire (S13) ------------------------------------------------------------------


def test_first_fire_is_only_the_latest_fire_since_creation(client: Client, conn: Any, register: Any) -> None:
    register("minutely", "* * * * *", created="2025-01-01T00:00:00", missed_fire_policy="catch_up")
    result = client.evaluate(now=at("2025-01-01T00:10:30"))
    assert [(j.name, j.fire_time) for j in result.jobs] == [("minutely", "2025-01-01T00:10:00Z")]
    assert schedule_row(conn, "minutely")["last_enqueued_at"] == at("2025-01-01T00:10:00")
    # The next pass continues from there, with the schedule's own policy (catch_up here).
    result = client.evaluate(now=at("2025-01-01T00:13:00"))
    assert [j.fire_time for j in result.jobs] == [
        "2025-01-01T00:11:00Z", "2025-01-01T00:12:00Z", "2025-01-01T00:13:00Z",
    ]


def test_first_fire_looks_back_one_minute_before_creation(client: Client, conn: Any, register: Any) -> None:
    # Created 40 s after its 10:00 fire: that fire is within [created_at - 1 min, now].
    register("daily", "0 10 * * *", created="2025-01-01T10:00:40")
    result = client.evaluate(now=at("2025-01-01T10:00:50"))
    assert [j.fire_time for j in result.jobs] == ["2025-01-01T10:00:00Z"]


def test_first_fire_ignores_fires_before_the_lookback(client: Client, conn: Any, register: Any) -> None:
    register("daily", "0 10 * * *", created="2025-01-01T10:01:01")
    assert client.evaluate(now=at("2025-01-02T09:59:59")).jobs == []
    assert schedule_row(conn, "daily")["last_enqueued_at"] is None
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-02T10:00:00")).jobs] == ["2025-01-02T10:00:00Z"]


def test_first_fire_exactly_at_the_lookback_bound_counts(client: Client, register: Any) -> None:
    register("daily", "0 10 * * *", created="2025-01-01T10:01:00")
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T10:01:00")).jobs] == ["2025-01-01T10:00:00Z"]


def test_nothing_fires_before_it_is_due(client: Client, conn: Any, register: Any) -> None:
    register("hourly", "0 * * * *", created="2025-01-01T00:30:00")
    assert client.evaluate(now=at("2025-01-01T00:59:59")).jobs == []
    result = client.evaluate(now=at("2025-01-01T01:00:00"))
    assert [j.fire_time for j in result.jobs] == ["2025-01-01T01:00:00Z"]
    assert client.evaluate(now=at("2025-01-01T01:00:00")).jobs == []
    assert client.evaluate(now=at("2025-01-01T01:59:59")).jobs == []
    assert fire_times(conn, "hourly") == ["2025-01-01T01:00:00Z"]


# --- coalesce (S13) ----------------------------------------------------------------------


def test_coalesce_after_a_day_of_downtime_fires_once_the_latest(client: Client, conn: Any, register: Any) -> None:
    register("per-second", "* * * * * *", last="2025-01-01T00:00:00")
    started = time.process_time()
    result = client.evaluate(now=at("2025-01-02T00:00:00") + timedelta(milliseconds=500))
    cpu = time.process_time() - started
    assert [j.fire_time for j in result.jobs] == ["2025-01-02T00:00:00Z"]
    assert schedule_row(conn, "per-second")["last_enqueued_at"] == at("2025-01-02T00:00:00")
    # One computation, not 86,400 walked ticks (which costs tens of seconds).
    assert cpu < 1.0
    assert job_count(conn) == 1


def test_coalesce_fires_the_latest_of_several_missed(client: Client, conn: Any, register: Any) -> None:
    register("five", "*/5 * * * *", last="2025-01-01T00:00:00")
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:17:00")).jobs] == ["2025-01-01T00:15:00Z"]
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:20:00")).jobs] == ["2025-01-01T00:20:00Z"]
    assert fire_times(conn, "five") == ["2025-01-01T00:15:00Z", "2025-01-01T00:20:00Z"]


# --- catch_up (S13) ----------------------------------------------------------------------


def test_catch_up_replays_in_order_bounded_per_pass(client: Client, conn: Any, register: Any) -> None:
    base = "2025-01-01T00:00:00"
    register("replay", "* * * * * *", last=base, missed_fire_policy="catch_up")
    now = at(base) + timedelta(seconds=2500, milliseconds=250)
    counts = [client.evaluate(now=now).fired for _ in range(4)]
    assert counts == [1000, 1000, 500, 0]
    assert fire_times(conn, "replay") == [_iso(s, base) for s in range(1, 2501)]
    assert schedule_row(conn, "replay")["last_enqueued_at"] == at(base) + timedelta(seconds=2500)


def test_catch_up_limit_is_per_schedule(dsn: str, conn: Any, register: Any) -> None:
    client = Client(dsn, catch_up_limit=3)
    base = "2025-01-01T00:00:00"
    client.periodic("a", "* * * * *", "k", missed_fire_policy="catch_up")
    client.periodic("b", "* * * * *", "k", missed_fire_policy="catch_up")
    client.sync()
    conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = %s", (at(base),))
    result = client.evaluate(now=at("2025-01-01T00:10:00"))
    assert sorted((j.name, j.fire_time) for j in result.jobs) == [
        (n, _iso(60 * m, base)) for n in ("a", "b") for m in (1, 2, 3)
    ]
    client.close()


# --- the job a fire writes (S12) -----------------------------------------------------------


def test_fired_job_columns_and_metadata_stamp(client: Client, conn: Any, register: Any) -> None:
    register(
        "stamp", "0 12 * * *", kind="billing.run", last="2025-03-01T12:00:00",
        args={"plan": "pro", "n": [1, 2]}, queue="billing", priority=4, max_attempts=3,
        tags=["finance", "nightly"], metadata={"team": "ledger", "cron_name": "spoof", "cron_fire_time": "spoof"},
    )
    result = client.evaluate(now=at("2025-03-02T12:00:00"))
    assert len(result.jobs) == 1
    job = conn.execute("SELECT * FROM awa.jobs WHERE id = %s", (result.jobs[0].id,)).fetchone()
    assert {k: job[k] for k in (
        "kind", "queue", "args", "state", "priority", "attempt", "max_attempts", "tags", "metadata",
    )} == {
        "kind": "billing.run",
        "queue": "billing",
        "args": {"plan": "pro", "n": [1, 2]},
        "state": "available",
        "priority": 4,
        "attempt": 0,
        "max_attempts": 3,
        "tags": ["finance", "nightly"],
        "metadata": {"team": "ledger", "cron_name": "stamp", "cron_fire_time": "2025-03-02T12:00:00Z"},
    }


def test_seconds_schedule_stamps_whole_seconds(client: Client, register: Any) -> None:
    register("sec", "30 0 12 * * *", last="2025-03-01T12:00:30")
    result = client.evaluate(now=at("2025-03-02T12:00:30") + timedelta(microseconds=999_999))
    assert [j.fire_time for j in result.jobs] == ["2025-03-02T12:00:30Z"]


def test_paused_and_retired_rows_are_not_evaluated(client: Client, conn: Any, register: Any) -> None:
    register("paused", "* * * * *", last="2025-01-01T00:00:00")
    register("live", "* * * * *", last="2025-01-01T00:00:00")
    client.actions.pause("paused", operator="ops@host")
    result = client.evaluate(now=at("2025-01-01T00:05:00"))
    assert [(j.name, j.fire_time) for j in result.jobs] == [("live", "2025-01-01T00:05:00Z")]
    assert schedule_row(conn, "paused")["last_enqueued_at"] == at("2025-01-01T00:00:00")


def test_evaluate_without_now_uses_db_time(client: Client, conn: psycopg.Connection[Any], register: Any) -> None:
    register("minutely", "* * * * *", created="2025-01-01T00:00:00", last="2025-01-01T00:00:00")
    before = conn.execute("SELECT now() AS t").fetchone()["t"]
    result = client.evaluate()
    after = conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
    assert before <= result.now <= after
    expected = result.now.replace(second=0, microsecond=0)
    assert [j.fire_time for j in result.jobs] == [expected.strftime("%Y-%m-%dT%H:%M:%SZ")]
