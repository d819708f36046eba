"""The `awa-tui` command: the console by default, and scriptable subcommands (S38).

Importing this package imports typer and nothing of the engine: `main` builds the command
tree lazily (cli/lazy.py), importing only the modules of the command being run.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from awa_tui.cli.lazy import LazyGroup

app = typer.Typer(
    name="awa-tui",
    help="A Postgres-only cron scheduler and its operator console.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    # -h as well as --help, at every level (click hands the names down to each subcommand).
    context_settings={"help_option_names": ["-h", "--help"]},
)

# Every top-level command, in the order `awa-tui --help` lists them, with the modules that
# register it (a group: each module adding subcommands to it; the first declares it).
# tests/cli/test_cli_lazy.py checks this against the tree Typer builds from every module.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "check": ("health",),
    "run": ("core",),
    "migrate": ("core",),
    "audit": ("core",),
    "plan": ("owners",),
    "cron": ("cron", "backfill", "ledger", "owners", "made"),
    "db": ("core", "grants"),
    "runtime": ("core",),
    "jobs": ("jobs", "prune"),
    "owner": ("owners",),
    "queue": ("queue",),
    "calendar": ("calendars",),
    "alerts": ("alerts",),
    "import": ("imports",),
    "forward": ("forward",),
}



def command_group(name: str, help_text: str) -> typer.Typer:
    """A top-level command group (`awa-tui NAME ...`) with its help; bare, it shows the help."""
    group = typer.Typer(help=help_text, no_args_is_help=True)
    app.add_typer(group, name=name)
    return group


def load_commands(name: str | None) -> None:
    """Import the modules registering top-level command `name` (None: the first module of
    each, enough to list every command with its help)."""
    modules = [mods[0] for mods in COMMAND_MODULES.values()] if name is None else COMMAND_MODULES.get(name, ())
    for module in modules:
        importlib.import_module(f"awa_tui.cli.{module}")


def command_tree() -> LazyGroup:
    """The click command `awa-tui` runs (its subcommands built on demand); tests parse a
    deployment's argv with it (tests/deploy)."""
    from typer.models import TyperInfo

    from awa_tui.cli import console  # noqa: F401  (the top level's own options: the console's)
    from awa_tui.cli.common import prepare_command
    from awa_tui.cli.lazy import build_lazy

    command = build_lazy(TyperInfo(app), load_commands, prepare_command)
    command.lazy_order = tuple(COMMAND_MODULES)
    prepare_command(command, "")
    return command


def main() -> None:
    from awa_tui.printable import printable

    command = command_tree()
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
