"""`/` on a panel that lists things: an Input that parses the filter grammar as it is
typed. A valid filter is kept in `where` (and a refresh asked for); an invalid one is one
line in `error` and the last valid filter stays in force. Esc clears it."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.actions import SkipAction
from textual.message import Message
from textual.widgets import Input

from awa_tui.filters import Filter, FilterError, parse
from awa_tui.printable import printable


class FilterBar(Input):
    class FilterChanged(Message):
        """The filter in force changed: the owner re-reads its rows (`soon`: typing)."""

        def __init__(self, soon: bool) -> None:
            super().__init__()
            self.soon = soon

    def __init__(self, panel: str, placeholder: str, **kwargs: object) -> None:
        super().__init__(placeholder=placeholder, classes="filter-bar", **kwargs)  # type: ignore[arg-type]
        self.panel = panel
        self.where: Filter | None = None
        self.error: str | None = None

    def on_mount(self) -> None:
        self.display = False

    def open(self) -> None:
        take_keys(self)

    def on_input_changed(self, event: Input.Changed) -> None:
        text = event.value.strip()
        try:
            where = parse(text or None, self.panel)
        except FilterError as exc:
            self.error = str(exc)
        else:
            self.where, self.error = where or None, None
        event.stop()  # the Input's own Changed stops here; its owner hears FilterBar.FilterChanged
        self.post_message(self.FilterChanged(soon=True))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.error:
            return  # stay: the title says what is wrong
        self.display = bool(self.where)
        self.screen.focus_next()

    def clear_filter(self) -> None:
        self.value = ""
        self.where, self.error = None, None
        self.display = False
        self.post_message(self.FilterChanged(soon=False))

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.stop()
            self.clear_filter()
            self.screen.focus_next()

    def note(self) -> Text:
        """What the title line says about the filter: the error, the active filter, or nothing."""
        text = Text()
        if self.error:
            text.append(" · ")
            text.append(printable(self.error), style="bold reverse")
        elif self.where:
            text.append(" · filter: ")
            text.append(printable(str(self.where)), style="bold")
        return text


def take_keys(box: Input) -> None:
    """Show `box` and give it the keyboard NOW, for `/`'s binding (a priority one, run when
    the app reads the key). Widget.focus() moves focus only after the queue drains, and
    the app hands each key to whatever has focus when it reads it: keys typed right after
    `/` (a paste, a burst over a slow link) went to the table and fired its action keys.
    A `/` typed into the box itself is text: the binding steps aside (SkipAction)."""
    if box.screen.focused is box:  # not has_focus: that is set when the Focus event is handled
        raise SkipAction()
    box.display = True
    box.screen.set_focus(box)
