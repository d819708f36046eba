"""One job in full (S39: "why did this job fail?"): its state and timings, every
attempt's error and the tail of its traceback, args and metadata, and the schedule it was
fired for (v opens it). Retry and cancel work here too, confirmed like every action."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Footer, Header, Static

from awa_tui.engine.ledger.models import Attempt, JobDetail
from awa_tui.printable import printable, printable_row
from awa_tui.tui import actions, operations
from awa_tui.tui.formatting import pretty_json, seconds_text, utc
from awa_tui.tui.messages import (
    CopyRequested,
    DetailRequested,
    JobDataRequested,
    request_operation,
    usable_reply,
)
from awa_tui.tui.screens.confirm import facts
from awa_tui.tui.screens.detail import section
from awa_tui.tui.screens.live import LiveScreen

if TYPE_CHECKING:
    pass


def lines(text: str) -> Text:
    """Several lines from the database (a traceback): each escaped, the line breaks kept."""
    return Text("\n".join(printable(line) for line in text.rstrip().splitlines()))


def attempt_part(attempt: Attempt) -> RenderableType:
    head = Text.assemble((f"attempt {attempt.attempt}", "bold"), f"  {utc(attempt.started_at)} -> "
                         f"{utc(attempt.ended_at)}  runtime {printable(attempt.runtime or '?')}")
    body = [head, Text.assemble(("error: ", "bold"), printable(attempt.error or "?"))]
    if attempt.traceback:
        body.append(Text("traceback (last frames):", style="bold"))
        body.append(lines(attempt.traceback))
    return Group(*body)


def job_facts(data: JobDetail) -> RenderableType:
    job = data.job
    how = (f"triggered by hand by {job.triggered_by or '?'}" if job.manual
           else "enqueued by the application" if job.source == "enqueued"
           else f"fired for {utc(job.fire_time)}, {seconds_text(data.lateness_s)} late")
    rows = [
        ("schedule", job.schedule or "- (none: enqueued by the application)"),
        ("how", how),
        ("kind", job.kind),
        ("queue", job.queue + ("  (QUEUE PAUSED: it waits)" if job.queue_paused and job.result == "waiting" else "")),
        ("state", f"{job.state} (result {job.result})"),
        ("attempt", f"{job.attempt} of at most {job.max_attempts}"),
        ("created", utc(job.created_at)),
        ("run at", utc(job.run_at)),
        ("attempted", utc(job.attempted_at)),
        ("finalized", utc(job.finalized_at)),
        ("duration", seconds_text(job.duration_s)),
        ("runtime", job.runtime or "-"),
        ("tags", ", ".join(data.tags) or "-"),
    ]
    return facts(rows)


class JobDetailScreen(LiveScreen):
    BINDINGS = actions.bindings("job")
    CONTEXT = "job"
    FOCUS = "#job-detail"

    def __init__(self, job_id: int, interval: float = 2.0) -> None:
        super().__init__(interval)
        self.job_id = job_id
        self.data: JobDetail | None = None

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with VerticalScroll(id="job-detail"):
            yield Static(Text(f"job {self.job_id}: loading…"), id="job-body")
        yield Footer(compact=True)

    def action_reload(self) -> None:
        self.loading = True
        self.post_message(JobDataRequested(self.job_id, self.show))

    def show(self, data: JobDetail | None, error: str | None) -> None:
        self.loading = False
        if not usable_reply(self, "#job-body", error, f"job {self.job_id}"):
            return
        assert data is not None
        self.data = data
        shown: JobDetail = printable_row(data)  # every database string escaped; self.data keeps the real one
        job = shown.job
        head = Text.assemble((f"job {job.id}", "bold"), "  ", (job.schedule or job.kind, "bold"), "  ")
        head.append(job.state.upper() if job.result == "failed" else job.state,
                    style="bold reverse" if job.result == "failed" else "bold")
        if job.last_error:
            head.append(f"  {job.last_error}")  # escaped: one line
        attempts: list[RenderableType] = [attempt_part(a) for a in data.attempts] or [Text("no failed attempt")]
        links = Text("v: its schedule · t: retry · x: cancel · esc: back", style="dim")
        self.query_one("#job-body", Static).update(Group(
            head, links,
            section("Job"), job_facts(shown),
            section(f"Failed attempts ({len(data.attempts)})"), *attempts,
            section("Args"), Text(pretty_json(data.args)),
            section("Metadata"), Text(pretty_json(data.metadata)),
        ))

    def action_close(self) -> None:
        self.dismiss()

    def action_copy(self) -> None:
        self.post_message(CopyRequested("job id", str(self.job_id)))

    def action_show_schedule(self) -> None:
        if self.data is None:
            return
        if self.data.job.schedule is None:
            self.notify(f"job {self.job_id} has no schedule (enqueued by the application)", markup=False, timeout=3)
        else:
            self.post_message(DetailRequested(self.data.job.schedule))

    def action_retry(self) -> None:
        if self.data is not None:
            job = self.data.job
            request_operation(self, lambda: operations.retry_job(job), self.action_reload)

    def action_cancel_job(self) -> None:
        if self.data is not None:
            job = self.data.job
            request_operation(self, lambda: operations.cancel_job(job), self.action_reload)
