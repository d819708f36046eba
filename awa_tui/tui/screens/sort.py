"""`o`: pick the column a list is sorted by (enter), or esc to keep the current one."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option


class SortScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "dismiss", "cancel")]

    def __init__(self, options: list[tuple[str, str]], current: str | None) -> None:
        super().__init__()
        self.options = options  # (column key, header label)
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="sort"):
            yield Static("Sort by (enter picks; the same column again reverses; esc keeps)", id="sort-title")
            yield OptionList(*(Option(label + ("  (current)" if key == self.current else ""), id=key)
                               for key, label in self.options), id="sort-options")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        keys = [key for key, _ in self.options]
        options.highlighted = keys.index(self.current) if self.current in keys else 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
