"""Command palette entries (`noun: verb`), from the action registry; mutations are absent
in read-only mode, like everywhere else."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.app import SystemCommand
from textual.command import DiscoveryHit, Hit, Hits, Provider

from awa_tui.tui.actions import ACTS, Act

if TYPE_CHECKING:
    from awa_tui.tui.app import ConsoleApp


class ConsoleCommands(Provider):
    @property
    def console(self) -> ConsoleApp:
        return self.app  # type: ignore[return-value]

    def _commands(self) -> list[tuple[str, str, Callable[[], Any]]]:
        return [
            (act.palette, act.help, partial(self.console.run_palette_act, act))
            for act in ACTS
            if act.palette and self.console.palette_allowed(act)
        ]

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)


def palette_names(allowed: Callable[[Act], bool]) -> list[str]:
    return [act.palette for act in ACTS if act.palette and allowed(act)]


# Textual's own palette entries that write to disk: a read-only console writes nothing.
WRITING_SYSTEM_COMMANDS = frozenset({"Screenshot"})


def system_commands(commands: Iterable[SystemCommand], read_only: bool) -> Iterator[SystemCommand]:
    for command in commands:
        if not (read_only and command.title in WRITING_SYSTEM_COMMANDS):
            yield command
