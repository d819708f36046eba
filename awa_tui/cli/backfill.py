"""`awa-tui cron backfill NAME --from T1 --to T2 [--dry-run] [--max N]`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from awa_tui.cli.common import emit, errors_as_lines, make_client, say
from awa_tui.cli.cron import NameArg, _parse_instant, cron_app
from awa_tui.cli.options import DsnOpt, JsonOpt, OperatorOpt
from awa_tui.engine.core.limits import BACKFILL_LIMIT
from awa_tui.printable import printable

# Every `cron` command imports this module (it registers `cron backfill`): the engine's
# backfill loads only when one runs.
if TYPE_CHECKING:
    from awa_tui.engine.actions.backfill import BackfillResult


def backfill_summary(result: BackfillResult) -> str:
    """One line: what was (or would be) enqueued, and what was left alone."""
    from awa_tui.engine.cron.expression import iso_utc

    verb = "would enqueue" if result.dry_run else "enqueued"
    text = (f"{printable(result.schedule)}: {verb} {result.count} backfill job{'s' if result.count != 1 else ''} "
            f"for {iso_utc(result.from_at)} .. {iso_utc(result.to_at)}")
    if result.already_fired:
        text += f"; {result.already_fired} instant{'s' if result.already_fired != 1 else ''} already fired"
    if result.left_to_scheduler:
        text += (f"; {result.left_to_scheduler} instant{'s' if result.left_to_scheduler != 1 else ''} "
                 "after its last fire left to the scheduler")
    return text


@cron_app.command("backfill")
def cron_backfill(
    name: NameArg,
    from_text: Annotated[str, typer.Option("--from", metavar="INSTANT", help="First instant (ISO-8601).")],
    to_text: Annotated[str, typer.Option("--to", metavar="INSTANT",
                                         help="Last instant (ISO-8601), not in the future.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count the instants; enqueue nothing.")] = False,
    max_count: Annotated[int, typer.Option("--max", min=1, help="Refuse above this many jobs.")] = BACKFILL_LIMIT,
    dsn: DsnOpt = None,
    operator: OperatorOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Enqueue one job per due instant in the range that never fired (verdict backfilled)."""
    from awa_tui.engine.cron.expression import iso_utc

    with errors_as_lines():
        start, end = _parse_instant(from_text, "--from"), _parse_instant(to_text, "--to")
        client = make_client(dsn, operator, read_only=dry_run)
        result = client.actions.backfill(name, start, end, dry_run=dry_run, max_count=max_count)

        def render() -> None:
            say(backfill_summary(result))
            if dry_run:
                for t in result.instants[:20]:
                    say(f"  {iso_utc(t)}")
                if result.count > 20:
                    say(f"  ... and {result.count - 20} more")
                say("dry run: nothing enqueued")

        emit({**result.to_dict(), "count": result.count}, as_json, render)
