"""A screen that stays live: it reads its data again at the console's refresh rate while
it is the screen shown, and routes keys through the app's key rules like a panel."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import events
from textual.screen import Screen

from awa_tui.tui.messages import MutationKeyPressed

if TYPE_CHECKING:
    from awa_tui.tui.app import ConsoleApp


class LiveScreen(Screen[None]):
    """Subclasses name their key context (`CONTEXT`: the keymap's, which the app's
    read-only and upstream rules judge), the widget focused when shown (`FOCUS`, a
    selector), and read their data in `action_reload`, setting `loading` until it lands."""

    CONTEXT: ClassVar[str]
    FOCUS: ClassVar[str]

    def __init__(self, interval: float = 2.0) -> None:
        super().__init__()
        self.interval = interval  # the console's refresh interval when opened
        self.loading = False  # a read is on the reader thread: the timer does not queue another

    @property
    def console(self) -> ConsoleApp:
        return self.app  # type: ignore[return-value]

    def on_mount(self) -> None:
        self.query_one(self.FOCUS).focus()
        self.action_reload()
        # Live like the panels: relative times and states move at the console's refresh rate.
        self.set_interval(self.interval, self._tick, name=f"{self.CONTEXT}-refresh")

    def _tick(self) -> None:
        if not self.loading and self.is_current:
            self.action_reload()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.console.action_allowed(self.CONTEXT, action)

    def on_key(self, event: events.Key) -> None:
        self.post_message(MutationKeyPressed(self.CONTEXT, event.key))

    def action_reload(self) -> None:
        raise NotImplementedError
