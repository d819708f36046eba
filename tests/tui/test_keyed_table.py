"""KeyedTable renders its body lines itself (public Line API, its own cell cache): every
line must be exactly what a stock DataTable shows for the same cells, in every state a
line can be in (cursor, focus, hover, scrolled, after a tick or an update). The oracle
is a plain DataTable next to it in the same app, holding the same cell objects."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from rich.segment import Segment
from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.geometry import Region
from textual.widgets import DataTable

from awa_tui.engine.read.models import SchedulePageRow
from awa_tui.tui.panels.schedules import COLUMNS as PANEL_COLUMNS
from awa_tui.tui.panels.schedules import cells
from awa_tui.tui.widgets.keyed_table import KeyedTable
from awa_tui.tui.widgets.live import Clock

NOW = datetime(2026, 3, 8, 12, 0, tzinfo=UTC)

# Every column kept (priority 0): the stock twin cannot drop columns when narrow; fixed
# widths (min = max): this file checks rendering, tests/tui/test_column_widths.py the widths.
COLUMNS = tuple(dataclasses.replace(column, priority=0, min_width=column.width) for column in PANEL_COLUMNS)


def schedule(i: int) -> SchedulePageRow:
    state = ("active", "paused", "retired")[i % 3]
    return SchedulePageRow(
        name=f"tenant-{i}.job-with-a-long-name", state=state, next_fire=NOW + timedelta(minutes=5, seconds=i),
        next_fire_due=False, last_enqueued_at=NOW - timedelta(minutes=i) if i % 4 else None,
        lateness=timedelta(seconds=i / 10), cron_expr="*/5 * * * *", timezone="Europe/Paris",
        missed_fire_policy="skip", owner="billing" if i % 2 else None, queue=f"q{i % 3}",
        queue_paused=i % 5 == 0, paused_by="alice@ops" if state == "paused" else None,
        paused_at=NOW if state == "paused" else None, retired_by="bob@ops" if state == "retired" else None,
        retired_at=NOW if state == "retired" else None,
        # Not shown in the table's cells:
        kind="k", priority=2, max_attempts=25, next_fire_at=None, created_at=NOW, updated_at=NOW, fault=None,
        queue_paused_by=None, queue_paused_at=None, last_job_state=None,
        overlap="allow", start_at=None, end_at=None, max_fires=None, fires_count=0, finished_at=None,
    )


class Twins(App[None]):
    # The stock table has no stable scrollbar gutter: the twin drops KeyedTable's, same geometry.
    CSS = "DataTable { width: 64; height: 12; } KeyedTable { scrollbar-gutter: auto; }"

    def __init__(self, rows: list[tuple[str, tuple[Any, ...]]]) -> None:
        super().__init__()
        self.initial = rows

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield KeyedTable(COLUMNS, id="keyed")
            yield DataTable(id="stock", cursor_type="row", zebra_stripes=False, fixed_columns=1)

    def on_mount(self) -> None:
        stock = self.query_one("#stock", DataTable)
        for column in COLUMNS:
            stock.add_column(column.label, key=column.key, width=column.width)
        for key, row in self.initial:
            stock.add_row(*row, key=key)
        self.query_one(KeyedTable).sync(self.initial)


def lines(table: DataTable[Any]) -> list[list[Segment]]:
    width, height = table.size
    return [list(strip) for strip in table.render_lines(Region(0, 0, width, height))]


async def warm(pilot: Any, keyed: KeyedTable) -> None:
    """Focus and paint the keyed table, so that what follows meets its warm cell cache."""
    keyed.focus()
    await pilot.pause()
    lines(keyed)


async def assert_same_lines(pilot: Any, app: Twins, state: str) -> list[str]:
    """Each table rendered while it has the focus (or with no focus anywhere)."""
    keyed, stock = app.query_one(KeyedTable), app.query_one("#stock", DataTable)
    focused = app.focused is not None
    if focused:
        keyed.focus()
        await pilot.pause()
    ours = lines(keyed)
    if focused:
        stock.focus()
        await pilot.pause()
    theirs = lines(stock)
    assert len(ours) == keyed.size.height == 12
    for y, (mine, stock_line) in enumerate(zip(ours, theirs, strict=True)):
        assert mine == stock_line, f"{state}: line {y} differs"
    return ["".join(segment.text for segment in line) for line in ours]


async def test_body_lines_are_the_stock_datatable_lines_in_every_state() -> None:
    clock = Clock(NOW)
    rows = [(f"tenant-{i}.job-with-a-long-name", cells(schedule(i), clock)) for i in range(40)]
    app = Twins(rows)
    async with app.run_test(size=(140, 20)) as pilot:
        keyed, stock = app.query_one(KeyedTable), app.query_one("#stock", DataTable)
        await pilot.pause()
        keyed.focus()
        await pilot.pause()
        shown = await assert_same_lines(pilot, app, "first paint, focused")
        # Columns of 22, 16 and 20 cells, each padded by one cell either side.
        assert shown[0] == " NAME" + " " * 19 + " STATE" + " " * 12 + " NEXT FIRE" + " " * 12
        assert shown[1] == " tenant-0.job-with-a-l…  active, Q PAUSED  in 5m00s" + " " * 13

        for table in (keyed, stock):
            table.move_cursor(row=3, animate=False)
        await pilot.pause()
        await assert_same_lines(pilot, app, "cursor on row 3")

        app.set_focus(None)
        await pilot.pause()
        await assert_same_lines(pilot, app, "no focus")
        keyed.focus()

        # Scrolled both ways: the cursor far down, the view to the right, NAME frozen.
        for table in (keyed, stock):
            table.move_cursor(row=30, animate=False)
            table.scroll_to(x=38, animate=False, immediate=True)
        await pilot.pause()
        shown = await assert_same_lines(pilot, app, "scrolled")
        # NAME (24 cells) is frozen; the rest is cropped from x=38 past it.
        assert shown[0] == " NAME" + " " * 19 + "  " + " HEALTH    LAST RESULT  FAILS 24h  LAS"

        # A tick: the clock moved, nothing else did; the relative times re-render.
        for table in (keyed, stock):
            table.scroll_to(x=0, y=0, animate=False, immediate=True)
            table.move_cursor(row=0, animate=False)
        await pilot.pause()
        await assert_same_lines(pilot, app, "back at the top")
        await warm(pilot, keyed)
        clock.now = NOW + timedelta(seconds=7)
        keyed.tick()
        stock.update_cell(rows[0][0], "name", rows[0][1][0])  # the stock way to re-render
        await pilot.pause()
        shown = await assert_same_lines(pilot, app, "after a tick")
        assert shown[1] == " tenant-0.job-with-a-l…  active, Q PAUSED  in 4m53s" + " " * 13

        # An update: a row's state changed.
        await warm(pilot, keyed)
        changed = replace(schedule(1), state="active", paused_by=None, paused_at=None)
        new_cells = cells(changed, clock)
        keyed.sync([(key, new_cells if key == rows[1][0] else row) for key, row in rows])
        stock.update_cell(rows[1][0], "state", new_cells[1])
        stock.update_cell(rows[1][0], "next", new_cells[2])
        stock.update_cell(rows[1][0], "by", new_cells[12])
        await pilot.pause()
        shown = await assert_same_lines(pilot, app, "after an update")
        assert shown[2] == " tenant-1.job-with-a-l…  active            in 4m54s" + " " * 13

        # The mouse over row 4: the faint hover highlight (each table rendered while hovered).
        hovered = []
        for table in (keyed, stock):
            table.focus()
            await pilot.hover(table, offset=(5, 5))
            await pilot.pause()
            assert table.hover_row == 4
            hovered.append(lines(table))
        assert hovered[0] == hovered[1]
        assert hovered[0][5] != lines(keyed)[4]


async def test_a_table_narrower_than_its_widget_extends_each_row() -> None:
    narrow = ("name", "state")
    rows = [(f"q{i}", (Text(f"q{i}"), Text("PAUSED" if i == 1 else "active", style="bold"))) for i in range(3)]
    # Cells the fast path hands to the stock one or cuts as Rich does: two lines, a tab,
    # Rich's default overflow (fold: cut, no ellipsis), overflow "ignore".
    rows += [("two-lines", (Text("q3\nsecond"), Text("a\tb"))),
             ("long", (Text("x" * 60), Text("y" * 40, overflow="ignore")))]
    app = Twins([])
    async with app.run_test(size=(140, 20)) as pilot:
        keyed, stock = app.query_one(KeyedTable), app.query_one("#stock", DataTable)
        await pilot.pause()
        keyed.column_specs = [c for c in COLUMNS if c.key in narrow]
        keyed.sync(rows)  # new specs: the keyed table lays its columns out again
        await pilot.pause()
        # The room the two columns leave (64 - 24 - 18 = 22) goes to NAME, cut at 22: 22 more
        # cells of its 60; STATE keeps its 16. The stock twin is given the same widths.
        assert [c.width for c in keyed.ordered_columns] == [44, 16]
        stock.clear(columns=True)
        for column in keyed.ordered_columns:
            stock.add_column(column.label, key=column.key, width=column.width)
        for key, row in rows:
            stock.add_row(*row, key=key)
        for table in (keyed, stock):
            table.move_cursor(row=1, animate=False)
        keyed.focus()
        await pilot.pause()
        shown = await assert_same_lines(pilot, app, "narrow table")
        assert shown[2] == " q1" + " " * 43 + " PAUSED" + " " * 11
        assert shown[4] == " q3" + " " * 43 + " a       b" + " " * 8
        assert shown[5] == " " + "x" * 44 + "  " + "y" * 16 + " "
