"""`db grants`: the least-privilege role layout, or a team's role (--owner-role), printed or applied."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from awa_tui.cli.common import emit, errors_as_lines, require_dsn, say
from awa_tui.cli.core import db_app
from awa_tui.cli.options import DsnOpt, JsonOpt
from awa_tui.engine.actions import grants
from awa_tui.engine.core.errors import ValidationError
from awa_tui.printable import printable


@db_app.command("grants")
def db_grants(
    prefix: Annotated[
        str, typer.Option("--prefix", help="Role names: <prefix>owner, runtime, operator, readonly.")
    ] = grants.DEFAULT_PREFIX,
    apply: Annotated[
        bool, typer.Option("--apply", help="Run the SQL (as a superuser) instead of printing it.")
    ] = False,
    owner_role: Annotated[
        str | None, typer.Option("--owner-role", metavar="ROLE",
                                 help="A team's role instead: it sees and acts on the schedules of --owners only.")
    ] = None,
    owners: Annotated[
        str | None,
        typer.Option("--owners", metavar="OWNER[,OWNER]", help="With --owner-role: the owners it may act on."),
    ] = None,
    revoke: Annotated[
        bool, typer.Option("--revoke", help="With --owner-role: take every privilege on the schema from it.")
    ] = False,
    dsn: DsnOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The least-privilege role layout (owner, runtime, operator, read-only), or a team's role
    limited to some owners (--owner-role): prints its SQL, --apply runs it."""
    with errors_as_lines():
        if owner_role is not None or owners is not None or revoke:
            _owner_role(owner_role, owners, revoke, apply, dsn, as_json)
            return
        layout = grants.role_layout(prefix)
        if not apply:
            emit({"prefix": layout.prefix, "roles": list(layout.roles), "sql": layout.sql}, as_json,
                 lambda: sys.stdout.write(layout.sql))  # our own SQL: the prefix is checked
            return
        data = grants.apply_layout(require_dsn(dsn), layout)
        emit(data, as_json, lambda: say(
            f"applied the role layout: {', '.join(data['roles'])} ({data['statements']} statements)"))


def _owner_role(role: str | None, owners: str | None, revoke: bool, apply: bool, dsn: str | None,
                as_json: bool) -> None:
    if role is None:
        raise ValidationError("--owners and --revoke need --owner-role ROLE")
    if revoke and owners is not None:
        raise ValidationError("--revoke takes no --owners: it takes every owner from the role")
    if not revoke and owners is None:
        raise ValidationError("--owner-role needs --owners OWNER[,OWNER] (or --revoke)")
    spec = grants.owner_role(role, [] if owners is None else [o.strip() for o in owners.split(",")], revoke=revoke)
    if not apply:
        emit({"role": spec.role, "owners": list(spec.owners), "revoked": revoke, "sql": spec.sql}, as_json,
             lambda: sys.stdout.write(spec.sql))  # our own SQL: names checked, owners quoted
        return
    data = grants.apply_owner_role(require_dsn(dsn), spec)
    words = (f"revoked every privilege on the schema from {spec.role}" if revoke else
             f"{spec.role} may act on the schedules of {', '.join(printable(o) for o in spec.owners)} only")
    emit(data, as_json, lambda: say(f"{words} ({data['statements']} statements)"))
