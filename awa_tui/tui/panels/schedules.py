"""Schedules: every schedule with its state, next and last fire, filter, sort, actions.

Only one page is fetched (server-side filter, sort and LIMIT): with 100k schedules the
console never holds or renders them all. Moving the cursor onto the last row loads the
next page; the keyed table keeps the cursor on the same schedule across refreshes.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from datetime import datetime
from operator import attrgetter
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import DataTable, Input, Static

from awa_tui.engine.backend.protocol import ConsoleBackend
from awa_tui.engine.core.limits import DEFAULT_MAX_LATENESS_S
from awa_tui.engine.cron.describe import describe
from awa_tui.engine.health.models import UNHEALTHY
from awa_tui.engine.read.models import AnySchedule, SchedulePage, SchedulePageRow, overdue_s
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
    span_precise,
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
    ScheduleFormRequested,
    SortMenuRequested,
    request_operation,
)
from awa_tui.tui.operations import RUN_TIME, ScheduleForm, create_schedule
from awa_tui.tui.panel_defaults import PanelDefaults, chosen_indexes
from awa_tui.tui.panels.base import Panel, Work
from awa_tui.tui.panels.schedule_title import TitleParts, title_forms
from awa_tui.tui.selection import bulk_operation, marked_range
from awa_tui.tui.widgets.filter_bar import take_keys
from awa_tui.tui.widgets.fitted import FittedLine
from awa_tui.tui.widgets.keyed_table import Column, KeyedTable, cell
from awa_tui.tui.widgets.live import Clock, LiveCell

SORTS = ("name", "next", "last", "state", "queue", "owner", "health", "result", "fails")
COLUMNS = (  # priority: which give way first when narrow, past the right edge (0 never; the summary has them)
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
    Column("made", "MADE", 8, priority=14),  # S64: "code" or "run time" (how it is changed: e)
)


ALL_COLUMNS = tuple(range(len(COLUMNS)))


def state_cell(row: SchedulePageRow) -> Text:
    style = {"paused": "bold yellow", "retired": "bold red", "finished": "bold cyan"}.get(row.state, "")
    if row.fault:
        # S15: it cannot fire until repaired; the summary line below says why.
        text = cell("BROKEN", "bold red reverse")
        if row.state != "active":
            text.append(", ")
            text.append(state_word(row.state), style=style)
    elif row.overridden and row.state == "active":  # S49: "active" would not fit beside it
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


def _health_live(value: tuple[str | None, str, datetime | None, bool, int | None], now: datetime) -> str:
    """The leader's word, or LATE when its due fire waited past the schedule's lateness
    bound: a stalled leader (or none) judges nothing, and its last word was ok."""
    health, state, at, due, max_lateness = value
    waited = overdue_s(state, at, due, now)
    bound = DEFAULT_MAX_LATENESS_S if max_lateness is None else max_lateness
    if waited is not None and waited > bound and health in (None, "ok"):
        return "LATE"
    word = health or "-"  # "-": the leader has not judged it yet
    return word.upper() if word in UNHEALTHY else word


class HealthCell(LiveCell):
    """HEALTH, styled by its word (which the clock can turn to LATE between two reads)."""

    __slots__ = ()

    def text(self) -> Text:
        word = self.plain
        return cell(word, HEALTH_STYLES.get(word.lower(), "dim"))


def attention_forms(page: SchedulePage) -> tuple[Text, ...]:
    """The ATTENTION line: the worst unhealthy schedule, since when and why (S42), and how
    many more with the filter that lists them; narrow, that count comes before the reason
    (which the cut shortens). None: all is well."""
    worst = page.attention
    if worst is None:
        return ()
    head = Text(no_wrap=True, overflow="ellipsis", end="")
    head.append("ATTENTION ", style="bold reverse")
    head.append(f" {worst.health.upper()} ", style=HEALTH_STYLES.get(worst.health, "bold"))
    head.append(printable(worst.name), style="bold")
    why = Text()
    if worst.since is not None:
        why.append(f" since {utc(worst.since)}")
    if worst.reason:
        why.append(f": {printable(worst.reason)}")
    others = sum(page.unhealthy.values()) - 1
    if others <= 0:
        return (head + why,)
    more = Text(f" (+{others:,} more: filter health:…)")
    return head + why + more, head + more + why


def cron_text(row: AnySchedule) -> str:
    """The expression fired from, and beside it the written one when it uses H (S48)."""
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
        if state == "paused":
            return "on resume"
        waited = overdue_s(state, at, due, now)
        return "due now" if waited is None else f"overdue {span_precise(waited)}"
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
    "last_result", "fails_24h", "outcomes", "origin",
)


# Columns a backend feature provides (engine/read/backend.FEATURES): upstream mode has no
# health judgement and no fire ledger, so it shows neither rather than blanks.
COLUMN_NEEDS = {"health": "health", "result": "ledger", "fails": "ledger", "strip": "ledger",
                "made": "runtime_schedules"}


def shown_columns(features: frozenset[str]) -> tuple[int, ...]:
    """Indexes of the COLUMNS (and cells) a backend with `features` shows."""
    return tuple(i for i, c in enumerate(COLUMNS) if COLUMN_NEEDS.get(c.key, "") in ("", *features))


def cells(row: SchedulePageRow, clock: Clock) -> tuple[Any, ...]:
    who = state_by(row)
    return (
        cell(row.name),
        state_cell(row),
        LiveCell((row.state, row.next_fire, row.next_fire_due), _next_live, clock),
        HealthCell((row.health, row.state, row.next_fire, row.next_fire_due, row.max_lateness), _health_live, clock),
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
        cell("run time" if row.origin == RUN_TIME else "code"),
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
    if row.origin == RUN_TIME:  # S64: e edits it in the schedule form (code's: an override)
        text.append(" · made at run time")
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
        self.selected: dict[str, SchedulePageRow] = {}
        self.last_marked: str | None = None  # the row last selected (space or a range): a range starts there
        # G: the last page of the order is shown (the end of the list), not the first; g:
        # back to the first page, cursor on its first row.
        self.tail = False
        self.to_start = False

    def compose(self) -> ComposeResult:
        yield FittedLine(classes="panel-title")
        yield Input(placeholder="filter: owner:billing state:paused late nightly (enter keeps, esc clears)",
                    id="filter")
        yield FittedLine(id="schedules-attention", classes="attention")
        self.shown = chosen_indexes(COLUMNS, self.defaults, shown_columns(self.console.features))
        if self.sort not in {COLUMNS[i].key for i in self.shown}:  # the file's, on a backend without its column
            self.sort, self.descending = "name", False
        yield KeyedTable(tuple(COLUMNS[i] for i in self.shown), id="schedules-table")
        yield Static(id="schedules-summary", classes="row-summary")

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self.query_one("#schedules-attention", Static).display = False
        self.call_after_refresh(self.table.mark_sort, self.sort, self.descending)
        self.title_line("Schedules: loading…")

    def take_defaults(self, defaults: PanelDefaults) -> None:
        """The config file's columns (compose) and sort: in the database, as `o` sorts."""
        super().take_defaults(defaults)
        if defaults.sort is not None:
            self.sort, self.descending = defaults.sort, defaults.descending

    # --- data -----------------------------------------------------------------------------

    def work(self) -> Work:
        where, sort, descending, limit, tail = self.where, self.sort, self.descending, self.limit, self.tail
        limit = self.page_size if tail else limit
        # The first page comes without its counts, which at a million rows are a scan of the
        # table and most of the fetch: the rows show first, the counts a refresh later.
        counts = self.counts is not None

        def fetch(client: ConsoleBackend, now: datetime | None) -> SchedulePage:
            return client.reads.schedule_page(None, sort=sort, descending=descending, limit=limit, now=now, where=where,
                                        counts=counts, from_end=tail)

        return fetch

    def view(self) -> Hashable:
        return str(self.where) if self.where else None, self.sort, self.descending, self.limit, self.tail

    def show(self, data: SchedulePage, now: datetime) -> None:
        if data.from_end != self.tail:
            return  # read before G or g: the read they asked for follows
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
        if self.to_start:  # g from the last page: the first row of the first
            self.to_start = False
            table.move_cursor(row=0, animate=False)
        self._title()
        self._attention()
        self._summary()
        if data.total is None:
            self.post_message(RefreshRequested())  # the counts, now

    def _more_matching(self) -> bool:
        """More schedules match than the page holds (unknown until counted: no); on the last
        page (G) none beyond it."""
        matched = self.counts.matched if self.counts else None
        return matched is not None and len(self.rows) < matched and not self.tail

    def _attention(self) -> None:
        assert self.counts is not None
        forms = attention_forms(self.counts)
        widget = self.query_one("#schedules-attention", FittedLine)
        widget.display = bool(forms)  # no line, no row taken, when all is well
        if forms:
            widget.show(*forms)

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
        made = every if self.shown == ALL_COLUMNS else tuple(every[i] for i in self.shown)
        self._cells[key] = (signature, made)
        return made

    def _title(self) -> None:
        c = self.counts
        assert c is not None  # only called once a page is shown
        head = Text(no_wrap=True, overflow="ellipsis", end="")
        head.append("Schedules ", style="bold")
        if c.total is None or c.matched is None:
            head.append(f"{len(self.rows):,} · counting…")
        elif self.tail:
            head.append(f"the last {len(self.rows):,} of {c.matched:,}")
        elif self.filter_text:
            head.append(f"{len(self.rows):,} of {c.matched:,} matching ({c.total:,} total)")
        else:
            head.append(f"{len(self.rows):,} of {c.total:,}")
        # What the operator set (error, filter, selection) first: the line is cut at 80 columns.
        if self.filter_error:
            head.append(" · ")
            head.append(printable(self.filter_error), style="bold reverse")
        elif self.where:
            head.append(" · filter: ")
            head.append(printable(str(self.where)), style="bold")
        if self.selected:
            head.append(f" · {len(self.selected)} SELECTED", style="bold reverse")
        states: list[Text] = []
        if c.paused is not None:
            states.append(Text(f"{c.paused:,} PAUSED"))
            if "lifecycle" in self.console.features and c.retired is not None:  # not upstream
                states.append(Text(f"{c.retired:,} RETIRED"))
        faults: list[Text] = []
        if c.overdue:  # whoever judges health: fires nobody made (a stalled or absent leader)
            faults.append(Text(f"{c.overdue:,} OVERDUE", style="bold yellow"))
        for health in UNHEALTHY:  # S42: worst first, only those there are
            if c.unhealthy.get(health):
                faults.append(Text(f"{c.unhealthy[health]:,} {health.upper()}", style=HEALTH_STYLES[health]))
        hint = ""
        if self._more_matching():
            hint = "end of list loads more, G the last"
        elif self.tail and c.matched is not None and len(self.rows) < c.matched:
            hint = "the end of the list; g: the first"
        parts = TitleParts(head, " (esc clears)" if self.selected else "", states, faults,
                           f"sort {self.sort} {'↓' if self.descending else '↑'}", hint)
        self.title_line(*title_forms(parts))

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
        if self.table.to_end:
            return  # G reads the last page instead (_edge)
        if at_end and self._more_matching() and self.limit <= len(self.rows):
            self.limit += self.page_size
            self.post_message(RefreshRequested())

    @on(KeyedTable.EdgeRequested, "#schedules-table")
    def _edge(self, event: KeyedTable.EdgeRequested) -> None:
        """G with more matching rows than loaded: the last page of the order is read (one
        page, not every row between); g from there: the first page again."""
        if event.last and self._more_matching():
            self.tail = True
            self.post_message(RefreshRequested())
        elif not event.last and self.tail:
            self.tail, self.limit, self.to_start = False, self.page_size, True
            self.post_message(RefreshRequested())

    @on(DataTable.RowSelected, "#schedules-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_details()

    # --- filter and sort ----------------------------------------------------------------------

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        take_keys(box)
        box.value = self.filter_text

    def apply_filter(self, text: str) -> None:
        """Filter by `text` (enter on an owner or a queue brings its schedules here)."""
        self.selected, self.last_marked = {}, None
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
        self.limit, self.tail = self.page_size, False
        self.table.to_end = False
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
            self.selected, self.last_marked = {}, None
            self._reshow()
            return
        if self.filter_text or self.query_one("#filter", Input).display:
            box = self.query_one("#filter", Input)
            box.value = ""
            box.display = False
            self.filter_text, self.where, self.filter_error = "", None, None
            self.tail = False
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
        self.limit, self.tail = self.page_size, False
        self.table.mark_sort(self.sort, self.descending)
        self.post_message(RefreshRequested())

    def action_sort_menu(self) -> None:
        labels = {COLUMNS[i].key: COLUMNS[i].label for i in self.shown}
        self.post_message(SortMenuRequested([(key, labels[key]) for key in SORTS if key in labels], self.sort,
                                            self._sort_by))

    def action_cycle_sort(self) -> None:
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self.limit, self.tail = self.page_size, False
        self.post_message(RefreshRequested())

    def action_reverse_sort(self) -> None:
        self.descending, self.tail = not self.descending, False
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
            self.last_marked = key
        elif key == self.last_marked:
            self.last_marked = None
        self._reshow()
        self.table.action_cursor_down()  # space, space, space selects a run of rows

    def action_select_range(self) -> None:
        """k9s's range mark: every row from the last selected one to the cursor, both
        included, in the order shown, added to the selection (none, or it is no longer
        listed: the cursor's row alone). The cursor stays."""
        key = self.table.selected_key
        if key is None or key not in self.rows:
            return
        for name in marked_range(self._order(), self.last_marked, key):
            self.selected[name] = self.rows[name]
        self.last_marked = key
        self._reshow()

    def _order(self) -> list[str]:
        """The row keys in the order the table shows them."""
        return [str(row.key.value) for row in self.table.ordered_rows]

    def action_select_all(self) -> None:
        # Added to what is selected (a second filter's rows join the first's); esc clears.
        before = len(self.selected)
        self.selected.update(self.rows)
        self._reshow()
        if before:
            self.notify(f"{len(self.selected):,} selected: {len(self.selected) - before:,} added to the {before:,} "
                        "already selected (esc clears)", markup=False, timeout=4)
        if self.counts and self._more_matching():
            self.notify(f"selected the {len(self.rows):,} loaded of {self.counts.matched:,} matching; "
                        "go to the end of the list to load more", markup=False, timeout=6)

    def _bulk(self, action: str) -> bool:
        """Act on the selection if there is one (True), else leave it to the single action."""
        if not self.selected:
            return False
        names = [row.name for row in self.selected.values()]

        def done() -> None:
            self.selected, self.last_marked = {}, None
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

    def action_new_schedule(self) -> None:
        """n: the schedule form, then the usual confirmation (S64)."""

        def filled(form: ScheduleForm | None) -> None:
            if form is not None:
                request_operation(self, lambda: create_schedule(form), self.after_operation)

        self.post_message(ScheduleFormRequested(None, filled))

    def action_show_jobs(self) -> None:
        """v: the schedule's jobs (the jobs panel, filtered by schedule:NAME)."""
        row = self.selected_row()
        if row is not None:
            self.post_message(JobsFilterRequested(str(Term("field", "schedule", row.name))))
