"""S55 in the console: a schedule using a day form (here written by hand into the table, as
an operator with psql would) reads as healthy, in words, with its next fires."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from rich.text import Text
from tui_helpers import ready, select, until

from awa_tui.tui.screens.detail import DetailScreen
from awa_tui.tui.widgets.keyed_table import KeyedTable


def _plain(value: Any) -> str:
    return value.plain if isinstance(value, Text) else str(value)


def _rendered(renderable: Any) -> str:
    console = Console(width=1_000_000, file=io.StringIO(), record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


async def test_a_last_day_schedule_reads_healthy_in_words_with_its_next_fires(console_factory: Any, conn: Any) -> None:
    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind) "
                 "VALUES ('month-end', '30 2 L * *', 'Europe/Berlin', 'close.books')")
    app = console_factory()
    async with app.run_test(size=(200, 50)) as pilot:
        await ready(pilot, app)
        table = app.main.panel("schedules").query_one("#schedules-table", KeyedTable)
        assert _plain(table.get_cell("month-end", "state")) == "active"
        select(app, "month-end")
        await pilot.press("enter")
        screen = await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.data and app.screen,
                             what="detail of month-end")
        assert screen.data.schedule.fault is None
        text = _rendered(screen.query_one("#detail-body").content)
        assert "30 2 L * *  (at 02:30 on the last day of the month)" in text
        # The console's clock is 2025-03-08T12:00:30Z. Berlin is on CEST (UTC+2) from 30 March:
        # 02:30 on 31 Mar, 30 Apr, 31 May, 30 Jun and 31 Jul 2025 is 00:30Z.
        assert [f.utc.isoformat() for f in screen.data.next] == [
            f"2025-{m:02d}-{d}T00:30:00+00:00" for m, d in ((3, 31), (4, 30), (5, 31), (6, 30), (7, 31))]
        assert "BROKEN" not in text
