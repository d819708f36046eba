"""Snapshot of S56 in the schedule detail: the next fires with the instants its exclusions
skip listed and marked (a calendar and a date rule), and the rules in the definition.

The seeded database (tui_seed.py), with a calendar and the nightly invoice excluding its
day: 02:30 New York fires at 07:30Z (06:30Z from the 9th, after the DST change).

Update after an intended change: pytest tests/tui/test_snapshots_calendars.py --snapshot-update
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from lease_seed import leader_lock_held
from psycopg.types.json import Jsonb
from tui_helpers import ready, select, until
from tui_seed import NOW, RUNTIMES, seed


@pytest.fixture
def seeded(dsn: str, conn: psycopg.Connection[Any]) -> Iterator[str]:
    seed(conn)
    conn.execute("INSERT INTO awa.calendars (name, dates) VALUES ('company-holidays', %s)",
                 (Jsonb([["2025-03-10", "2025-03-10"]]),))
    with conn.transaction():  # the schedule is owned: written as its owner's runtime would, past the fence
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute("UPDATE awa.cron_jobs SET exclude_calendars = %s, exclude_dates = %s "
                     "WHERE name = 'billing.nightly-invoice'",
                     (Jsonb(["company-holidays"]), Jsonb([["2025-03-12", "2025-03-12"]])))
    with leader_lock_held(dsn, RUNTIMES[0]["instance_id"], NOW):
        yield dsn


def test_detail_marks_excluded_instants(snap_compare, console_factory):
    async def run_before(pilot) -> None:
        app = pilot.app
        await ready(pilot, app)
        select(app, "billing.nightly-invoice")
        await pilot.press("enter")
        await until(pilot, lambda: getattr(app.screen, "data", None), what="detail")
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=(120, 40), run_before=run_before)
