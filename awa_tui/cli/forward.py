"""`forward procrastinate`: jobs of a kind deferred to Procrastinate in the fire's transaction."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from awa_tui.cli import command_group
from awa_tui.cli.common import emit, errors_as_lines, require_dsn, say
from awa_tui.cli.options import DsnOpt, JsonOpt

forward_app = command_group(
    "forward", "Hand the jobs of a kind to another queue in the same database, in the transaction that fires them.")


@forward_app.command("procrastinate")
def forward_procrastinate(
    kind: Annotated[str, typer.Option("--kind", help="The job kind whose jobs go to Procrastinate.")],
    task: Annotated[str | None, typer.Option(
        "--task", help="The Procrastinate task name they are deferred to.")] = None,
    queue: Annotated[str | None, typer.Option(
        "--queue", help="Procrastinate's queue (default: the job's own queue).")] = None,
    fire_time_kwarg: Annotated[str | None, typer.Option(
        "--fire-time-kwarg", metavar="NAME",
        help="Also pass the fire instant (ISO text) as this keyword argument.")] = None,
    schema: Annotated[str | None, typer.Option(
        "--schema", help="The schema holding Procrastinate's tables (default: public).")] = None,
    remove: Annotated[bool, typer.Option("--remove", help="Stop forwarding the kind.")] = False,
    apply: Annotated[bool, typer.Option("--apply", help="Run the SQL instead of printing it.")] = False,
    dsn: DsnOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Defer every new job of a kind to a Procrastinate task, exactly once (prints the SQL; --apply runs it)."""
    from awa_tui.engine.actions import forward as fwd

    with errors_as_lines():
        if remove:
            script = fwd.remove_sql(kind)
            if not apply:
                emit({"kind": kind, "trigger": fwd.trigger_name(kind), "sql": script}, as_json,
                     lambda: sys.stdout.write(script))
                return
            data = fwd.remove(require_dsn(dsn), kind)
            emit(data, as_json, lambda: say(f"jobs of kind {kind} are no longer forwarded to Procrastinate"))
            return
        if task is None:
            from awa_tui.engine.core.errors import ValidationError

            raise ValidationError("--task is required (the Procrastinate task the jobs are deferred to)")
        plan = fwd.forward(kind, task, queue, fire_time_kwarg, schema or fwd.DEFAULT_SCHEMA)
        if not apply:
            emit({"kind": plan.kind, "task": plan.task, "trigger": plan.trigger, "sql": plan.sql}, as_json,
                 lambda: sys.stdout.write(plan.sql))  # our own SQL: every value quoted as a literal
            return
        data = fwd.install(require_dsn(dsn), plan)
        emit(data, as_json, lambda: say(
            f"jobs of kind {plan.kind} now go to Procrastinate task {plan.task}, in the transaction that fires them"))
