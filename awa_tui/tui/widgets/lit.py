"""Cells a refresh changed, lit until the next refresh (k9s's habit).

Which cells: a refresh of the same view (same filter, sort and page) compares each row's
cells with the ones the table shows, by the rows' keys: a cell whose value differs is lit,
and every cell of a row the table did not have. The first paint, a filter, a sort or a
page load light nothing. A LiveCell compares by its data, not its text: a relative time
moving with the clock is no change.

How: reversed (a look, not a colour, so a monochrome terminal shows it too); a cell already
reversed (a PAUSED state, a selected name) is underlined and bold instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.style import Style
from rich.text import Text

from awa_tui.tui.widgets.live import LiveCell

LIT = Style(reverse=True)
LIT_ON_REVERSED = Style(bold=True, underline=True)


def changed(before: Sequence[Any], after: Sequence[Any]) -> frozenset[int]:
    """The indexes of the cells that differ (rows of the same columns)."""
    return frozenset(index for index, (old, new) in enumerate(zip(before, after, strict=True)) if old != new)


def lit_row(cells: tuple[Any, ...], columns: frozenset[int] | None) -> tuple[Any, ...]:
    """`cells` with those of `columns` lit (None: a new row, all of them)."""
    return tuple(lit(value) if columns is None or index in columns else value for index, value in enumerate(cells))


def lit(value: Any) -> Any:
    """The cell lit: a Text (Cell) restyled, a LiveCell wrapped; anything else as it is."""
    if isinstance(value, LiveCell):
        return LitLive(value)
    if isinstance(value, Text):
        return lit_text(value)
    return value


def lit_text(text: Text) -> Text:
    own = Style.parse(text.style) if isinstance(text.style, str) else text.style
    shown = type(text)(text.plain, style=own + (LIT_ON_REVERSED if own.reverse else LIT), justify=text.justify,
                       overflow=text.overflow, no_wrap=text.no_wrap, end=text.end, tab_size=text.tab_size)
    shown.spans = list(text.spans)
    return shown


class LitLive(LiveCell):
    """A LiveCell lit: its text formatted at render time as the cell's, then lit."""

    __slots__ = ("cell",)

    def __init__(self, cell: LiveCell) -> None:
        super().__init__(cell.value, cell.fmt, cell.clock, cell.style)
        self.cell = cell

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LitLive) and self.cell == other.cell

    def __hash__(self) -> int:
        return hash((LitLive, self.cell))

    @property
    def plain(self) -> str:
        return self.cell.plain

    def text(self) -> Text:
        return lit_text(self.cell.text())
