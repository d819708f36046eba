"""The `awa-tui` command: the console by default, and scriptable subcommands (S38)."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="awa-tui",
    help="A Postgres-only cron scheduler and its operator console.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def main() -> None:
    from awa_tui.cli import console, core, cron, queue  # noqa: F401  (register commands)

    app()
