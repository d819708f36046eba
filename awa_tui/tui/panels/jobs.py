"""Jobs: the newest jobs, fired and triggered, with their state, attempts and last error
(S39: "why did this job fail?"). Filtered by the engine (the jobs grammar of
docs/keys.md compiled to SQL), so a filter searches every job, not just the loaded page;
moving onto the last row loads the next, older page. G reads the last page (the oldest
jobs) at once, however many there are; g goes back to the newest.
"""

from __future__ import annotations

from collections.abc import Hashable
from datetime import datetime

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from awa_tui.engine.backend.protocol import ConsoleBackend
from awa_tui.engine.ledger.jobs import MAX_LIMIT
from awa_tui.engine.ledger.models import JobsPage, JobSummary
from awa_tui.filters import FilterError, parse
from awa_tui.printable import printable_row
from awa_tui.tui import actions, operations
from awa_tui.tui.formatting import seconds_text, short_utc, utc
from awa_tui.tui.messages import DetailRequested, JobDetailRequested, RefreshRequested, request_operation
from awa_tui.tui.panels.base import Panel, Work
from awa_tui.tui.widgets.filter_bar import FilterBar
from awa_tui.tui.widgets.keyed_table import Column, KeyedTable, cell

PAGE = 200
COLUMNS = (  # priority: which give way first when narrow, past the right edge (the summary line has them too)
    Column("id", "JOB", 7),
    Column("schedule", "SCHEDULE", 20),
    Column("state", "STATE", 10),
    Column("error", "LAST ERROR", 28, priority=1),
    Column("fire", "FIRE (UTC)", 14, priority=2),
    Column("attempt", "TRY", 5, priority=3),
    Column("late", "LATE", 6, priority=4),
    Column("queue", "QUEUE", 12, priority=5),
)
STATE_STYLES = {"retryable": "bold red", "discarded": "bold red", "running": "cyan", "available": "yellow"}


def lateness_s(job: JobSummary) -> float | None:
    """A fired job's lateness: created after its due instant by this much."""
    if job.fire_time is None or job.created_at is None:
        return None
    return (job.created_at - job.fire_time).total_seconds()


def one_line(text: str | None) -> str:
    """An error's first line (a traceback's text is in the job detail)."""
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else "-"


def cells(job: JobSummary) -> tuple[Text, ...]:
    return (
        cell(job.id),
        cell(job.schedule or "-"),
        cell(job.state, STATE_STYLES.get(job.state, "")),
        cell(one_line(job.last_error)),
        cell("manual" if job.manual else short_utc(job.fire_time)),
        cell(f"{job.attempt}/{job.max_attempts}"),
        cell(seconds_text(lateness_s(job))),
        cell(job.queue),
    )


def summary(job: JobSummary) -> Text:
    """The selected job in full, under the table."""
    text = Text(no_wrap=False, end="")
    text.append(f"job {job.id}", style="bold")
    text.append(f" {job.schedule or job.kind}: {job.state} (result {job.result}), attempt {job.attempt} "
                f"of {job.max_attempts}")
    if job.manual:
        text.append(f" · triggered by hand by {job.triggered_by or '?'} at {utc(job.created_at)}")
    elif job.source == "enqueued":
        text.append(f" · enqueued by the application at {utc(job.created_at)}, to run at {utc(job.run_at)}")
    else:
        text.append(f" · fired for {utc(job.fire_time)}, {seconds_text(lateness_s(job))} late")
    text.append(f" · queue {job.queue}")
    if job.queue_paused and job.state in ("available", "retryable"):
        text.append(" QUEUE PAUSED", style="bold")
        text.append(": it waits")
    text.append("\n")
    text.append(f"last error: {one_line(job.last_error)}" if job.last_error else "no error")
    return text


class JobsPanel(Panel[JobSummary]):
    panel_id = "jobs"
    title = "Jobs"
    BINDINGS = actions.bindings("jobs")

    def __init__(self) -> None:
        super().__init__()
        self.limit = PAGE
        self.page: JobsPage | None = None
        # Bumped when the filter changes; a page read under an older filter never moves the
        # cursor. The first page of a new filter puts it on the newest job (v then enter
        # opens the schedule's latest run), and an enter pressed before that page arrived
        # waits for it instead of opening a job of the old list.
        self.filter_generation = 0
        self.shown_generation = 0
        self.open_when_shown = False
        # G: the oldest page is shown (the end of the list), not the newest; g: back to the first row of the newest.
        self.tail = False
        self.to_start = False

    def compose(self) -> ComposeResult:
        yield Static(classes="panel-title")
        yield FilterBar("jobs", "filter: schedule:NAME state:running result:failed queue:Q failed manual "
                        "(enter keeps, esc clears)")
        yield self.chosen_table(COLUMNS, id="jobs-table")
        yield Static(id="jobs-summary", classes="row-summary")

    def on_mount(self) -> None:
        self.title_line("Jobs: loading…")

    def work(self) -> Work:
        bar = self.filter_bar
        where, limit, generation = (bar.where if bar is not None else None), self.limit, self.filter_generation
        tail = self.tail
        limit = PAGE if tail else limit

        def fetch(client: ConsoleBackend, now: datetime | None) -> tuple[int, JobsPage]:
            return generation, client.reads.jobs_page(where, limit=limit, now=now, oldest=tail)

        return fetch

    def view(self) -> Hashable:
        return super().view(), self.filter_generation, self.limit, self.tail

    def show(self, fetched: tuple[int, JobsPage], now: datetime) -> None:
        generation, data = fetched
        if generation < self.filter_generation or data.oldest != self.tail:
            return  # read under the previous filter, or before G / g: the next refresh brings this one's
        self.now = now
        self.page = data
        # Keyed by the job id (the table's first column); the values stay the real rows.
        self.rows = {str(job.id): job for job in data.rows}
        failed = sum(1 for job in data.rows if job.result == "failed")
        if data.oldest:
            title = Text.assemble(("Jobs ", "bold"), f"{len(data.rows):,} oldest · {failed} FAILED shown")
            title.append(" · the end of the list; g: the newest" if data.more else " · all shown")
        else:
            title = Text.assemble(("Jobs ", "bold"), f"{len(data.rows):,} newest · {failed} FAILED shown")
            if data.more:
                title.append(" · end of list loads more, G the oldest")
        self.title_line(title.append_text(self.filter_note()))
        self.table.sync(self.chosen_cells([(key, cells(printable_row(job))) for key, job in self.rows.items()]))
        if generation != self.shown_generation or self.to_start:
            self.shown_generation, self.to_start = generation, False
            if data.rows:  # newest first: the first row is the newest job
                self.table.move_cursor(row=self.table.get_row_index(str(data.rows[0].id)), animate=False)
            if self.open_when_shown:
                self.open_when_shown = False
                self.action_details()
        self._summary()

    def _filter_changed(self) -> None:
        self.limit = PAGE
        self.tail = False
        self.table.to_end = False
        self.filter_generation += 1

    def apply_filter(self, text: str) -> None:
        """Filter by `text` (v on a schedule brings its jobs here)."""
        bar = self.filter_bar
        assert bar is not None
        try:
            bar.where, bar.error = parse(text or None, "jobs") or None, None
        except FilterError as exc:
            bar.where, bar.error = None, str(exc)
        bar.value = text
        bar.display = bool(text)
        self._filter_changed()
        self.table.focus()

    def on_filter_bar_filter_changed(self, message: FilterBar.FilterChanged) -> None:
        self._filter_changed()
        super().on_filter_bar_filter_changed(message)

    def _summary(self) -> None:
        job = self.selected_row()
        widget = self.query_one("#jobs-summary", Static)
        if job is None:
            bar = self.filter_bar
            widget.update(Text("No job matches." if bar is not None and bar.where else "No jobs yet."))
        else:
            widget.update(summary(printable_row(job)))

    @on(DataTable.RowHighlighted, "#jobs-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._summary()
        at_end = event.cursor_row >= self.table.row_count - 1
        if self.tail or self.table.to_end:
            return  # the end of the list is shown, or G is reading it (_edge)
        if at_end and self.page is not None and self.page.more and self.limit <= len(self.rows) < MAX_LIMIT:
            self.limit = min(self.limit + PAGE, MAX_LIMIT)  # the engine reads at most MAX_LIMIT at once
            self.post_message(RefreshRequested())

    @on(KeyedTable.EdgeRequested, "#jobs-table")
    def _edge(self, event: KeyedTable.EdgeRequested) -> None:
        """G with older jobs beyond the loaded ones: the last page is read (never every job
        in between); g from that page: the newest page again, cursor on its first row."""
        if event.last and not self.tail and self.page is not None and self.page.more:
            self.tail = True
            self.post_message(RefreshRequested())
        elif not event.last and self.tail:
            self.tail, self.limit, self.to_start = False, PAGE, True
            self.post_message(RefreshRequested())

    @on(DataTable.RowSelected, "#jobs-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_details()

    def copy_value(self, key: str) -> tuple[str, str]:
        return "job id", key

    def action_details(self) -> None:
        if self.shown_generation != self.filter_generation:
            self.open_when_shown = True  # the rows shown are the old filter's
            return
        job = self.selected_row()
        if job is not None:
            self.post_message(JobDetailRequested(job.id))

    def action_show_schedule(self) -> None:
        job = self.selected_row()
        if job is None:
            return
        if job.schedule is None:
            self.notify(f"job {job.id} has no schedule (enqueued by the application)", markup=False, timeout=3)
        else:
            self.post_message(DetailRequested(job.schedule))

    def action_retry(self) -> None:
        request_operation(self, lambda: operations.retry_job(self.chosen_row("job")))

    def action_cancel_job(self) -> None:
        request_operation(self, lambda: operations.cancel_job(self.chosen_row("job")))

