"""`?`: every key that can be used now, from the key map (awa_tui/tui/keymap.py), so
read-only mode and features missing from this build are left out here exactly as in the
footer; the audit log, dialogs, palette and mouse are listed too."""

from __future__ import annotations

from collections.abc import Callable

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from awa_tui.tui.formatting import OUTCOME_LEGEND
from awa_tui.tui.keymap import ACTS, PANELS, SCOPES, Act

LEGEND = (
    "States are words, never colours alone: PAUSED, RETIRED, Q PAUSED (the schedule's queue is paused: "
    "fires continue, dispatch waits), STALE (data not refreshed; the database is not answering), "
    "LEADER, READ-ONLY, ATTENTION. Times are UTC unless a zone is named. Every action asks first, "
    "names its target, database and operator, and is written to the audit log (l)."
)


def strip_legend_text(*, upstream: bool) -> str:
    """The schedules panel's LAST 20 INSTANTS, character by character (docs/keys.md)."""
    where = " (not in upstream Awa mode: no fire ledger)" if upstream else ""
    return (f"LAST 20 INSTANTS{where}: each of a schedule's last 20 due instants, oldest first: "
            f"{OUTCOME_LEGEND}; a backfilled instant shows its job's, manual triggers are left out.")


def help_table(allowed: Callable[[Act], bool]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True, style="bold")
    table.add_column()
    for scope, title in SCOPES:
        rows = [a for a in ACTS if a.scope == scope and allowed(a)]
        if scope == "app":
            panels = [a for a in rows if a.action.startswith("show_panel")]
            keys = f"1-{len(PANELS)}" if len(panels) == len(PANELS) else ",".join(a.key for a in panels)
            rows.insert(2, Act("app", keys, "", "", "panels: " + ", ".join(a.label for a in panels)))
            rows = [a for a in rows if not a.action.startswith("show_panel")]
        for index, act in enumerate(rows):
            table.add_row(Text(title if index == 0 else "", style="bold"), Text(act.key_label), Text(act.help))
        if rows:
            table.add_row("", "", "")
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "dismiss", "close"),
        Binding("question_mark", "dismiss", "close", key_display="?"),
        Binding("q", "dismiss", "close"),
    ]

    def __init__(self, allowed: Callable[[Act], bool], read_only: bool, features_note: str | None = None) -> None:
        super().__init__()
        self.allowed = allowed
        self.read_only = read_only
        self.features_note = features_note  # why some keys are missing (upstream Awa mode)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            mode = " (READ-ONLY: no action can change anything)" if self.read_only else ""
            yield Static(Text(f"Keys{mode}", style="bold"))
            if self.features_note:
                yield Static(Text(self.features_note.capitalize() + "."), id="help-features")
            yield Static(help_table(self.allowed))
            yield Static(Text(LEGEND))
            yield Static(Text(strip_legend_text(upstream=self.features_note is not None)))
            yield Static(Text("esc, ? or q closes this help", style="dim"))
