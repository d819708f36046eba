"""Cells whose text depends on `now` (relative times: "in 4m12s", "3m ago").

Re-formatting every relative time of every row at each refresh made a refresh cost
O(rows) cell updates. A LiveCell instead keeps the raw value and formats it when it is
rendered, and DataTable renders only the rows on screen: a refresh that changed no data
touches no cell, and only the visible rows are re-formatted (KeyedTable.tick).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text


class Clock:
    """The `now` live cells read; the panel moves it forward at each refresh."""

    __slots__ = ("now",)

    def __init__(self, now: datetime | None = None) -> None:
        self.now = now


class LiveCell:
    __slots__ = ("clock", "fmt", "style", "value")

    def __init__(self, value: Any, fmt: Callable[[Any, datetime], str], clock: Clock, style: str = "") -> None:
        self.value = value
        self.fmt = fmt
        self.clock = clock
        self.style = style

    def __eq__(self, other: object) -> bool:
        # Equal when the data is: the clock moving is not a change of the cell. Of the same
        # kind only: a lit cell (widgets/lit.py) is not its plain self.
        return (
            type(other) is type(self)
            and self.fmt is other.fmt
            and self.value == other.value
            and self.style == other.style
        )

    def __hash__(self) -> int:
        return hash((self.fmt, self.value, self.style))

    @property
    def plain(self) -> str:
        return self.fmt(self.value, self.clock.now) if self.clock.now else ""

    def text(self) -> Text:
        return Text(self.plain, style=self.style, no_wrap=True, overflow="ellipsis", end="")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.text()

    # No __rich_measure__: columns have fixed widths, and a renderable without one is
    # measured at DataTable's default without formatting it (or building console options).
