"""The CLI's bulk forms: `cron pause|resume|trigger|retire|restore NAME... [--filter EXPR]
[--dry-run]` and `cron adopt --declared-by OWNER [--dry-run]` (engine/actions/bulk.py).

A command given exactly one name and neither option keeps its single-action behaviour
(a refusal is an error); any other selection runs as a bulk action, where a schedule
whose state refuses is reported as skipped, with the reason, and the rest goes on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from awa_tui.cli.common import emit, errors_as_lines, make_client, run_action, say

if TYPE_CHECKING:
    from awa_tui.engine.backend.protocol import ConsoleBackend

NamesArg = Annotated[list[str] | None, typer.Argument(help="Schedule names (or use --filter).", show_default=False)]
FilterOpt = Annotated[str | None, typer.Option(
    "--filter", metavar="EXPR",
    help="Select by a filter: owner:billing state:paused queue:q1 late, free text... (docs/keys.md).")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Print what would be done, and change nothing.")]

PAST = {"pause": "paused", "resume": "resumed", "trigger": "triggered", "retire": "retired",
        "restore": "restored", "adopt": "adopted"}


class UsageProblem(typer.BadParameter):
    """A usage error (exit 2, one line naming the help to read) in the words given, as
    a missing argument is reported when a command requires one."""

    def format_message(self) -> str:
        return self.message


def check_selection(names: list[str] | None, filter_expr: str | None) -> None:
    if names and filter_expr is not None:
        raise UsageProblem("Give schedule names or --filter EXPR, not both.")
    if not names and filter_expr is None:
        raise UsageProblem("Missing argument 'name' (or --filter EXPR).")


def is_single(names: list[str] | None, filter_expr: str | None, dry_run: bool) -> bool:
    """The one-name form that behaves exactly as it always did."""
    return names is not None and len(names) == 1 and filter_expr is None and not dry_run


def run_bulk(
    verb: str, names: list[str] | None, filter_expr: str | None, dry_run: bool, dsn: str | None,
    operator: str | None, as_json: bool, owner: str | None = None, options: dict[str, Any] | None = None,
) -> None:
    from awa_tui.filters import parse

    check_selection(names, filter_expr)
    with errors_as_lines():
        where = parse(filter_expr) if filter_expr is not None else None  # refused before any connection
        client = make_client(dsn, operator, read_only=dry_run)
        result = client.actions.bulk(verb, names, where=where, owner=owner, dry_run=dry_run, **(options or {}))
        emit(_as_data(result), as_json, lambda: _render(result))


def run_named(
    verb: str, names: list[str] | None, filter_expr: str | None, dry_run: bool, dsn: str | None,
    operator: str | None, as_json: bool, act: Callable[[ConsoleBackend, str], Any],
    detail: Callable[[Any], str] = lambda _: "", options: dict[str, Any] | None = None,
) -> None:
    """`cron VERB NAME...`: the single action on one name (its summary "VERB-ed NAME" and
    `detail` of the result), any other selection in bulk (with `options`, the bulk action's
    own keywords)."""
    if is_single(names, filter_expr, dry_run):
        name = names[0]  # type: ignore[index]
        run_action(dsn, operator, as_json, lambda client: act(client, name),
                   lambda result: f"{PAST[verb]} {name}{detail(result)}")
    else:
        run_bulk(verb, names, filter_expr, dry_run, dsn, operator, as_json, options=options)


def run_adopt_declared(owner: str, dry_run: bool, dsn: str | None, operator: str | None, as_json: bool) -> None:
    with errors_as_lines():
        result = make_client(dsn, operator, read_only=dry_run).actions.adopt_declared(owner, dry_run=dry_run)
        emit(_as_data(result), as_json, lambda: _render(result))


def _as_data(result: Any) -> dict[str, Any]:
    data = dataclasses.asdict(result)
    data["counts"] = {"selected": result.selected, "done": len(result.done), "skipped": len(result.skipped)}
    return data


def _render(result: Any) -> None:
    past = PAST[result.action]
    to = f" to owner {result.owner}" if result.owner else ""
    if result.selected == 0:
        say(f"nothing selected: no schedule to {result.action}{to}")
    elif result.dry_run:
        say(f"dry run: would {result.action} {len(result.done)} of {result.selected} selected schedule(s){to}")
    else:
        say(f"{past} {len(result.done)} of {result.selected} selected schedule(s){to} "
            f"in {result.batches} batch(es)")
    word = f"would {result.action}" if result.dry_run else past
    for name in result.done:
        job = result.job_ids.get(name)
        say(f"  {word} {name}" + (f": job {job}" if job is not None else ""))
    for skipped in result.skipped:
        say(f"  {'would skip' if result.dry_run else 'skipped'} {skipped.name}: {skipped.reason}")
    if result.dry_run:
        say("dry run: nothing changed")
