"""`:` then a panel name (k9s habit): prefixes are enough, tab completes, and k9s-style
short names and plurals work too (`:sc`, `:cron`, `:rt`, `:q`, `:log`...)."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Static

from awa_tui.tui.actions import ALL_PANELS, PANELS

TARGETS = (*ALL_PANELS, "audit")

# Other names of the targets, matched whole (a prefix of a target name already matches it).
ALIASES: dict[str, str] = {
    "sc": "schedules", "schedule": "schedules", "cron": "schedules", "crons": "schedules",
    "own": "owners", "owner": "owners",
    "rt": "runtimes", "runtime": "runtimes",
    "pl": "plan", "plans": "plan",
    "q": "queues", "queue": "queues",
    "job": "jobs",
    "cal": "calendars", "calendar": "calendars",
    "log": "audit", "logs": "audit",
}


def resolve(text: str, aliases: Mapping[str, str] = ALIASES) -> str | None:
    """The target `text` names: a panel number, a target or an alias named whole, else the
    one target it is a prefix of; None when it names none or more than one."""
    text = text.strip().lower().lstrip(":")
    if text.isdigit() and 1 <= int(text) <= len(PANELS):
        return PANELS[int(text) - 1]
    if text in TARGETS:
        return text
    if text in aliases:
        return aliases[text]
    matches = [t for t in TARGETS if t.startswith(text)] if text else []
    return matches[0] if len(matches) == 1 else None


def target_list(aliases: Mapping[str, str] = ALIASES) -> str:
    """'schedules (sc, schedule, cron, crons)  owners (own, owner) ...': the jump screen's list."""
    parts = []
    for target in TARGETS:
        names = [a for a, t in aliases.items() if t == target]
        parts.append(f"{target} ({', '.join(names)})" if names else target)
    return "  ".join(parts)


class JumpScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, aliases: Mapping[str, str] = ALIASES) -> None:
        super().__init__()
        self.aliases = aliases

    def compose(self) -> ComposeResult:
        with Vertical(id="jump"):
            yield Static(Text("Jump to: " + target_list(self.aliases)), id="jump-targets")
            yield Input(placeholder="panel name", suggester=SuggestFromList((*TARGETS, *self.aliases)),
                        id="jump-input")
            yield Static(id="jump-error")

    @on(Input.Submitted)
    def _go(self, event: Input.Submitted) -> None:
        target = resolve(event.value, self.aliases)
        if target is None:
            self.query_one("#jump-error", Static).update(Text(f"no panel matches {event.value!r}"))
            return
        self.dismiss(target)

    def action_cancel(self) -> None:
        self.dismiss(None)
