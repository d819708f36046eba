"""`awa-tui queue ...`: list, pause, resume, drain (S18, S38)."""

from __future__ import annotations

from typing import Annotated

import typer

from awa_tui.cli import command_group
from awa_tui.cli.common import emit, emit_table, errors_as_lines, make_client, run_action
from awa_tui.cli.options import DsnOpt, JsonOpt, OperatorOpt

queue_app = command_group("queue", "Queues and their dispatch pause.")

QueueArg = Annotated[str, typer.Argument(help="Queue name.")]


@queue_app.command("list")
def queue_list(dsn: DsnOpt = None, as_json: JsonOpt = False) -> None:
    """Queues with pause state, waiting and running jobs, schedules targeting them."""
    with errors_as_lines():
        rows = make_client(dsn, read_only=True).reads.list_queues()
        emit(rows, as_json, lambda: emit_table(
            rows, ["queue", "paused", "paused_by", "paused_at", "available", "running", "schedules"]))


@queue_app.command("pause")
def queue_pause(queue: QueueArg, dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False) -> None:
    """Stop dispatch from a queue; fires keep inserting jobs into it."""
    run_action(dsn, operator, as_json, lambda client: client.actions.queue_pause(queue),
               lambda _: f"paused queue {queue}")


@queue_app.command("resume")
def queue_resume(queue: QueueArg, dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False) -> None:
    """Resume dispatch from a queue."""
    run_action(dsn, operator, as_json, lambda client: client.actions.queue_resume(queue),
               lambda _: f"resumed queue {queue}")


@queue_app.command("drain")
def queue_drain(queue: QueueArg, dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False) -> None:
    """Cancel every waiting (available/retryable) job of a queue; running jobs finish."""
    run_action(dsn, operator, as_json, lambda client: client.actions.queue_drain(queue),
               lambda result: f"drained queue {queue}: {result.cancelled} jobs cancelled")
