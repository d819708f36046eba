"""The one-line bars under the header: which panel, and how fresh the data is.

Every state is a word (LEADER, READ-ONLY, STANDBY, STALE, ATTENTION), never a colour alone, so the
console reads the same with NO_COLOR or on a monochrome terminal.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.style import Style
from rich.text import Text
from textual.app import RenderResult
from textual.widgets import Static

from awa_tui.tui.actions import ALL_PANELS, PANELS
from awa_tui.tui.widgets.fitted import fitting


@dataclass
class Freshness:
    updated: str | None = None  # DB time (or injected clock) of the last good refresh
    interval: float = 2.0
    stale: bool = False
    stale_reason: str = ""
    leader: str | None = None  # "LEADER" / "FOLLOWER" when this process runs the engine
    read_only: bool = False
    attention: str | None = None  # what needs the operator on every panel (attention.py), e.g. no live leader
    attention_forms: tuple[str, ...] = ()  # the line in narrower forms, widest first (the first that fits shows)
    attention_count: int = 0  # how many problems the line holds (several: said in the badge)
    standby: str | None = None  # on a hot standby: which server and its replay lag (formatting.standby_text)


class StatusBar(Static):
    """Leadership, mode, last refresh time, STALE badge and the attention line, in the
    longest of its forms that fits the bar's width (chosen at each render: a resized
    terminal chooses again)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.state: Freshness | None = None

    def show(self, state: Freshness) -> None:
        self.state = replace(state)
        self.update(self._text(self.state, None))

    def render(self) -> RenderResult:
        width = self.content_size.width
        if self.state is None or not width:
            return super().render()
        return self._text(self.state, width)

    @staticmethod
    def _text(state: Freshness, width: int | None) -> Text:
        """The bar's two lines; `width` None: the widest forms."""
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        if state.leader:
            text.append(f" {state.leader} ", style="bold reverse")
            text.append(" ")
        if state.read_only:
            text.append(" READ-ONLY ", style="bold reverse")
            text.append(" ")
        if state.standby:
            text.append(" STANDBY ", style="bold reverse")
            text.append(f" {state.standby} · ")
        if state.stale:
            text.append(" STALE ", style="bold reverse red")
            # The reason first: a stuck refresh's counter and what it waits on (S75) must
            # survive the cut at 80 columns.
            text.append(f" {state.stale_reason} · last good data {state.updated or 'never'}")
        else:
            text.append(f"updated {state.updated or '…'}")
        text.append(f" · every {state.interval:g}s")
        if state.attention:
            count = f" {state.attention_count}" if state.attention_count > 1 else ""
            lines = []
            for said in (state.attention, *state.attention_forms):
                line = Text(no_wrap=True, overflow="ellipsis", end="")
                line.append(f" ATTENTION{count} ", style="bold reverse red")
                line.append(f" {said}")
                lines.append(line)
            text.append("\n")
            text.append_text(lines[0] if width is None else fitting(lines, width))
        return text


class PanelBar(Static):
    """`1 Schedules  2 Owners ...`: the active panel is bracketed (not only highlighted)."""

    def show(self, active: str, shown: tuple[str, ...] = PANELS) -> None:
        """`shown`: the panels this backend has (upstream Awa has no owners or plan); each
        keeps its number, which is its key."""
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        for index, name in enumerate(ALL_PANELS, start=1):
            if name not in shown or (name not in PANELS and name != active):
                continue  # a panel without a number shows while it is open, with `:` for its key
            label = f"{index} {name.capitalize()}" if name in PANELS else f":{name.capitalize()}"
            click = Style.from_meta({"@click": f"app.show_panel('{name}')"})  # a tab is clickable too
            if name == active:
                text.append(f"[{label}]", style=Style.parse("bold reverse") + click)
            else:
                text.append(f" {label} ", style=click)
            text.append(" ")
        self.update(text)
