"""The yes/no dialog every modal question shares: its buttons and cancel, in one place."""

from __future__ import annotations

from typing import Generic, TypeVar

from textual import on
from textual.screen import ModalScreen
from textual.widgets import Button

ResultT = TypeVar("ResultT")


class YesNoDialog(ModalScreen[ResultT | None], Generic[ResultT]):
    """A modal with #yes and #no buttons: a subclass says what confirming means
    (`action_confirm`); cancelling always dismisses with None."""

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
