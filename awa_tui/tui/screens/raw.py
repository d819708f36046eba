"""`y` on any row: its read model in full, one `name: value` a line (nested values
indented, long ones wrapped, never cut), from the row the list already holds: no read of
its own. Escape or q closes; c copies the lines."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from awa_tui.printable import printable
from awa_tui.tui import actions
from awa_tui.tui.formatting import raw_lines
from awa_tui.tui.messages import CopyRequested


class RawScreen(ModalScreen[None]):
    BINDINGS = actions.bindings("raw")

    def __init__(self, what: str, model: Any) -> None:
        super().__init__()
        self.heading = f"Raw: {printable(what)}"
        self.lines = raw_lines(model)  # escaped, secrets hidden (formatting.raw_lines)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="raw"):
            yield Static(Text(self.heading, style="bold"), id="raw-title")
            yield Static(self.body(), id="raw-body")
            yield Static(Text("esc closes · c copies · arrows and page keys scroll", style="dim"))

    def body(self) -> RenderableType:
        """One renderable a line, indented as its nesting: a long value wraps (folded at the
        edge, never cut) under its own indent, so the nesting still reads."""
        parts = []
        for line in self.lines:
            rest = line.lstrip(" ")
            parts.append(Padding(Text(rest, overflow="fold"), (0, 0, 0, len(line) - len(rest))))
        return Group(*parts)

    def on_mount(self) -> None:
        self.query_one("#raw", VerticalScroll).focus()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_copy(self) -> None:
        self.post_message(CopyRequested("the raw row", self.text))
