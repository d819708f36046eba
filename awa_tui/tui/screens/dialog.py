"""The yes/no dialog every modal question shares: its buttons and cancel, in one place."""

from __future__ import annotations

from typing import ClassVar, Generic, TypeVar

from textual import on
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Button

ResultT = TypeVar("ResultT")


class YesNoDialog(ModalScreen[ResultT | None], Generic[ResultT]):
    """A modal with #yes and #no buttons: a subclass says what confirming means
    (`action_confirm`); cancelling always dismisses with None.

    Tab and shift+tab move between its fields when the app reads the key (priority
    bindings), not when the key has bubbled up from the field: Textual's own tab moves
    focus only after the field had the key, and keys typed right after it (a paste, a
    fast typist over SSH) landed in the field tab was leaving."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "next_field", show=False, priority=True),
        Binding("shift+tab", "previous_field", show=False, priority=True),
    ]

    def action_next_field(self) -> None:
        self.focus_next()  # Screen.set_focus: the next key already goes to the new field

    def action_previous_field(self) -> None:
        self.focus_previous()

    def action_confirm(self) -> None:
        raise NotImplementedError

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#yes")
    def _yes(self) -> None:
        self.action_confirm()

    @on(Button.Pressed, "#no")
    def _no(self) -> None:
        self.action_cancel()
