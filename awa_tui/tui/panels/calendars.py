"""Calendars (S56; `:calendars`, no number key): each named calendar with how many days it
holds, its span, the next of its dates and how many schedules exclude it. Enter: its dates,
upcoming first, and the schedules that name it (the schedule detail then lists the
instants each date keeps from firing)."""

from __future__ import annotations

from datetime import date, datetime

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from awa_tui.engine.read.models import CalendarInfo, CalendarSummary
from awa_tui.printable import printable, printable_row
from awa_tui.tui import actions
from awa_tui.tui.formatting import short_utc, utc
from awa_tui.tui.messages import CalendarRequested, InfoRequested
from awa_tui.tui.panels.base import Panel, Work
from awa_tui.tui.screens.confirm import facts
from awa_tui.tui.screens.detail import section
from awa_tui.tui.widgets.keyed_table import Column, cell

COLUMNS = (
    Column("calendar", "CALENDAR", 22),
    Column("days", "DAYS", 6),
    Column("ranges", "DATES", 6),
    Column("first", "FIRST", 10),
    Column("last", "LAST", 10),
    Column("used", "SCHEDULES", 9),
    Column("updated", "UPDATED (UTC)", 14, priority=1),
)


def cells(row: CalendarSummary) -> tuple[Text, ...]:
    return (
        cell(row.name),
        cell("UNREADABLE" if row.fault else f"{row.days:,}", "bold red" if row.fault else ""),
        cell(f"{row.ranges:,}"),
        cell(row.first.isoformat() if row.first else "-"),
        cell(row.last.isoformat() if row.last else "-"),
        cell(f"{row.used_by:,}" if row.used_by else "none", "" if row.used_by else "dim"),
        cell(short_utc(row.updated_at)),
    )


def span(first: date, last: date) -> str:
    """One date (`2025-03-10 Mon`) or an inclusive range with its weekdays and length."""
    if first == last:
        return f"{first.isoformat()} {first:%a}"
    return f"{first.isoformat()}..{last.isoformat()} {first:%a}..{last:%a} ({(last - first).days + 1} days)"


def calendar_page(info: CalendarInfo, now: datetime) -> RenderableType:
    """The calendar in full, its strings escaped: facts, the schedules naming it, its dates
    from today (UTC) on, then the past ones."""
    today = now.date()
    upcoming = [(a, b) for a, b in info.ranges if b >= today]
    past = [(a, b) for a, b in info.ranges if b < today]
    rows = [("days", f"{info.days:,} in {len(info.ranges):,} dates and ranges"),
            ("updated", utc(info.updated_at)), ("created", utc(info.created_at)),
            ("used by", ", ".join(info.used_by) if info.used_by else "no schedule")]
    if info.fault:
        rows.append(("UNREADABLE", info.fault))
    parts: list[RenderableType] = [facts(rows)]
    parts += [section(f"Upcoming dates from {today.isoformat()} ({len(upcoming)})"),
              Text("\n".join(span(a, b) for a, b in upcoming) or "none")]
    parts += [section(f"Past dates ({len(past)})"), Text("\n".join(span(a, b) for a, b in past) or "none", style="dim")]
    if info.used_by:
        parts += [Text(""), Text("A schedule's detail (enter on the schedules panel) lists the instants these "
                                 "dates keep from firing, struck through among its next fires; n pages on.",
                                 style="dim")]
    return Group(*parts)


class CalendarsPanel(Panel[CalendarSummary]):
    panel_id = "calendars"
    title = "Calendars"
    BINDINGS = actions.bindings("calendars")

    def compose(self) -> ComposeResult:
        yield Static(classes="panel-title")
        yield self.chosen_table(COLUMNS, id="calendars-table")
        yield Static(id="calendars-summary", classes="row-summary")

    def on_mount(self) -> None:
        self.title_line("Calendars: loading…")

    def work(self) -> Work:
        return lambda client, now: client.reads.list_calendars()

    def show(self, data: list[CalendarSummary], now: datetime) -> None:
        self.now = now
        self.rows = {printable(row.name): row for row in data}
        used = sum(1 for r in data if r.used_by)
        self.title_line(Text.assemble(("Calendars ", "bold"), f"{len(data)} · {used} excluded by a schedule · "
                                      "dates schedules do not fire on · enter: dates and schedules"))
        self.table.sync(self.chosen_cells([(key, cells(printable_row(row))) for key, row in self.rows.items()]))
        self._summary()

    def on_data_table_row_highlighted(self) -> None:
        self._summary()

    def _summary(self) -> None:
        row = self.selected_row()
        widget = self.query_one("#calendars-summary", Static)
        if row is None:
            widget.update(Text("No calendars: `awa-tui calendar set NAME --dates FILE` makes one."))
            return
        row = printable_row(row)
        text = Text.assemble((row.name, "bold"), f": {row.days:,} days in {row.ranges:,} dates and ranges")
        if row.first and row.last:
            text.append(f", {row.first.isoformat()} to {row.last.isoformat()}")
        text.append(f" · excluded by {row.used_by} schedule{'s' if row.used_by != 1 else ''}" if row.used_by
                    else " · no schedule excludes it")
        if row.fault:
            text.append(f"\nUNREADABLE: {row.fault}", style="bold red")
        widget.update(text)

    @on(DataTable.RowSelected, "#calendars-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_details()

    def action_details(self) -> None:
        """Enter: the calendar's dates and the schedules naming it (read now, in full)."""
        row = self.selected_row()
        if row is not None:
            self.post_message(CalendarRequested(row.name, self._open))

    def _open(self, info: CalendarInfo | None, error: str | None) -> None:
        if error is not None or info is None:
            self.notify(printable(f"calendar: {error}"), severity="error", markup=False, timeout=6)
            return
        shown = printable_row(info)
        self.post_message(InfoRequested(f"Calendar {shown.name}", calendar_page(shown, self.now or info.updated_at)))
