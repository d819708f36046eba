"""S56 and health: an excluded instant is neither late nor missed. A control schedule
without the exclusion, judged at the same instants, is missed (the rule would fire)."""

from __future__ import annotations

from datetime import date
from typing import Any

import psycopg
from engine_helpers import at, schedule_row
from health_helpers import health, register


def test_an_excluded_instant_is_not_missed_nor_late(client: Any, conn: psycopg.Connection[Any]) -> None:
    client.actions.set_calendar("company-holidays", [date(2025, 12, 25)], operator="ops@test")
    for name, extra in (("holiday", {"calendar": "company-holidays"}), ("control", {})):
        register(client, conn, name, "0 9 * * *", at("2025-12-24T10:00:00"), expect_success_within=60,
                 max_lateness=60, **extra)
    result = client.evaluate(now=at("2025-12-25T09:00:00"))
    assert [j.name for j in result.jobs] == ["control"]
    assert schedule_row(conn, "holiday")["next_fire_at"] == at("2025-12-26T09:00:00")
    client.runtime.evaluate_health(now=at("2025-12-25T09:05:00"))
    assert health(conn, "control") == (
        "missed", "no success for the fire at 2025-12-25T09:00:00Z within 60 s (expect_success_within)")
    assert health(conn, "holiday") == ("ok", None)
    client.runtime.evaluate_health(now=at("2025-12-25T20:00:00"))  # hours past the excluded instant
    assert health(conn, "holiday") == ("ok", None)
