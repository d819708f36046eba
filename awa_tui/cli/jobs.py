"""`awa-tui jobs ...`: list, show, retry, cancel (`jobs prune` is cli/prune.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from awa_tui.cli import command_group
from awa_tui.cli.common import emit, emit_table, errors_as_lines, fmt, make_client, say
from awa_tui.cli.headings import listing_line
from awa_tui.cli.options import DsnOpt, JsonOpt, OperatorOpt
from awa_tui.cli.timeargs import parse_point

jobs_app = command_group("jobs", "Jobs: outcomes, retry, cancel, retention.")

JobArg = Annotated[int, typer.Argument(help="Job id.", min=1)]
JOB_COLUMNS = ["id", "schedule", "queue", "state", "result", "attempt", "fire_time", "created_at",
               "duration_s", "last_error"]


def _row(job: Any) -> dict[str, Any]:
    row = job.to_dict()
    if job.manual:
        row["fire_time"] = f"manual ({job.triggered_by})"
    if job.queue_paused and job.state in ("available", "retryable"):
        row["state"] = f"{job.state} [queue paused]"
    return row


@jobs_app.command("list")
def jobs_list(
    dsn: DsnOpt = None,
    as_json: JsonOpt = False,
    schedule: Annotated[str | None, typer.Option("--schedule", help="Only this schedule's jobs.")] = None,
    queue: Annotated[str | None, typer.Option("--queue", help="Only this queue's jobs.")] = None,
    state: Annotated[str | None, typer.Option("--state", help="available, running, completed, retryable, "
                                              "discarded or cancelled.")] = None,
    since: Annotated[str | None, typer.Option("--since", help=(
        "Only jobs created since: a duration ago (90s, 2h, 14d), today or yesterday (from 00:00 UTC), "
        "or an ISO-8601 instant."))] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10000)] = 50,
) -> None:
    """Recent jobs, newest first."""
    with errors_as_lines():
        if since is not None:  # its form, before connecting; the instant at the database's clock
            parse_point(since, "--since", datetime.now(UTC))
        client = make_client(dsn, read_only=True)
        start = parse_point(since, "--since", client.reads.db_time()) if since is not None else None
        jobs = client.reads.list_jobs(schedule=schedule, queue=queue, state=state, since=start, limit=limit)
        emit([j.to_dict() for j in jobs], as_json, lambda: emit_table([_row(j) for j in jobs], JOB_COLUMNS))


@jobs_app.command("show")
def jobs_show(job_id: JobArg, dsn: DsnOpt = None, as_json: JsonOpt = False) -> None:
    """One job: its outcome, timing, runtime, and every failed attempt with its error."""
    with errors_as_lines():
        detail = make_client(dsn, read_only=True).reads.job_detail(job_id)

        def render() -> None:
            for key, value in _row(detail.job).items():
                say(listing_line(key, fmt(value)))
            say(listing_line("lateness_s", fmt(detail.lateness_s)))
            say(listing_line("args", fmt(detail.args)))
            for a in detail.attempts:
                say(f"attempt {a.attempt} ({fmt(a.started_at)} .. {fmt(a.ended_at)}, runtime {fmt(a.runtime)}): "
                    f"{a.error}")
                for line in (a.traceback or "").splitlines():
                    say(f"    {line}")

        emit(detail.to_dict(), as_json, render)


@jobs_app.command("retry")
def jobs_retry(job_id: JobArg, dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False) -> None:
    """Run a failed, discarded or cancelled job again now (audited)."""
    with errors_as_lines():
        row = make_client(dsn, operator).actions.retry_job(job_id)
        emit(row, as_json, lambda: say(f"retried job {job_id}: waiting to run (attempt {row.attempt + 1} next)"))


@jobs_app.command("cancel")
def jobs_cancel(job_id: JobArg, dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False) -> None:
    """Cancel a job (audited): a waiting one at once; a running one is stopped by its runtime."""
    with errors_as_lines():
        row = make_client(dsn, operator).actions.cancel_job(job_id)
        emit(row, as_json, lambda: say(f"cancelled job {job_id}" if row.state != "running" else
                                       f"asked job {job_id}'s runtime to stop it: it ends cancelled once its "
                                       "handler stops"))
