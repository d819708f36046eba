"""The `awa-tui` command: the console by default, and scriptable subcommands (S38)."""

from __future__ import annotations

import sys

import typer

app = typer.Typer(
    name="awa-tui",
    help="A Postgres-only cron scheduler and its operator console.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def main() -> None:
    from awa_tui.cli import backfill, console, core, cron, grants, health, jobs, ledger, owners, queue  # noqa: F401  (register commands)
    from awa_tui.cli.common import add_dsn_file_option
    from awa_tui.printable import printable

    command = typer.main.get_command(app)
    add_dsn_file_option(command)
    try:
        code = command(standalone_mode=False)
    except typer.Abort:
        sys.stderr.write("error: interrupted\n")
        sys.exit(130)
    except typer.TyperException as exc:
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group: its help is the answer
            from typer import rich_utils

            rich_utils.rich_format_error(exc)  # type: ignore[arg-type]
        else:
            # A usage error is one line like every other error (S38), naming the help to read.
            message = " ".join(str(getattr(exc, "format_message", exc.__str__)()).split())
            hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
            sys.stderr.write(printable(f"error: {message}{hint}") + "\n")  # argv is echoed: escaped
        sys.exit(getattr(exc, "exit_code", 2))
    sys.exit(code if isinstance(code, int) else 0)
