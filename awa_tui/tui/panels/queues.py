"""Queues: pause state (S18), waiting and running jobs, schedules that target each."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from awa_tui.engine.read.models import QueueRow
from awa_tui.filters import Term
from awa_tui.printable import printable, printable_row
from awa_tui.tui import actions, operations
from awa_tui.tui.formatting import relative, short_utc
from awa_tui.tui.messages import SchedulesFilterRequested, request_operation
from awa_tui.tui.panels.base import Panel, Work
from awa_tui.tui.widgets.filter_bar import FilterBar
from awa_tui.tui.widgets.keyed_table import Column, cell

COLUMNS = (
    Column("queue", "QUEUE", 20),
    Column("state", "STATE", 7),
    Column("available", "WAITING", 8),
    Column("running", "RUNNING", 8),
    Column("schedules", "SCHEDULES", 9),
    Column("by", "PAUSED BY", 16),
    Column("since", "SINCE (UTC)", 14),
)


def cells(row: QueueRow, now: datetime) -> tuple[Text, ...]:
    paused = row.paused
    return (
        cell(row.queue),
        cell("PAUSED" if paused else "active", "bold yellow" if paused else ""),
        cell(f"{row.available:,}"),
        cell(f"{row.running:,}"),
        cell(f"{row.schedules:,}"),
        cell(row.paused_by if paused else "-"),
        cell(f"{short_utc(row.paused_at)}" if paused else "-"),
    )


class QueuesPanel(Panel[QueueRow]):
    panel_id = "queues"
    title = "Queues"
    BINDINGS = actions.bindings("queues")

    def compose(self) -> ComposeResult:
        yield Static(classes="panel-title")
        yield FilterBar("queues", "filter: paused, name:report* (enter keeps, esc clears)")
        yield self.chosen_table(COLUMNS, id="queues-table")
        yield Static(id="queues-summary", classes="row-summary")

    def on_mount(self) -> None:
        self.title_line("Queues: loading…")

    def work(self) -> Work:
        return lambda client, now: client.reads.list_queues()

    def show(self, data: list[QueueRow], now: datetime) -> None:
        self.now = now
        data = self.filtered(data)
        # Keyed by the shown queue (the table's first column is its key); values stay real rows.
        self.rows = {printable(row.queue): row for row in data}
        paused = sum(1 for r in data if r.paused)
        self.title_line(
            Text.assemble(("Queues ", "bold"), f"{len(data)} · {paused} PAUSED · pause stops dispatch, not fires")
            .append_text(self.filter_note())
        )
        self.table.sync(self.chosen_cells([(q, cells(printable_row(r), now)) for q, r in self.rows.items()]))
        self._summary()

    def on_data_table_row_highlighted(self) -> None:
        self._summary()

    def _summary(self) -> None:
        row = self.selected_row()
        widget = self.query_one("#queues-summary", Static)
        if row is None or self.now is None:
            widget.update("No queues yet.")
            return
        row = printable_row(row)
        text = Text.assemble((row.queue, "bold"), ": ")
        if row.paused:
            text.append("PAUSED", style="bold")
            text.append(f" by {row.paused_by} {relative(row.paused_at, self.now)}; schedules keep firing into it")
        else:
            text.append("active; workers claim from it")
        widget.update(text)

    @on(DataTable.RowSelected, "#queues-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_details()

    def action_details(self) -> None:
        """Enter: the queue's schedules (the schedules panel filtered by queue:NAME)."""
        row = self.selected_row()
        if row is not None:
            self.post_message(SchedulesFilterRequested(str(Term("field", "queue", row.queue))))

    def action_toggle_pause(self) -> None:
        request_operation(self, lambda: operations.toggle_queue(self.chosen_row("queue")))
