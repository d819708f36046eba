"""`awa-tui cron why NAME` and `awa-tui cron history NAME`: the fire ledger's verdicts."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from awa_tui.cli.common import emit, emit_table, errors_as_lines, make_client, say
from awa_tui.cli.cron import NameArg, _parse_instant, cron_app
from awa_tui.cli.options import DsnOpt, JsonOpt
from awa_tui.cli.timeargs import SinceOpt, UntilOpt, check_range, parse_point


@cron_app.command("why")
def cron_why(
    name: NameArg,
    dsn: DsnOpt = None,
    as_json: JsonOpt = False,
    at: Annotated[str | None, typer.Option("--at", metavar="INSTANT",
                                           help="Explain this due instant (ISO-8601) instead of the last one.")] = None,
) -> None:
    """One paragraph: did the last due instant (or --at) fire, and if not, why."""
    with errors_as_lines():
        instant = _parse_instant(at, "--at") if at is not None else None
        answer = make_client(dsn, read_only=True).reads.why(name, at=instant)
        emit(answer.to_dict(), as_json, lambda: say(answer.text))


def _detail(v: Any) -> str:
    from awa_tui.engine.ledger.why import describe

    # The sentence without its leading instant (the table shows it).
    return describe(v).split(": ", 1)[1]


@cron_app.command("history")
def cron_history(
    name: NameArg,
    dsn: DsnOpt = None,
    as_json: JsonOpt = False,
    since: SinceOpt = None,
    until: UntilOpt = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10000, help="The last N due instants.")] = 50,
) -> None:
    """The verdict of every due instant (fired, coalesced, skipped_paused, no_leader...)."""
    with errors_as_lines():
        client = make_client(dsn, read_only=True)
        now = client.reads.db_time()
        start = parse_point(since, "--since", now) if since is not None else None
        end = parse_point(until, "--until", now) if until is not None else None
        check_range(start, end)
        verdicts = client.reads.ledger(name, since=start, until=end, limit=limit, now=now)
        rows = [{**v.to_dict(), "detail": _detail(v)} for v in verdicts]
        emit([v.to_dict() for v in verdicts], as_json,
             lambda: emit_table(rows, ["instant", "verdict", "job_id", "result", "lateness_s", "detail"]))
