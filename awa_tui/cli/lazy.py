"""The command tree built on demand: an operator's command pays only for itself.

Typer builds the click object of every command of an app at once (each parameter's
annotation resolved, each option made), and registering them means importing every
command module. `awa-tui cron show NAME` needs one of the ~50: `build` makes a group
whose subcommands are made the first time click asks for one by name, from the same
registrations Typer would use (typer's own builders, so help, options and errors are the
ones `typer.main.get_command(app)` would make: tests/cli pin them).

- Running a command: only the modules that register it are imported (`Loader`), and only
  its own click object, and its group's, are built.
- Help of a group lists its subcommands by name and help text: a leaf is summarised
  (name, help, hidden, deprecated, panel: what the listing shows), never built.
- A name that is not a command: every name is known, for "Did you mean ...?".
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import Any

import typer
import typer.core
import typer.main
from typer.models import CommandInfo, TyperInfo

# What to do with each command click has built: given it and its path ("cron show").
Prepare = Callable[[Any, str], None]
# Import the modules registering `name` on the group (None: every subcommand, to list them).
Loader = Callable[[str | None], None]


def command_name(info: CommandInfo) -> str:
    """The name Typer gives a registered command."""
    assert info.callback is not None
    return info.name or typer.main.get_command_name(info.callback.__name__)


class LazyGroup(typer.core.TyperGroup):
    """A TyperGroup whose subcommands are built when first asked for by name.

    Made only by `build_lazy`; `typer.main.get_command(app)` still builds the whole tree
    eagerly (a LazyGroup with no source is a plain TyperGroup)."""

    lazy_source: typer.Typer | None = None
    lazy_load: Loader
    lazy_prepare: Prepare
    lazy_path: str = ""
    lazy_listing: bool = False
    # The order of the help listing when registration order is not it (the top level: its
    # modules are imported in the order commands are run, not listed).
    lazy_order: tuple[str, ...] = ()

    def _infos(self) -> dict[str, CommandInfo | TyperInfo]:
        assert self.lazy_source is not None
        found: dict[str, CommandInfo | TyperInfo] = {}
        for info in self.lazy_source.registered_commands:
            found.setdefault(command_name(info), info)
        for group in self.lazy_source.registered_groups:
            if isinstance(group.name, str):
                found.setdefault(group.name, group)
        rank = {name: i for i, name in enumerate(self.lazy_order)}
        return dict(sorted(found.items(), key=lambda item: rank.get(item[0], len(rank))))

    def list_commands(self, ctx: Any) -> list[str]:
        if self.lazy_source is None:
            return super().list_commands(ctx)
        self.lazy_load(None)
        return list(self._infos())

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if self.lazy_source is None or cmd_name in self.commands:
            return super().get_command(ctx, cmd_name)
        # Listing needs only what declares each name; running it, every module adding to it.
        self.lazy_load(None if self.lazy_listing else cmd_name)
        info = self._infos().get(cmd_name)
        if info is None:
            return None
        if self.lazy_listing:
            # A help listing reads only name, help and flags: a leaf is summarised, a group
            # is made bare but not kept (its other modules are not imported yet).
            return _summary(info, cmd_name) if isinstance(info, CommandInfo) else self._build(info)
        command = self._build(info)
        self.commands[cmd_name] = command
        return command

    def _build(self, info: CommandInfo | TyperInfo) -> Any:
        source = self.lazy_source
        assert source is not None
        if isinstance(info, CommandInfo):
            command = typer.main.get_command_from_info(
                info, pretty_exceptions_short=source.pretty_exceptions_short,
                rich_markup_mode=source.rich_markup_mode)
        else:
            assert info.typer_instance is not None
            command = build_lazy(info, lambda _name: None, self.lazy_prepare, self.lazy_path, source)
        self.lazy_prepare(command, f"{self.lazy_path} {command.name}".strip())
        return command

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if self.lazy_source is not None and args and self.get_command(ctx, args[0]) is None:
            # Not a command: the suggestions are drawn from every name.
            for name in self.list_commands(ctx):
                self.commands.setdefault(name, typer.core.TyperCommand(name=name))
        return super().resolve_command(ctx, args)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self.lazy_listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.lazy_listing = False


def _summary(info: CommandInfo, name: str) -> typer.core.TyperCommand:
    """What a group's help shows of a subcommand, with its help text worked out as Typer does."""
    text = inspect.getdoc(info.callback) if info.help is None else inspect.cleandoc(info.help)
    return typer.core.TyperCommand(name=name, help=text, short_help=info.short_help, hidden=info.hidden,
                                   deprecated=info.deprecated, rich_help_panel=info.rich_help_panel)


def build_lazy(info: TyperInfo, load: Loader, prepare: Prepare, path: str = "",
               parent: typer.Typer | None = None) -> LazyGroup:
    """The group `info` describes, with its own options and callback but no subcommand built
    yet. `parent` is the app it was added to (its markup and exception settings apply)."""
    source = info.typer_instance
    assert isinstance(source, typer.Typer)
    bare = copy.copy(source)
    bare.registered_commands, bare.registered_groups = [], []
    bare.info = copy.copy(source.info)
    bare.info.cls = LazyGroup
    bare_info = copy.copy(info)
    bare_info.typer_instance = bare
    settings = parent or source
    group = typer.main.get_group_from_info(
        bare_info, pretty_exceptions_short=settings.pretty_exceptions_short,
        rich_markup_mode=settings.rich_markup_mode, suggest_commands=settings.suggest_commands)
    assert isinstance(group, LazyGroup)
    group.lazy_source, group.lazy_load, group.lazy_prepare = source, load, prepare
    group.lazy_path = f"{path} {group.name}".strip() if parent is not None else ""
    return group
