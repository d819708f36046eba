"""`awa-tui import pg-cron`: pg_cron's jobs carried over as schedules (S68,
docs/coming-from-pg-cron.md). The engine reads, plans and applies (engine/imports/pg_cron.py);
this module parses the flags and shows the plan."""

from __future__ import annotations

import threading
from typing import Annotated, Any

import typer

from awa_tui.cli import command_group
from awa_tui.cli.common import emit, emit_table, errors_as_lines, fail, require_dsn, say, warn
from awa_tui.cli.options import DsnOpt, JsonOpt, OperatorOpt

import_app = command_group("import", "Carry schedules over from another scheduler (pg_cron).")

PLAN_COLUMNS = ("jobid", "name", "schedule", "cron_expr", "timezone", "database", "username", "active", "action",
                "refusal")


@import_app.command("pg-cron")
def import_pg_cron(
    source: Annotated[str, typer.Option("--from", metavar="DSN", help=(
        "The database where pg_cron keeps its jobs (its cron.database_name). Read; written only with "
        "--unschedule (the jobs switched over are deactivated there)."))],
    dsn: DsnOpt = None,
    as_json: JsonOpt = False,
    operator: OperatorOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the plan; write nothing.")] = False,
    owner: Annotated[str, typer.Option("--owner", help="The owner of the schedules made.")] = "pg_cron",
    unschedule: Annotated[bool, typer.Option("--unschedule", help=(
        "Switch each active job over: awa runs its instants from the next one on, pg_cron those before "
        "(the job is deactivated in pg_cron: neither run twice nor missed). Without it the schedules are "
        "made paused and pg_cron keeps running the jobs."))] = False,
    skip_refused: Annotated[bool, typer.Option("--skip-refused", help=(
        "Import the jobs that can be carried over when some cannot (without it, nothing is written)."))] = False,
    history: Annotated[bool, typer.Option("--history", help=(
        "Also carry each job's finished runs (cron.job_run_details, the newest 1000) over as finished jobs of "
        "its schedule (`awa-tui jobs list --schedule NAME`)."))] = False,
) -> None:
    """Plan one schedule of the SQL job kind per pg_cron job and make them (run by `awa-tui run --sql-jobs`)."""
    from awa_tui.engine.client import Client
    from awa_tui.engine.imports import pg_cron

    with errors_as_lines():
        client = Client(require_dsn(dsn), operator=operator, application_name="awa-tui import")
        try:
            # This database first: a role that may not write here is told so before pg_cron is asked.
            refusal = None if dry_run else client.reads.write_refusal()
            if refusal is not None:
                fail(f"permission denied: {refusal}")
            plan = pg_cron.read_plan(source, client.db, owner)
            if dry_run or not plan.jobs:
                emit(_plan_json(plan, unschedule), as_json, lambda: _show_plan(plan, unschedule))
                return
            if plan.refused and not skip_refused:
                if not as_json:
                    _show_plan(plan, unschedule)
                else:
                    emit(_plan_json(plan, unschedule), True, lambda: None)
            result = pg_cron.apply(plan, client.db, client.operator, client.max_lateness, source_dsn=source,
                                   skip_refused=skip_refused, unschedule=unschedule, history=history,
                                   wait=lambda seconds: _wait(seconds, as_json))
        finally:
            client.close()

        def render() -> None:
            _show_plan(plan, unschedule)
            active = {j.name: j.active for j in plan.jobs}
            for name in result.created:
                why = "pg_cron still runs it" if active.get(name) else "inactive in pg_cron"
                say(f"created {name}" + (f" (paused: {why})" if name in result.paused else ""))
            for switched in result.switched:
                say(f"switched {switched.name}: awa runs it from {switched.at.isoformat()}, "
                    f"pg_cron job {switched.jobid} is deactivated")
            if history:
                say(f"carried {result.history} pg_cron runs over as finished jobs")
            if result.skipped:
                warn(f"left in pg_cron: {', '.join(result.skipped)}")

        emit({"plan": _plan_json(plan, unschedule), "created": list(result.created), "paused": list(result.paused),
              "switched": [{"name": s.name, "jobid": s.jobid, "at": s.at} for s in result.switched],
              "skipped": list(result.skipped), "history": result.history}, as_json, render)


def _wait(seconds: float, quiet: bool) -> None:
    """The switch-over waits for its window (too close to an instant of a job): said on stderr."""
    if not quiet:
        warn(f"waiting {seconds:.1f} s: a job's instant is too close to switch it over now")
    threading.Event().wait(seconds)


def _action(job: Any, unschedule: bool) -> str:
    """What the import does with the job: create (paused), switch (with --unschedule), exists, refused."""
    if unschedule and job.active and job.refusal is None:
        return "switch"
    return str(job.action)


def _rows(plan: Any, unschedule: bool) -> list[dict[str, Any]]:
    return [{"jobid": j.jobid, "name": j.name, "schedule": j.schedule, "cron_expr": j.cron_expr,
             "timezone": j.timezone, "database": j.database, "username": j.username, "active": j.active,
             "action": _action(j, unschedule), "refusal": j.refusal, "command": j.command} for j in plan.jobs]


def _plan_json(plan: Any, unschedule: bool) -> dict[str, Any]:
    return {"source": plan.source, "owner": plan.owner, "timezone": plan.timezone, "jobs": _rows(plan, unschedule)}


def _show_plan(plan: Any, unschedule: bool) -> None:
    if not plan.jobs:
        say(f"no pg_cron jobs in {plan.source}")
        return
    emit_table(_rows(plan, unschedule), PLAN_COLUMNS, title=f"pg_cron jobs in {plan.source} (zone {plan.timezone})")
    for job in plan.refused:
        warn(f"job {job.jobid} ({job.name}) cannot be carried over: {job.refusal}")
