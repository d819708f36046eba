"""`:` then a panel name (k9s habit): prefixes are enough, tab completes."""

from __future__ import annotations

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


def resolve(text: str) -> str | None:
    text = text.strip().lower().lstrip(":")
    if text.isdigit() and 1 <= int(text) <= len(PANELS):
        return PANELS[int(text) - 1]
    matches = [t for t in TARGETS if t.startswith(text)] if text else []
    return matches[0] if len(matches) == 1 or (matches and matches[0] == text) else None


class JumpScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(id="jump"):
            yield Static(Text("Jump to: " + "  ".join(TARGETS)))
            yield Input(placeholder="panel name", suggester=SuggestFromList(TARGETS), id="jump-input")
            yield Static(id="jump-error")

    @on(Input.Submitted)
    def _go(self, event: Input.Submitted) -> None:
        target = resolve(event.value)
        if target is None:
            self.query_one("#jump-error", Static).update(Text(f"no panel matches {event.value!r}"))
            return
        self.dismiss(target)

    def action_cancel(self) -> None:
        self.dismiss(None)
