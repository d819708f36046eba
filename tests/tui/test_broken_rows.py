"""S15 in the console: with poison rows (every column of awa.cron_jobs, odd job and runtime
snapshot rows) the console stays fresh (no false STALE), the schedules panel shows each
BROKEN row and its reason, and the detail screen of every row renders."""

from __future__ import annotations

import io
from typing import Any

from poison_seed import HEALTHY, JOBS_TARGET, POISON, broken, seed
from rich.console import Console
from rich.text import Text
from tui_helpers import notes, ready, select, table_keys, until

from awa_tui.tui.screens.detail import DetailScreen
from awa_tui.tui.widgets.keyed_table import KeyedTable


def _plain(value: Any) -> str:
    return value.plain if isinstance(value, Text) else str(value)


def _rendered(renderable: Any) -> str:
    """What a widget's content reads as, one long line per line (no wrapping)."""
    console = Console(width=1_000_000, file=io.StringIO(), record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


async def test_broken_rows_show_broken_and_why(console_factory: Any, conn: Any) -> None:
    huge = seed(conn)
    expected = broken()
    app = console_factory()
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(pilot, app)
        assert not app.freshness.stale
        assert set(table_keys(app)) >= {*POISON, huge, *HEALTHY, JOBS_TARGET}
        table = app.main.panel("schedules").query_one("#schedules-table", KeyedTable)
        states = {name: _plain(table.get_cell(name, "state")) for name in [*POISON, *HEALTHY]}
        assert states == {
            **{name: "active" for name in [*POISON, *HEALTHY]},
            **{name: "BROKEN" for name in expected},
            "p-paused-inf": "BROKEN, PAUSED",
            "p-retired-neg-inf": "BROKEN, RETIRED",
        }
        summary = app.main.panel("schedules").query_one("#schedules-summary")
        for name in ("p-last-inf", "p-zone-escape", "p-args-null"):
            select(app, name)
            await pilot.pause()
            assert f"BROKEN ({expected[name]}): skipped until repaired" in _plain(summary.content)
        select(app, "a-healthy")
        await pilot.pause()
        assert "BROKEN" not in _plain(summary.content)
        assert not any("database" in n for n in notes(app))


async def test_the_detail_screen_of_every_row_renders(console_factory: Any, conn: Any) -> None:
    huge = seed(conn)
    expected = broken()
    app = console_factory()
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(pilot, app)
        for name in [*POISON, huge, JOBS_TARGET]:
            select(app, name)
            await pilot.press("enter")
            screen = await until(
                pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.data and app.screen,
                what=f"detail of {name[:40]}",
            )
            assert screen.data.schedule.fault == expected.get(name)
            text = _rendered(screen.query_one("#detail-body").content)
            if name in expected:
                assert screen.data.next == []
                assert f"BROKEN {expected[name]}" in text
                assert "none: a BROKEN schedule never fires until repaired" in text
            else:
                assert "BROKEN" not in text
            await pilot.press("escape")
            await until(pilot, lambda: not isinstance(app.screen, DetailScreen), what="back")
        assert not app.freshness.stale


async def test_the_runtimes_panel_renders_unloadable_snapshot_rows(console_factory: Any, conn: Any) -> None:
    seed(conn)
    app = console_factory()
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(pilot, app)
        await pilot.press("3")
        await until(pilot, lambda: app.main.panel("runtimes").table.row_count >= 2, what="runtime rows")
        assert not app.freshness.stale
