"""S14: daylight saving time, exact instants, driven through real evaluator passes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from engine_helpers import at, fire_times

from awa_tui import Client

NY = "America/New_York"


def _hourly_passes(client: Client, start: str, hours: int) -> None:
    for hour in range(hours + 1):
        client.evaluate(now=at(start) + timedelta(hours=hour))


def test_spring_forward_gap_fires_once_at_the_end_of_the_gap(client: Client, conn: Any, register: Any) -> None:
    register("nightly", "30 2 * * *", timezone=NY, last="2025-03-08T07:30:00")
    assert client.evaluate(now=at("2025-03-09T06:59:59")).jobs == []
    result = client.evaluate(now=at("2025-03-09T07:00:00"))
    assert [j.fire_time for j in result.jobs] == ["2025-03-09T07:00:00Z"]
    assert client.evaluate(now=at("2025-03-09T07:30:00")).jobs == []
    assert client.evaluate(now=at("2025-03-10T06:29:59")).jobs == []
    assert [j.fire_time for j in client.evaluate(now=at("2025-03-10T06:30:00")).jobs] == ["2025-03-10T06:30:00Z"]
    assert fire_times(conn, "nightly") == ["2025-03-09T07:00:00Z", "2025-03-10T06:30:00Z"]


def test_fall_back_fold_fires_once_at_the_first_occurrence(client: Client, conn: Any, register: Any) -> None:
    register("early", "30 1 * * *", timezone=NY, last="2025-11-01T05:30:00")
    for now in ("2025-11-02T05:29:59", "2025-11-02T05:30:00", "2025-11-02T06:00:00", "2025-11-02T06:30:00",
                "2025-11-02T06:45:00", "2025-11-03T06:29:59", "2025-11-03T06:30:00"):
        client.evaluate(now=at(now))
    assert fire_times(conn, "early") == ["2025-11-02T05:30:00Z", "2025-11-03T06:30:00Z"]


def test_fold_with_coalesce_after_both_occurrences_fires_the_first(client: Client, conn: Any, register: Any) -> None:
    register("early", "30 1 * * *", timezone=NY, last="2025-11-01T05:30:00")
    result = client.evaluate(now=at("2025-11-02T06:45:00"))  # both 01:30s are past
    assert [j.fire_time for j in result.jobs] == ["2025-11-02T05:30:00Z"]
    assert client.evaluate(now=at("2025-11-02T07:00:00")).jobs == []


def test_hourly_fires_24_times_on_the_25_hour_day(client: Client, conn: Any, register: Any) -> None:
    # 2025-11-02 in New York runs from 04:00Z to 05:00Z the next day (25 hours).
    register("hourly", "0 * * * *", timezone=NY, last="2025-11-02T03:00:00")
    _hourly_passes(client, "2025-11-02T04:00:00", 25)
    fired = fire_times(conn, "hourly")
    local_day = [f for f in fired if "2025-11-02T04:00:00Z" <= f < "2025-11-03T05:00:00Z"]
    assert len(local_day) == 24
    assert "2025-11-02T06:00:00Z" not in fired  # the second 01:00
    assert local_day[:4] == [
        "2025-11-02T04:00:00Z", "2025-11-02T05:00:00Z", "2025-11-02T07:00:00Z", "2025-11-02T08:00:00Z",
    ]
    assert fired[-1] == "2025-11-03T05:00:00Z"


def test_hourly_fires_23_times_on_the_23_hour_day(client: Client, conn: Any, register: Any) -> None:
    # 2025-03-09 in New York runs from 05:00Z to 04:00Z the next day (23 hours; 02:00 does not exist).
    register("hourly", "0 * * * *", timezone=NY, last="2025-03-09T04:00:00")
    _hourly_passes(client, "2025-03-09T05:00:00", 23)
    local_day = [f for f in fire_times(conn, "hourly") if "2025-03-09T05:00:00Z" <= f < "2025-03-10T04:00:00Z"]
    assert len(local_day) == 23
    assert local_day[:4] == [
        "2025-03-09T05:00:00Z", "2025-03-09T06:00:00Z", "2025-03-09T07:00:00Z", "2025-03-09T08:00:00Z",
    ]


def test_catch_up_across_the_fold_skips_the_second_occurrence(client: Client, conn: Any, register: Any) -> None:
    register("half-hourly", "*/30 * * * *", timezone=NY, last="2025-11-02T04:30:00", missed_fire_policy="catch_up")
    result = client.evaluate(now=at("2025-11-02T07:30:00"))
    assert [j.fire_time for j in result.jobs] == [
        "2025-11-02T05:00:00Z", "2025-11-02T05:30:00Z",  # 01:00 and 01:30 EDT (first occurrence)
        "2025-11-02T07:00:00Z", "2025-11-02T07:30:00Z",  # 02:00 and 02:30 EST
    ]


def test_catch_up_across_the_gap_fires_the_gap_once(client: Client, conn: Any, register: Any) -> None:
    register("quarter", "*/15 * * * *", timezone=NY, last="2025-03-09T06:45:00", missed_fire_policy="catch_up")
    result = client.evaluate(now=at("2025-03-09T07:20:00"))
    # 02:00, 02:15, 02:30, 02:45 do not exist: one fire at 03:00 EDT (07:00Z), then 03:15.
    assert [j.fire_time for j in result.jobs] == ["2025-03-09T07:00:00Z", "2025-03-09T07:15:00Z"]


def test_half_hour_dst_zone(client: Client, conn: Any, register: Any) -> None:
    # Lord Howe moves 30 minutes: 02:00 -> 02:30 on 2025-10-05; 02:15 does not exist that day.
    register("lh", "15 2 * * *", timezone="Australia/Lord_Howe", last="2025-10-03T15:45:00")  # 02:15 +10:30 on Oct 4
    client.evaluate(now=at("2025-10-04T15:29:59"))
    client.evaluate(now=at("2025-10-04T15:30:00"))
    client.evaluate(now=at("2025-10-05T15:15:00"))
    assert fire_times(conn, "lh") == ["2025-10-04T15:30:00Z", "2025-10-05T15:15:00Z"]
