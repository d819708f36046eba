"""The calendars panel (issue 39): `:calendars` and the palette open it; each calendar with
its days, span and how many schedules exclude it; enter lists its dates (upcoming first,
from the console's clock) and the schedules naming it. Snapshots at 80x24 and 160x48.

The seeded database (tui_seed.py, clock Mar 8 2025 12:00:30Z) with two calendars:
company-holidays (the nightly invoice excludes it) and an unused one.

Update after an intended change: pytest tests/tui/test_calendars_console.py --snapshot-update
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from lease_seed import leader_lock_held
from psycopg.types.json import Jsonb
from tui_helpers import ready, screen_text, settled, table_keys, until
from tui_seed import NOW, RUNTIMES, seed

from awa_tui.tui.commands import palette_names
from awa_tui.tui.keymap import ACTS
from awa_tui.tui.screens.info import InfoScreen
from awa_tui.tui.screens.jump import JumpScreen, resolve

HOLIDAYS = [["2025-01-01", "2025-01-01"], ["2025-03-10", "2025-03-10"], ["2025-04-18", "2025-04-21"],
            ["2025-12-24", "2025-12-26"]]


@pytest.fixture
def seeded(dsn: str, conn: psycopg.Connection[Any]) -> Iterator[str]:
    seed(conn)
    with conn.transaction():  # restored as a dump would be (fixed times; the owned schedule past its fence)
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute("INSERT INTO awa.calendars (name, dates, created_at, updated_at) VALUES "
                     "('company-holidays', %s, '2025-01-02T09:00:00Z', '2025-03-01T10:30:00Z'), "
                     "('eu-closures', %s, '2025-02-01T08:00:00Z', '2025-02-01T08:00:00Z')",
                     (Jsonb(HOLIDAYS), Jsonb([["2025-08-15", "2025-08-15"]])))
        conn.execute("UPDATE awa.cron_jobs SET exclude_calendars = %s WHERE name = 'billing.nightly-invoice'",
                     (Jsonb(["company-holidays"]),))
    with leader_lock_held(dsn, RUNTIMES[0]["instance_id"], NOW):
        yield dsn


def text(app: Any) -> str:
    return html.unescape(screen_text(app))


def cells(app: Any, key: str) -> list[str]:
    table = app.main.panel("calendars").table
    return [str(c) for c in table.get_row(key)]


async def jump_to_calendars(app: Any, pilot: Any) -> None:
    await pilot.press("colon")
    await until(pilot, lambda: isinstance(app.screen, JumpScreen), what="jump prompt")
    await pilot.press(*"cal", "enter")
    await until(pilot, lambda: app.active_panel == "calendars" and table_keys(app, "calendars"),
                what="the calendars panel with its rows")
    await settled(pilot, app)


async def test_colon_opens_the_calendars_panel(console):
    app, pilot = console
    assert resolve("cal") == "calendars"
    await jump_to_calendars(app, pilot)
    assert table_keys(app, "calendars") == ["company-holidays", "eu-closures"]
    assert cells(app, "company-holidays") == ["company-holidays", "9", "4", "2025-01-01", "2025-12-26", "1",
                                              "03-01 10:30:00"]
    assert cells(app, "eu-closures") == ["eu-closures", "1", "1", "2025-08-15", "2025-08-15", "none",
                                         "02-01 08:00:00"]
    shown = text(app)
    assert ":Calendars" in shown  # the panel bar names the open panel, with its key
    assert "company-holidays: 9 days in 4 dates and ranges, 2025-01-01 to 2025-12-26 · excluded by 1 schedule" \
        in shown
    await pilot.press("1")
    await until(pilot, lambda: app.active_panel == "schedules", what="back on the schedules")
    assert ":Calendars" not in text(app)


async def test_the_palette_offers_the_calendars_panel(console):
    app, pilot = console
    assert "panel: calendars" in palette_names(app.palette_allowed)
    assert "calendar: dates and schedules" in palette_names(app.palette_allowed)
    act = next(a for a in ACTS if a.palette == "panel: calendars")
    await app.run_palette_act(act)
    await until(pilot, lambda: app.active_panel == "calendars" and table_keys(app, "calendars"),
                what="the calendars panel")


async def test_enter_lists_the_dates_and_the_schedules(console):
    app, pilot = console
    await jump_to_calendars(app, pilot)
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, InfoScreen), what="the calendar's page")
    await pilot.pause()
    shown = text(app)
    assert "Calendar company-holidays" in shown
    assert "billing.nightly-invoice" in shown
    # From the clock's day (Mar 8) on, upcoming first; Jan 1 is past.
    upcoming = shown.index("Upcoming dates from 2025-03-08 (3)")
    past = shown.index("Past dates (1)")
    assert upcoming < shown.index("2025-03-10 Mon") < shown.index("2025-04-18..2025-04-21 Fri..Mon (4 days)") \
        < shown.index("2025-12-24..2025-12-26 Wed..Fri (3 days)") < past < shown.index("2025-01-01 Wed")


@pytest.mark.parametrize("size", [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")])
@pytest.mark.parametrize("page", [False, True], ids=["panel", "page"])
def test_snapshot_calendars(snap_compare, console_factory, size, page):
    async def run_before(pilot) -> None:
        app = pilot.app
        await ready(pilot, app)
        await jump_to_calendars(app, pilot)
        if page:
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, InfoScreen), what="the calendar's page")
        app.clear_notifications()
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=size, run_before=run_before)
