"""`awa-tui owner list|retire|restore`, `awa-tui plan`, and the owner lifecycle of one
schedule: `awa-tui cron retire|restore|adopt|transfer` (S38)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from awa_tui.cli import app, command_group
from awa_tui.cli.bulk import (
    DryRunOpt,
    FilterOpt,
    NamesArg,
    UsageProblem,
    run_adopt_declared,
    run_bulk,
    run_named,
)
from awa_tui.cli.common import emit, emit_table, errors_as_lines, fmt, make_client, plain, run_action, say
from awa_tui.cli.cron import NameArg, cron_app
from awa_tui.cli.options import DsnOpt, JsonOpt, OperatorOpt

if TYPE_CHECKING:
    from awa_tui.engine.read.models import OwnerChange, OwnerPlan

owner_app = command_group("owner", "Owners of schedules: authoritative declarations.")

OwnerArg = Annotated[str, typer.Argument(help="Owner name (e.g. billing).")]


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}s"


def _codes(blockers: list[dict[str, Any]]) -> str:
    return ", ".join(sorted({b["code"] for b in blockers})) or "-"


@owner_app.command("list")
def owner_list(dsn: DsnOpt = None, as_json: JsonOpt = False) -> None:
    """Every owner: fresh declarations, manifests, certificate, schedules, grace clock, blockers,
    and the team roles that may act on it (besides every operator)."""
    from awa_tui.engine.ownership.manifest import short_hash

    with errors_as_lines():
        owners = make_client(dsn, read_only=True).reads.list_owners()

        def render() -> None:
            rows = [
                {
                    **plain(o),
                    "manifests": ", ".join(short_hash(h) for h in o.manifest_hashes) or "-",
                    "certificate": short_hash(o.certificate_hash),
                    "grace left": _seconds(o.grace_remaining_s),
                    "blocked by": _codes(o.blockers),
                    "team roles": ", ".join(o.roles) or "-",
                }
                for o in owners
            ]
            emit_table(rows, ["owner", "fresh_runtimes", "manifests", "certificate", "schedules_owned",
                              "schedules_retired", "agreement_since", "grace left", "blocked by", "team roles"])

        emit(owners, as_json, render)


def _owner_summary(past: str, owner: str) -> Callable[[OwnerChange], str]:
    return lambda result: f"{past} {result.count} schedule(s) of owner {owner}: {', '.join(result.names)}"


@owner_app.command("retire")
def owner_retire(owner: OwnerArg, dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False) -> None:
    """Retire every active schedule of an owner; no live runtime needed."""
    run_action(dsn, operator, as_json, lambda client: client.actions.retire_owner(owner), _owner_summary("retired",
                                                                                                         owner))


@owner_app.command("restore")
def owner_restore(owner: OwnerArg, dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False) -> None:
    """Restore every retired schedule of an owner, each from now: nothing replays."""
    run_action(dsn, operator, as_json, lambda client: client.actions.restore_owner(owner),
               _owner_summary("restored", owner))


@app.command("plan")
def plan(
    dsn: DsnOpt = None,
    as_json: JsonOpt = False,
    owner: Annotated[str | None, typer.Option("--owner", help="Only this owner.")] = None,
) -> None:
    """Preview what reconciliation would do, per owner, and what blocks it. Changes nothing."""
    with errors_as_lines():
        plans = make_client(dsn, read_only=True).reads.plan(owner)
        emit(plans, as_json, lambda: _render_plans(plans))


def _render_plans(plans: list[OwnerPlan]) -> None:
    from awa_tui.engine.ownership.manifest import short_hash

    if not plans:
        say("no owners: no runtime declares ownership and no schedule is owned")
    for p in plans:
        hashes = ", ".join(short_hash(h) for h in p.manifest_hashes) or "none"
        say(f"owner {p.owner}: {p.fresh_declarations} fresh declaration(s), manifest {hashes}")
        for kind, will, entries in p.changes():
            if entries:
                state = "" if will else " (blocked)"
                say(f"  {kind}{state}: {', '.join(e['name'] for e in entries)}")
        for update in p.updates:
            for column, change in update["changes"].items():
                say(f"    {update['name']}.{column}: {fmt(change['from'])} -> {fmt(change['to'])}")
        for blocker in p.blockers:
            say(f"  blocked [{blocker['code']}]: {blocker['message']}")
        if not (p.inserts or p.updates or p.retirements or p.blockers):
            say("  in sync: nothing to do")


@cron_app.command("retire")
def cron_retire(names: NamesArg = None, filter_expr: FilterOpt = None, dry_run: DryRunOpt = False,
                dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False) -> None:
    """Retire a schedule: a tombstone that never fires, distinct from pause; several or --filter in bulk."""
    run_named("retire", names, filter_expr, dry_run, dsn, operator, as_json, lambda client,
              name: client.actions.retire(name))


@cron_app.command("restore")
def cron_restore(names: NamesArg = None, filter_expr: FilterOpt = None, dry_run: DryRunOpt = False,
                 dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False) -> None:
    """Restore a retired schedule from now; nothing from the retired period replays; several or --filter
    in bulk."""
    run_named("restore", names, filter_expr, dry_run, dsn, operator, as_json,
              lambda client, name: client.actions.restore(name))


@cron_app.command("adopt")
def cron_adopt(
    name: Annotated[str | None, typer.Argument(help="Schedule name.", show_default=False)] = None,
    owner: Annotated[str | None, typer.Argument(help="Owner name (e.g. billing).", show_default=False)] = None,
    declared_by: Annotated[str | None, typer.Option("--declared-by", metavar="OWNER", help=(
        "Adopt for OWNER every unowned schedule its running authoritative runtimes declare."))] = None,
    dry_run: DryRunOpt = False, dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False,
) -> None:
    """Give an unowned schedule to an owner, or every one an owner declares (--declared-by)."""
    if declared_by is not None:
        if name is not None:
            raise UsageProblem("Give NAME OWNER or --declared-by OWNER, not both.")
        run_adopt_declared(declared_by, dry_run, dsn, operator, as_json)
    elif name is None or owner is None:
        raise UsageProblem(f"Missing argument '{'owner' if name else 'name'}' (or --declared-by OWNER).")
    elif dry_run:
        run_bulk("adopt", [name], None, True, dsn, operator, as_json, owner=owner)
    else:
        run_action(dsn, operator, as_json, lambda client: client.actions.adopt(name, owner),
                   lambda _: f"adopted {name} for owner {owner}")


@cron_app.command("transfer")
def cron_transfer(name: NameArg, owner: OwnerArg, dsn: DsnOpt = None, operator: OperatorOpt = None,
                  as_json: JsonOpt = False) -> None:
    """Move an owned schedule to another owner."""
    run_action(dsn, operator, as_json, lambda client: client.actions.transfer(name, owner),
               lambda _: f"transferred {name} to owner {owner}")
