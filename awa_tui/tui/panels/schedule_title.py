"""The schedules panel's title in forms for the terminal's width (a FittedLine shows the
first that fits).

Widest first, each form gives up what matters least: the hint at its end and beside the
selection, then the sort (the sorted column's header has its arrow), then the separators
between the health counts (one group, each count still with its word), then the state
counts from the end (RETIRED, then PAUSED: steady states, not faults). What the operator
set (the filter, its error, the selection) and the counts of faults are never given up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

SEP = " · "


@dataclass(frozen=True)
class TitleParts:
    head: Text  # "Schedules 8 of 8", the filter or its error, the selection
    aside: str  # beside the selection: " (esc clears)"
    states: Sequence[Text]  # "1 PAUSED", "1 RETIRED"
    faults: Sequence[Text]  # "1 OVERDUE", "1 FAILING": worst first
    sort: str  # "sort name ↑"
    hint: str  # "end of list loads more, G the last"


def title_forms(parts: TitleParts) -> tuple[Text, ...]:
    forms = [
        _line(parts, aside=True, states=len(parts.states), grouped=False, sort=True, hint=True),
        _line(parts, aside=False, states=len(parts.states), grouped=False, sort=True, hint=False),
        _line(parts, aside=False, states=len(parts.states), grouped=False, sort=False, hint=False),
        *(_line(parts, aside=False, states=kept, grouped=True, sort=False, hint=False)
          for kept in range(len(parts.states), -1, -1)),
    ]
    return tuple(form for i, form in enumerate(forms) if i == 0 or form != forms[i - 1])


def _line(parts: TitleParts, *, aside: bool, states: int, grouped: bool, sort: bool, hint: bool) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis", end="")
    text.append_text(parts.head)
    if aside:
        text.append(parts.aside)
    for state in parts.states[:states]:
        text.append(SEP)
        text.append_text(state)
    for index, fault in enumerate(parts.faults):
        text.append(" " if grouped and index else SEP)
        text.append_text(fault)
    if sort:
        text.append(SEP + parts.sort)
    if hint and parts.hint:
        text.append(SEP + parts.hint)
    return text
