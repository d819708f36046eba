"""The panels screen: header, panel bar, status bar, the panels (six numbered, calendars by `:`), footer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, Header, Static

from awa_tui.tui.actions import ALL_PANELS
from awa_tui.tui.messages import PanelsResumed
from awa_tui.tui.panel_defaults import PanelDefaults
from awa_tui.tui.panels.base import Panel
from awa_tui.tui.panels.calendars import CalendarsPanel
from awa_tui.tui.panels.jobs import JobsPanel
from awa_tui.tui.panels.owners import OwnersPanel
from awa_tui.tui.panels.plan import PlanPanel
from awa_tui.tui.panels.queues import QueuesPanel
from awa_tui.tui.panels.runtimes import RuntimesPanel
from awa_tui.tui.panels.schedules import SchedulesPanel
from awa_tui.tui.widgets.status import PanelBar, StatusBar

if TYPE_CHECKING:
    from awa_tui.tui.app import ConsoleApp

MIN_WIDTH, MIN_HEIGHT = 64, 16


class MainScreen(Screen[None]):
    def __init__(self, page_size: int, panels: Mapping[str, PanelDefaults] | None = None) -> None:
        super().__init__()
        self.page_size = page_size
        self.panels = panels or {}

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield PanelBar(id="panel-bar")
        yield StatusBar(id="status-bar")
        with ContentSwitcher(initial="panel-schedules", id="panels"):
            for panel in (SchedulesPanel(self.page_size), OwnersPanel(), RuntimesPanel(), PlanPanel(), QueuesPanel(),
                          JobsPanel(), CalendarsPanel()):
                if panel.panel_id in self.panels:  # the config file's columns and sort
                    panel.take_defaults(self.panels[panel.panel_id])
                yield panel
        yield Static(id="too-small")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one(PanelBar).show("schedules", self._shown())
        self.panel("schedules").focus_main()

    def _shown(self) -> tuple[str, ...]:
        """The panels this console's backend has (upstream Awa: no owners, no plan)."""
        console: ConsoleApp = self.app  # type: ignore[assignment]
        return tuple(p for p in ALL_PANELS if console.panel_allowed(p))

    def panel(self, panel_id: str) -> Panel:
        return self.query_one(f"#panel-{panel_id}", Panel)

    def show_panel(self, panel_id: str) -> None:
        self.query_one(ContentSwitcher).current = f"panel-{panel_id}"
        self.query_one(PanelBar).show(panel_id, self._shown())
        self.panel(panel_id).focus_main()

    def on_resize(self, event: events.Resize) -> None:
        small = event.size.width < MIN_WIDTH or event.size.height < MIN_HEIGHT
        was_small = self.has_class("-too-small")
        self.set_class(small, "-too-small")
        if was_small and not small:
            # Hiding the panels dropped the focus, and with it every panel key: give it back.
            current = self.query_one(ContentSwitcher).current or "panel-schedules"
            self.call_after_refresh(self.panel(current.removeprefix("panel-")).focus_main)
        if small:
            self.query_one("#too-small", Static).update(Text(
                f"Terminal too small: {event.size.width}x{event.size.height}.\n"
                f"The console needs at least {MIN_WIDTH}x{MIN_HEIGHT} (80x24 recommended).\n"
                "Enlarge the window, or press q to quit.",
                justify="center",
            ))

    def on_screen_resume(self) -> None:
        # Data that arrived while a dialog or another screen was up is shown now, not under it.
        self.post_message(PanelsResumed())
