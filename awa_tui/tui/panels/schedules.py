"""Schedules: every schedule with its state, next and last fire, filter, sort, actions.

Only one page is fetched (server-side filter, sort and LIMIT): with 100k schedules the
console never holds or renders them all. Moving the cursor onto the last row loads the
next page; the keyed table keeps the cursor on the same schedule across refreshes.
"""

from __future__ import annotations

import json
from datetime import datetime
from operator import attrgetter
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import DataTable, Input, Static

from awa_tui.engine.cron.describe import describe
from awa_tui.engine.health.models import UNHEALTHY
from awa_tui.engine.read.backend import ConsoleBackend
from awa_tui.engine.read.models import AnySchedule, SchedulePage, SchedulePageRow
from awa_tui.filters import Filter, FilterError, Term, parse
from awa_tui.printable import printable, printable_row
from awa_tui.tui import actions
from awa_tui.tui.config import PAGE_SIZE
from awa_tui.tui.formatting import (
    lateness,
    outcome_strip,
    relative,
    result_text,
    short_utc,
    state_by,
    state_text,
    state_word,
    strip_legend,
    utc,
)
from awa_tui.tui.messages import (
    DetailRequested,
    JobsFilterRequested,
    RefreshRequested,
    ScheduleActions,
    SortMenuRequested,
    request_operation,
)
from awa_tui.tui.panels.base import Panel, Work
from awa_tui.tui.selection import bulk_operation
from awa_tui.tui.widgets.keyed_table import Column, KeyedTable, cell
from awa_tui.tui.widgets.live import Clock, LiveCell

SORTS = ("name", "next", "last", "state", "queue", "owner", "health", "result", "fails")
COLUMNS = (  # priority: which drop first when narrow (0 never; the summary line has the rest)
    Column("name", "NAME", 22),
    Column("state", "STATE", 16),
    Column("next", "NEXT FIRE", 20, min_width=11),  # live: "in 15m00s" keeps its width as it ticks
    Column("health", "HEALTH", 8, priority=1, min_width=6),  # S42: a word, not a colour alone
    Column("result", "LAST RESULT", 11, priority=2),  # "which schedules are failing?" at 80 columns too
    Column("fails", "FAILS 24h", 9, priority=3),
    Column("strip", "LAST 20 INSTANTS", 20, priority=3),
    Column("next_at", "NEXT (UTC)", 14, priority=6),
    Column("last", "LAST FIRE", 10, priority=4, min_width=10),
    Column("late", "LATE", 6, priority=5),
    Column("cron", "CRON", 16, priority=7),
    Column("describe", "MEANING", 24, priority=11),
    Column("zone", "ZONE", 18, priority=10),
    Column("policy", "POLICY", 8, priority=12),
    Column("owner", "OWNER", 12, priority=8),
    Column("queue", "QUEUE", 14, priority=9),
    Column("by", "PAUSED/RETIRED BY", 26, priority=13),
)


def state_cell(row: SchedulePageRow) -> Text:
    style = {"paused": "bold yellow", "retired": "bold red", "finished": "bold cyan"}.get(row.state, "")
    if row.fault:
        # S15: it cannot fire until repaired; the summary line below says why.
        text = cell("BROKEN", "bold red reverse")
        if row.state != "active":
            text.append(", ")
            text.append(state_word(row.state), style=style)
    elif row.overridden and row.state == "active":  # issue 16: "active" would not fit beside it
        text = cell("OVERRIDDEN", "bold magenta")
    else:
        text = cell(state_word(row.state), style)
    if row.overridden and (row.fault or row.state != "active"):
        text.append(", ")
        text.append("OVERRIDDEN", style="bold magenta")
    if row.queue_paused:
        text.append(", ")
        text.append("Q PAUSED", style="bold yellow")
    return text


# S42: the unhealthy words stand out; ok, paused and retired stay quiet (STATE says those).
HEALTH_STYLES = {"broken": "bold red", "failing": "bold red", "missed": "bold red", "late": "bold yellow",
                 "ok": "green"}


def health_cell(row: SchedulePageRow) -> Text:
    word = row.health or "-"  # "-": the leader has not judged it yet
    return cell(word.upper() if word in UNHEALTHY else word, HEALTH_STYLES.get(word, "dim"))


def attention_text(page: SchedulePage) -> Text | None:
    """The ATTENTION line: the worst unhealthy schedule, since when and why (S42)."""
    worst = page.attention
    if worst is None:
        return None
    text = Text(no_wrap=True, overflow="ellipsis", end="")
    text.append("ATTENTION ", style="bold reverse")
    text.append(f" {worst.health.upper()} ", style=HEALTH_STYLES.get(worst.health, "bold"))
    text.append(printable(worst.name), style="bold")
    if worst.since is not None:
        text.append(f" since {utc(worst.since)}")
    if worst.reason:
        text.append(f": {printable(worst.reason)}")
    others = sum(page.unhealthy.values()) - 1
    if others > 0:
        text.append(f" (+{others:,} more: filter health:…)")
    return text
def cron_text(row: AnySchedule) -> str:
    """The expression fired from, and beside it the written one when it uses H (issue 16)."""
    return f"{row.cron_expr} (= {row.cron_written})" if row.cron_written else row.cron_expr


def overridden_text(row: AnySchedule) -> str:
    """'OVERRIDDEN queue urgent (code: default), ...': each effective value beside the code's."""
    code = row.overridden or {}
    effective = {"cron_expr": row.cron_expr, "timezone": row.timezone, "queue": row.queue, "priority": row.priority,
                 "args": "set"}  # args: not loaded in the list (the detail shows them)
    parts = [f"{column} {_shown(effective.get(column, '?'))} (code: {_shown(code[column])})"
             for column in sorted(code) if column != "cron_written"]
    return "OVERRIDDEN " + ", ".join(parts) + " · reset: E"


def _shown(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": ")) if isinstance(value, (dict, list)) else str(value)


def next_text(row: SchedulePageRow, now: datetime) -> str:
    return _next_live((row.state, row.next_fire, row.next_fire_due), now)


def _next_live(value: tuple[str, datetime | None, bool], now: datetime) -> str:
    state, at, due = value
    if state == "retired" or at is None:
        return "-"
    if due:
        return "on resume" if state == "paused" else "due now"
    text = relative(at, now)
    return f"{text} if resumed" if state == "paused" else text


def _last_live(at: datetime | None, now: datetime) -> str:
    return relative(at, now) if at else "never"


def _who_live(value: tuple[str | None, datetime | None], now: datetime) -> str:
    who, since = value
    return f"{who} {relative(since, now)}" if who else "-"


# The fields a row's cells are made from: a row whose signature did not change keeps
# its cells (and its relative times re-render from the clock, see widgets/live.py).
SIGNATURE = attrgetter(
    "state", "fault", "next_fire", "next_fire_due", "last_enqueued_at", "lateness", "cron_expr", "timezone",
    "missed_fire_policy", "owner", "queue", "queue_paused", "paused_by", "paused_at", "retired_by", "retired_at",
    "health",
    "finished_at",
    "cron_written", "overridden",
    "last_result", "fails_24h", "outcomes",
)


# Columns a backend feature provides (engine/read/backend.FEATURES): upstream mode has no
# health judgement and no fire ledger, so it shows neither rather than blanks.
COLUMN_NEEDS = {"health": "health", "result": "ledger", "fails": "ledger", "strip": "ledger"}


def shown_columns(features: frozenset[str]) -> tuple[int, ...]:
    """Indexes of the COLUMNS (and cells) a backend with `features` shows."""
    return tuple(i for i, c in enumerate(COLUMNS) if COLUMN_NEEDS.get(c.key, "") in ("", *features))


def cells(row: SchedulePageRow, clock: Clock) -> tuple[Any, ...]:
    who = state_by(row)
    return (
        cell(row.name),
        state_cell(row),
        LiveCell((row.state, row.next_fire, row.next_fire_due), _next_live, clock),
        health_cell(row),
        result_text(row.last_result),
        cell(f"{row.fails_24h:,}", "bold red" if row.fails_24h else ""),
        cell(outcome_strip(row.outcomes)),
        cell(short_utc(row.next_fire) if row.state != "retired" else "-"),
        LiveCell(row.last_enqueued_at, _last_live, clock),
        cell(lateness(row.lateness)),
        cell(cron_text(row)),
        cell(describe(row.cron_expr)),
        cell(row.timezone),
        cell(row.missed_fire_policy),
        cell(row.owner or "-"),
        cell(row.queue),
        LiveCell(who, _who_live, clock),
    )


def summary(row: SchedulePageRow, now: datetime, *, ledger: bool = True) -> Text:
    """The selected schedule in full, under the table (everything the narrow columns cut)."""
    text = Text(no_wrap=False, end="")
    text.append(row.name, style="bold")
    text.append(": ")
    text.append_text(state_text(row, now))
    if row.fault:
        text.append(" · ")
        text.append("BROKEN", style="bold")
        text.append(f" ({row.fault}): skipped until repaired")
    text.append(f" · {cron_text(row)} ({describe(row.cron_expr)}) {row.timezone}")
    if row.overridden:
        text.append(" · ")
        text.append(overridden_text(row), style="bold")
    text.append("\n")
    if row.state != "retired" and row.next_fire:
        prefix = "next fire if resumed" if row.state == "paused" else "next fire"
        text.append(f"{prefix} {utc(row.next_fire)} ({next_text(row, now)})")
    if row.last_enqueued_at:
        state = row.last_job_state or "?"
        text.append(f" · last {utc(row.last_enqueued_at)} job {state}, late {lateness(row.lateness)}")
    text.append(f" · queue {row.queue}")
    if row.queue_paused:
        text.append(" QUEUE PAUSED", style="bold")
        text.append(f" by {row.queue_paused_by}")
    if row.health and row.health != "ok":
        text.append(f" · health {row.health}", style="bold")
        if row.health_since:
            text.append(f" since {utc(row.health_since)}")
        if row.health_reason:
            text.append(f": {row.health_reason}")
    if not ledger:  # upstream mode: no fire ledger to tell results from
        return text
    text.append("\nlast result ")
    text.append_text(result_text(row.last_result))
    if row.last_error:
        text.append(f": {row.last_error}")
    text.append(f" · {row.fails_24h} failed in 24h")
    if row.outcomes:
        strip = outcome_strip(row.outcomes)
        text.append(f" · last {len(row.outcomes)} due instants {strip} ({strip_legend(strip)})")
    return text


class SchedulesPanel(ScheduleActions, Panel[SchedulePageRow]):
    panel_id = "schedules"
    title = "Schedules"
    BINDINGS = actions.bindings("schedules")

    def __init__(self, page_size: int = PAGE_SIZE) -> None:
        super().__init__()
        self.page_size = page_size
        self.limit = page_size
        self.filter_text = ""
        self.where: Filter | None = None  # the parsed filter (the grammar of docs/keys.md)
        self.filter_error: str | None = None  # one line; the rows of the last good filter stay
        self.sort = "name"
        self.descending = False
        self.counts: SchedulePage | None = None  # the last page: its counts head the title
        self.clock = Clock()
        self._cells: dict[str, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}  # name -> (signature, cells)
        # Shown name -> real row when selected: bulk actions act on these (names, re-checked by the engine).
        self.selected: dict[str, dict[str, Any]] = {}

    def compose(self) -> ComposeResult:
        yield Static(classes="panel-title")
        yield Input(placeholder="filter: owner:billing state:paused late nightly (enter keeps, esc clears)",
                    id="filter")
        yield Static(id="schedules-attention", classes="attention")
        self.shown = shown_columns(self.console.features)
        yield KeyedTable(tuple(COLUMNS[i] for i in self.shown), id="schedules-table")
        yield Static(id="schedules-summary", classes="row-summary")

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self.query_one("#schedules-attention", Static).display = False
        self.call_after_refresh(self.table.mark_sort, self.sort, self.descending)
        self.title_line("Schedules: loading…")

    # --- data -----------------------------------------------------------------------------

    def work(self) -> Work:
        where, sort, descending, limit = self.where, self.sort, self.descending, self.limit
        # The first page comes without its counts, which at a million rows are a scan of the
        # table and most of the fetch (issue 18): the rows show first, the counts a refresh later.
        counts = self.counts is not None

        def fetch(client: ConsoleBackend, now: datetime | None) -> SchedulePage:
            return client.schedule_page(None, sort=sort, descending=descending, limit=limit, now=now, where=where,
                                        counts=counts)

        return fetch

    def show(self, data: SchedulePage, now: datetime) -> None:
        moved = now != self.now
        self.now = self.clock.now = now
        # Keyed by the shown name (the table's first column is its row key); the values stay
        # the real rows, which actions use. Cells are made from escaped copies.
        self.rows = {printable(row.name): row for row in data.rows}
        self.counts = data
        table = self.table
        table.sync(self._table_rows())
        if moved and not table.last_sync_stats["updated"] and not table.last_sync_stats["added"]:
            table.tick()  # relative times of the visible rows
        self._cells = {name: self._cells[name] for name in self.rows}
        self._title()
        self._attention()
        self._summary()
        if data.total is None:
            self.post_message(RefreshRequested())  # the counts, now

    def _more_matching(self) -> bool:
        """More schedules match than the page holds (unknown until counted: no)."""
        matched = self.counts.matched if self.counts else None
        return matched is not None and len(self.rows) < matched

    def _attention(self) -> None:
        assert self.counts is not None
        line = attention_text(self.counts)
        widget = self.query_one("#schedules-attention", Static)
        widget.display = line is not None  # no line, no row taken, when all is well
        if line is not None:
            widget.update(line)

    def _table_rows(self) -> list[tuple[str, tuple[Any, ...]]]:
        return [(name, self._marked(name, self._row_cells(name, row))) for name, row in self.rows.items()]

    def _marked(self, name: str, made: tuple[Any, ...]) -> tuple[Any, ...]:
        """A selected row's name cell says so (a word-like mark, not a colour alone)."""
        if name not in self.selected:
            return made
        return (cell(f"+ {name}", "bold reverse"), *made[1:])

    def _row_cells(self, key: str, row: SchedulePageRow) -> tuple[Any, ...]:
        signature = SIGNATURE(row)
        cached = self._cells.get(key)
        if cached is not None and cached[0] == signature:
            return cached[1]
        every = cells(printable_row(row), self.clock)
        made = every if len(self.shown) == len(COLUMNS) else tuple(every[i] for i in self.shown)
        self._cells[key] = (signature, made)
        return made

    def _title(self) -> None:
        c = self.counts
        assert c is not None  # only called once a page is shown
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        text.append("Schedules ", style="bold")
        if c.total is None or c.matched is None:
            text.append(f"{len(self.rows):,} · counting…")
        elif self.filter_text:
            text.append(f"{len(self.rows):,} of {c.matched:,} matching ({c.total:,} total)")
        else:
            text.append(f"{len(self.rows):,} of {c.total:,}")
        # What the operator set (error, filter, selection) first: the line is cut at 80 columns.
        if self.filter_error:
            text.append(" · ")
            text.append(printable(self.filter_error), style="bold reverse")
        elif self.where:
            text.append(" · filter: ")
            text.append(printable(str(self.where)), style="bold")
        if self.selected:
            text.append(f" · {len(self.selected)} SELECTED", style="bold reverse")
            text.append(" (esc clears)")
        if c.paused is not None:
            lifecycle = "lifecycle" in self.console.features  # not upstream
            retired = f" · {c.retired:,} RETIRED" if lifecycle and c.retired is not None else ""
            text.append(f" · {c.paused:,} PAUSED{retired}")
        for health in UNHEALTHY:  # S42: worst first, only those there are
            if c.unhealthy.get(health):
                text.append(" · ")
                text.append(f"{c.unhealthy[health]:,} {health.upper()}", style=HEALTH_STYLES[health])
        text.append(f" · sort {self.sort}")
        text.append(" ↓" if self.descending else " ↑")
        if self._more_matching():
            text.append(" · end of list loads more")
        self.title_line(text)

    def _summary(self) -> None:
        row = self.selected_row()
        widget = self.query_one("#schedules-summary", Static)
        if row is None or self.now is None:
            widget.update(Text("No schedule matches." if self.filter_text else "No schedules yet."))
        else:
            widget.update(summary(printable_row(row), self.now, ledger="ledger" in self.console.features))

    @on(DataTable.RowHighlighted, "#schedules-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._summary()
        at_end = event.cursor_row >= self.table.row_count - 1
        if at_end and self._more_matching() and self.limit <= len(self.rows):
            self.limit += self.page_size
            self.post_message(RefreshRequested())

    @on(DataTable.RowSelected, "#schedules-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_details()

    # --- filter and sort ----------------------------------------------------------------------

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.value = self.filter_text
        box.focus()

    def apply_filter(self, text: str) -> None:
        """Filter by `text` (enter on an owner or a queue brings its schedules here)."""
        self.selected = {}
        box = self.query_one("#filter", Input)
        box.display = True
        box.value = text  # Input.Changed parses it and refreshes
        self.table.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        # Debounced: a refresh starts once typing pauses, server-side filtering does the rest.
        # A filter the grammar refuses says why in one line and keeps the rows shown.
        text = event.value.strip()
        try:
            where = parse(text or None, "schedules")
        except FilterError as exc:
            self.filter_error = str(exc)
            if self.counts:
                self._title()
            return
        self.filter_text, self.where, self.filter_error = text, where or None, None
        self.limit = self.page_size
        self.post_message(RefreshRequested(soon=True))

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        if self.filter_error:
            return  # stay in the box: the title says what is wrong
        box = self.query_one("#filter", Input)
        box.display = bool(self.filter_text)
        self.table.focus()

    def key_escape(self) -> None:
        """Esc clears the selection, then the filter (k9s habit)."""
        if self.selected and not self.query_one("#filter", Input).has_focus:
            self.selected = {}
            self._reshow()
            return
        if self.filter_text or self.query_one("#filter", Input).display:
            box = self.query_one("#filter", Input)
            box.value = ""
            box.display = False
            self.filter_text, self.where, self.filter_error = "", None, None
            self.table.focus()
            self.post_message(RefreshRequested())

    def sort_by_column(self, key: str) -> None:
        self._sort_by(key)  # server-side: the page is sorted by the engine

    def _sort_by(self, key: str | None) -> None:
        if key is None or key not in SORTS:
            return
        if key == self.sort:
            self.descending = not self.descending
        else:
            self.sort, self.descending = key, False
        self.limit = self.page_size
        self.table.mark_sort(self.sort, self.descending)
        self.post_message(RefreshRequested())

    def action_sort_menu(self) -> None:
        labels = {COLUMNS[i].key: COLUMNS[i].label for i in self.shown}
        self.post_message(SortMenuRequested([(key, labels[key]) for key in SORTS if key in labels], self.sort,
                                            self._sort_by))

    def action_cycle_sort(self) -> None:
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self.limit = self.page_size
        self.post_message(RefreshRequested())

    def action_reverse_sort(self) -> None:
        self.descending = not self.descending
        self.table.mark_sort(self.sort, self.descending)
        self.post_message(RefreshRequested())

    # --- selection --------------------------------------------------------------------------

    def _reshow(self) -> None:
        if self.counts:
            self.table.sync(self._table_rows())
            self._title()

    def action_toggle_select(self) -> None:
        key = self.table.selected_key
        if key is None or key not in self.rows:
            return
        if self.selected.pop(key, None) is None:
            self.selected[key] = self.rows[key]
        self._reshow()
        self.table.action_cursor_down()  # space, space, space selects a run of rows

    def action_select_all(self) -> None:
        self.selected = dict(self.rows)
        self._reshow()
        if self.counts and self._more_matching():
            self.notify(f"selected the {len(self.rows):,} loaded of {self.counts.matched:,} matching; "
                        "go to the end of the list to load more", markup=False, timeout=6)

    def _bulk(self, action: str) -> bool:
        """Act on the selection if there is one (True), else leave it to the single action."""
        if not self.selected:
            return False
        names = [row.name for row in self.selected.values()]

        def done() -> None:
            self.selected = {}
            self._reshow()

        request_operation(self, lambda: bulk_operation(action, names, self.console.known_owners), done)
        return True

    def action_toggle_pause(self) -> None:
        # A selection all paused is resumed; otherwise paused (the paused ones are skipped, said).
        if not self._bulk("resume" if self.selected and all(r.state == "paused" for r in self.selected.values())
                          else "pause"):
            super().action_toggle_pause()

    def action_trigger(self) -> None:
        if not self._bulk("trigger"):
            super().action_trigger()

    def action_adopt(self) -> None:
        if not self._bulk("adopt"):
            super().action_adopt()

    def action_retire(self) -> None:
        if not self._bulk("retire"):
            super().action_retire()

    def action_restore(self) -> None:
        if not self._bulk("restore"):
            super().action_restore()

    # --- actions ------------------------------------------------------------------------------

    def acted_schedule(self) -> SchedulePageRow:
        return self.chosen_row("schedule")

    def action_details(self) -> None:
        row = self.selected_row()
        if row is not None:
            self.post_message(DetailRequested(row.name))

    def action_show_jobs(self) -> None:
        """v: the schedule's jobs (the jobs panel, filtered by schedule:NAME)."""
        row = self.selected_row()
        if row is not None:
            self.post_message(JobsFilterRequested(str(Term("field", "schedule", row.name))))
