"""Snapshot of S56 in the schedule detail: the next fires with the instants its exclusions
skip listed and marked (a calendar and a date rule), and the rules in the definition.

The seeded database (tui_seed.py), with a calendar and the nightly invoice excluding its
day: 02:30 New York fires at 07:30Z (06:30Z from the 9th, after the DST change).

Update after an intended change: pytest tests/tui/test_snapshots_calendars.py --snapshot-update
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from lease_seed import leader_lock_held
from psycopg.types.json import Jsonb
from tui_helpers import ready, screen_text, select, until
from tui_seed import NOW, RUNTIMES, seed


@pytest.fixture
def seeded(dsn: str, conn: psycopg.Connection[Any]) -> Iterator[str]:
    seed(conn)
    conn.execute("INSERT INTO awa.calendars (name, dates) VALUES ('company-holidays', %s)",
                 (Jsonb([["2025-03-10", "2025-03-10"], ["2025-03-18", "2025-03-18"]]),))
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


async def test_n_pages_the_next_fires_forward_with_excluded_ones_marked(console_factory):
    """n: the fires after the last listed, the excluded instants among them marked; p goes back.
    The oracle: 02:30 New York is 07:30Z before Mar 9 and 06:30Z from it (EDT); the seed's
    invoice last fired Mar 8 07:30Z; the first page ends Mar 15, the next starts Mar 16 and
    lists the calendar's Mar 18 struck through among its five fires."""
    from datetime import UTC, datetime

    app = console_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, app)
        select(app, "billing.nightly-invoice")
        await pilot.press("enter")
        await until(pilot, lambda: getattr(app.screen, "data", None), what="detail")
        screen = app.screen
        first = [(f.utc, f.excluded) for f in screen.data.next]
        assert first[-1] == (datetime(2025, 3, 15, 6, 30, tzinfo=UTC), None)
        await pilot.press("n")
        await until(pilot, lambda: screen.fires is not None, what="the second page")
        assert [(f.utc.day, f.excluded) for f in screen.fires] == [
            (16, None), (17, None), (18, "calendar company-holidays"), (19, None), (20, None), (21, None)]
        shown = html.unescape(screen_text(app))
        assert "Fires after 2025-03-15 06:30:00Z: 5 (page 2; n: later, p: earlier)" in shown
        assert "excluded: calendar company-holidays" in shown
        await pilot.press("n")
        await until(pilot, lambda: screen.fires is not None, what="the third page")
        assert [(f.utc.day, f.excluded) for f in screen.fires] == [(d, None) for d in range(22, 27)]
        await pilot.press("p", "p")
        await until(pilot, lambda: screen.fires_after is None, what="back to the first page")
        await pilot.press("p")  # nothing before the first page
        assert screen.fires_after is None and screen.fires_back == []


@pytest.mark.parametrize("size", [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")])
def test_snapshot_second_page_of_fires(snap_compare, console_factory, size):
    async def run_before(pilot) -> None:
        app = pilot.app
        await ready(pilot, app)
        select(app, "billing.nightly-invoice")
        await pilot.press("enter")
        await until(pilot, lambda: getattr(app.screen, "data", None), what="detail")
        await pilot.press("n")
        await until(pilot, lambda: app.screen.fires is not None, what="the second page")
        # Scrolled to the fires (at 80x24 the definition fills the first screen).
        app.screen.query_one("#detail").scroll_to(y=16 if size[1] < 40 else 0, animate=False)
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=size, run_before=run_before)
