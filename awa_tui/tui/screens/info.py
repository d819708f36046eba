"""A read-only page over the panels: the full text of one row (a plan entry's reason and
the rows it would touch, a runtime's identity and last passes). Escape, q or enter close it."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class InfoScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "dismiss", "close"),
        Binding("q", "dismiss", "close", show=False),
        Binding("enter", "dismiss", "close", show=False),
    ]

    def __init__(self, title: str, body: RenderableType) -> None:
        super().__init__()
        self.heading = title
        self.body = body

    def compose(self) -> ComposeResult:
        # Callers escape database strings (printable) before building `body`.
        with VerticalScroll(id="info"):
            yield Static(Text(self.heading, style="bold"), id="info-title")
            yield Static(self.body, id="info-body")
            yield Static(Text("esc, q or enter closes", style="dim"))

    def on_mount(self) -> None:
        self.query_one("#info", VerticalScroll).focus()  # arrows and page keys scroll a long text
