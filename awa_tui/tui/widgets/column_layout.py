"""Where a KeyedTable's columns go and how wide they are, from their content widths and
the terminal's width: a pure function, so a refresh can compare layouts instead of
re-measuring cells.

Every column stays in the table (left and right, the mouse and the scrollbar reach it;
the first column stays frozen). The columns that fit the terminal at their fitted widths
come first, chosen by `priority` (the highest number gives way first), in their own
order; the ones that do not follow them, in their own order, past the right edge. The
room the first screen leaves is given to its columns whose content was cut (the first
column, the name, first, then left to right), so a wide terminal shows whole names and
errors instead of blank cells. Wide mode gives every column its whole content.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class Spec(Protocol):
    @property
    def priority(self) -> int: ...

    def fit(self, content: int) -> int: ...

    def whole(self, content: int) -> int: ...


@dataclass(frozen=True)
class Layout:
    order: tuple[int, ...]  # column indexes, left to right
    widths: tuple[int, ...]  # by column index
    fitting: int  # how many of `order` fit the terminal's first screen (fitted widths)
    natural: bool  # `order` is the columns' own (every cell tuple as it is)


def fitting(specs: Sequence[Spec], widths: Sequence[int], width: int, padding: int) -> list[int]:
    """The columns that fit `width`: the highest priority numbers give way first (0 never)."""
    shown = list(range(len(specs)))
    needed = sum(widths[i] + padding for i in shown)
    while needed > width:
        droppable = [i for i in shown if specs[i].priority > 0]
        if not droppable:
            break
        dropped = max(droppable, key=lambda i: (specs[i].priority, i))
        shown.remove(dropped)
        needed -= widths[dropped] + padding
    return shown


def layout(specs: Sequence[Spec], content: Sequence[int], width: int, padding: int, wide: bool) -> Layout:
    """`content`: each column's widest cell; `width`: the terminal's (0: not known yet, all
    fit); `padding`: a column's cells beside its text."""
    fitted = [spec.fit(c) for spec, c in zip(specs, content, strict=True)]
    whole = [spec.whole(c) for spec, c in zip(specs, content, strict=True)]
    first = fitting(specs, fitted, width, padding) if width else list(range(len(specs)))
    rest = [i for i in range(len(specs)) if i not in first]
    if wide:
        widths = whole
    else:
        widths = list(fitted)
        spare = width - sum(fitted[i] + padding for i in first) if width else 0
        for i in first:  # in order: the first column (the name) first
            if spare <= 0:
                break
            grow = min(spare, whole[i] - widths[i])
            if grow > 0:
                widths[i] += grow
                spare -= grow
    order = tuple(first + rest)
    return Layout(order, tuple(widths), len(first), order == tuple(range(len(specs))))
