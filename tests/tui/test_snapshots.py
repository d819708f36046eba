"""Snapshots of every panel, the confirm dialog, read-only mode and the STALE state, at
80x24 and 120x36. The app comes from the CLI's factory with a fixed clock and a seeded
database, so nothing depends on the wall clock or on random ids.

Update after an intended change: pytest tests/tui/test_snapshots.py --snapshot-update
"""

from __future__ import annotations

from contextlib import ExitStack

import pytest
from test_resilience import database_down
from tui_helpers import ready, select, settled, until

from awa_tui.tui.screens.confirm import ConfirmScreen
from awa_tui.tui.screens.help import HelpScreen

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 36), id="120x36")]


def panel_before(key: str | None):
    async def run_before(pilot) -> None:
        app = pilot.app
        await ready(pilot, app)
        if key:
            await pilot.press(key)
        await settled(pilot, app)
        app.clear_notifications()
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("panel,key", [
    ("schedules", None), ("owners", "2"), ("runtimes", "3"), ("plan", "4"), ("queues", "5"),
])
def test_panel(snap_compare, console_factory, size, panel, key):
    assert snap_compare(console_factory(), terminal_size=size, run_before=panel_before(key))


@pytest.mark.parametrize("size", SIZES)
def test_confirm_dialog(snap_compare, console_factory, size):
    async def run_before(pilot) -> None:
        app = pilot.app
        await ready(pilot, app)
        select(app, "metrics.rollup")
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="dialog")
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_read_only(snap_compare, console_factory, size):
    assert snap_compare(console_factory(read_only=True), terminal_size=size, run_before=panel_before(None))


@pytest.mark.parametrize("size", SIZES)
def test_stale(snap_compare, console_factory, seeded, pg_admin_dsn, size):
    app = console_factory(refresh=0.5)
    with ExitStack() as outage:

        async def run_before(pilot) -> None:
            await ready(pilot, app)
            # Down until the screenshot has been taken (the ExitStack closes after it).
            outage.enter_context(database_down(pg_admin_dsn, seeded))
            await until(pilot, lambda: app.freshness.stale, what="STALE")
            app.clear_notifications()
            await pilot.pause()

        assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_retire_dialog_asks_for_the_name(snap_compare, console_factory):
    async def run_before(pilot) -> None:
        app = pilot.app
        await ready(pilot, app)
        select(app, "metrics.rollup")
        await pilot.press("ctrl+d")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="dialog")
        await pilot.press(*"metrics")
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=(80, 24), run_before=run_before)


def test_detail(snap_compare, console_factory):
    async def run_before(pilot) -> None:
        app = pilot.app
        await ready(pilot, app)
        select(app, "billing.nightly-invoice")
        await pilot.press("enter")
        await until(pilot, lambda: getattr(app.screen, "data", None), what="detail")
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=(120, 36), run_before=run_before)


def test_help(snap_compare, console_factory):
    async def run_before(pilot) -> None:
        app = pilot.app
        await ready(pilot, app)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=(80, 24), run_before=run_before)
