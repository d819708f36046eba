"""`awa-tui jobs prune`: finished jobs deleted past a horizon (S40).

Apart from the other `jobs` commands because its defaults are the engine's retention
constants: importing them loads psycopg, which listing the commands must not.
"""

from __future__ import annotations

from typing import Annotated

import typer

from awa_tui.cli.common import emit_json, emit_table, errors_as_lines, fmt, make_client, say
from awa_tui.cli.jobs import jobs_app
from awa_tui.cli.options import DsnOpt, JsonOpt, OperatorOpt
from awa_tui.cli.timeargs import parse_duration
from awa_tui.engine.core.limits import DEFAULT_KEEP, MANUAL_DUTY


@jobs_app.command("prune")
def jobs_prune(
    older_than: Annotated[str, typer.Option("--older-than", metavar="DURATION",
                                            help="Finished more than this long ago (e.g. 14d).")],
    dsn: DsnOpt = None,
    operator: OperatorOpt = None,
    as_json: JsonOpt = False,
    keep: Annotated[int, typer.Option("--keep", min=0, max=100000,
                                      help="Always keep each schedule's last N jobs.")] = DEFAULT_KEEP,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count, delete nothing.")] = False,
) -> None:
    """Delete finished jobs older than a horizon, keeping each schedule's last N (audited).

    Completed, discarded and cancelled jobs only, in small batches; waiting and running
    jobs are never touched."""
    with errors_as_lines():
        horizon = parse_duration(older_than, "--older-than")
        client = make_client(dsn, operator, read_only=dry_run)
        result = client.actions.prune_jobs(horizon, keep=keep, dry_run=dry_run, duty=MANUAL_DUTY,
                                   operator=None if dry_run else client.operator)
        verb = "would prune" if dry_run else "pruned"
        if as_json:
            emit_json(result.to_dict())
            return
        say(f"{verb} {result.deleted} finished jobs (finished before {fmt(result.cutoff)}; "
            f"the last {keep} of every schedule kept)")
        if result.by_schedule:
            emit_table([{"schedule": k, "jobs": v} for k, v in sorted(result.by_schedule.items())],
                       ["schedule", "jobs"])
