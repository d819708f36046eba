"""A one-line bar said in the longest of its forms that fits the terminal's width.

A line that holds counts (a panel's title, an ATTENTION line) is given in several forms,
widest first, each dropping or shortening what matters least; the widget shows the first
form that fits its width, and the last one (cut with an ellipsis) when none does. Its
content stays the widest form (what the line says in full); the choice is made at each
render, so a resized terminal picks again.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import RenderResult
from textual.widgets import Static


def fitting(forms: Sequence[Text], width: int) -> Text:
    """The first of `forms` (widest first) within `width` cells; the last when none is."""
    return next((form for form in forms if form.cell_len <= width), forms[-1])


class FittedLine(Static):
    def __init__(self, content: Text | str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(content, id=id, classes=classes)
        self.forms: tuple[Text, ...] = ()

    def show(self, *forms: Text) -> None:
        """`forms`: widest first; the first is the content."""
        self.forms = forms
        self.update(forms[0])

    def render(self) -> RenderResult:
        width = self.content_size.width
        if len(self.forms) > 1 and width > 0:
            return fitting(self.forms, width)
        return super().render()
