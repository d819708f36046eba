"""`db grants`: the least-privilege role layout, printed or applied."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from awa_tui.cli.common import emit, errors_as_lines, require_dsn, say
from awa_tui.cli.core import db_app
from awa_tui.cli.options import DsnOpt, JsonOpt
from awa_tui.engine.actions import grants


@db_app.command("grants")
def db_grants(
    prefix: Annotated[
        str, typer.Option("--prefix", help="Role names: <prefix>owner, runtime, operator, readonly.")
    ] = grants.DEFAULT_PREFIX,
    apply: Annotated[
        bool, typer.Option("--apply", help="Run the SQL (as a superuser) instead of printing it.")
    ] = False,
    dsn: DsnOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The least-privilege role layout (owner, runtime, operator, read-only): prints its SQL."""
    with errors_as_lines():
        layout = grants.role_layout(prefix)
        if not apply:
            emit({"prefix": layout.prefix, "roles": list(layout.roles), "sql": layout.sql}, as_json,
                 lambda: sys.stdout.write(layout.sql))  # our own SQL: the prefix is checked
            return
        data = grants.apply_layout(require_dsn(dsn), layout)
        emit(data, as_json, lambda: say(
            f"applied the role layout: {', '.join(data['roles'])} ({data['statements']} statements)"))
