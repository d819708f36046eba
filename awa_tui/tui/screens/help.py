"""`?`: every key that can be used now, from the key map (awa_tui/tui/keymap.py), so
read-only mode and features missing from this build are left out here exactly as in the
footer; the audit log, dialogs, palette and mouse are listed too."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from awa_tui.tui.formatting import OUTCOME_LEGEND
from awa_tui.tui.keymap import ACTS, PANELS, SCOPES, Act, key_label

LEGEND = (
    "States are words, never colours alone: PAUSED, RETIRED, Q PAUSED (the schedule's queue is paused: "
    "fires continue, dispatch waits), STALE (data not refreshed; the database is not answering, or "
    "the refresh waits: for how long, and on whose lock), "
    "OVERDUE (a due fire nobody made, counted from the database clock), SILENT (a runtime that missed its "
    "heartbeats), LEADER, NOT LEADING (this console's engine refuses the leader lock), READ-ONLY, ATTENTION "
    "(on every panel: no live or a stalled leader, the leader's pass timed out on a lock and who held it, jobs of "
    "a kind no live runtime handles, the worst unhealthy schedule; a number beside it: that many problems). "
    "Times are UTC unless a zone is named. Every action asks first, "
    "names its target, database and operator, and is written to the audit log (l)."
)


# What each HEALTH word means (the leader judges it every 10 s in database time); the
# console runs on hosts without docs/, so the help says it.
HEALTH_MEANINGS = (
    ("ok", "fires on time and its jobs succeed"),
    ("LATE", "its first unfired due instant is older than its lateness bound (60 s unless set); the console "
             "also says LATE for a fire overdue past that bound while no leader judges"),
    ("FAILING", "its failed jobs in a row exceed max_consecutive_failures (none declared: its last job failed)"),
    ("MISSED", "its latest decided instant had no successful job within expect_success_within"),
    ("BROKEN", "the engine cannot evaluate its row (bad expression or zone): it fires nothing until repaired"),
    ("paused", "stopped by an operator (or by awa-autopause): never late"),
    ("retired", "a tombstone: never fires again until restored"),
    ("finished", "past its bounds (end_at, max_fires): nothing more fires"),
    ("-", "not judged yet: no leader has evaluated health"),
)


def health_table() -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True, style="bold")
    table.add_column()
    for word, meaning in HEALTH_MEANINGS:
        table.add_row(Text(word), Text(meaning))
    return table


def filters_table() -> Table:
    """Each list's `/` fields and flags, from the grammar itself (awa_tui/filters.py)."""
    from awa_tui.filters import GRAMMARS

    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True, style="bold")
    table.add_column()
    for panel, grammar in GRAMMARS.items():
        fields = ", ".join(f"{f}:" for f in grammar.fields)
        flags = f"; flags {', '.join(grammar.flags)}" if grammar.flags else ""
        table.add_row(Text(panel), Text(f"{fields}{flags}"))
    table.add_row(Text(""), Text("Terms are ANDed; -term negates; free text matches names (schedules: kinds, "
                                 'queues, owners too); "quoted text" is text, never a field or a flag; '
                                 "since:/until: take 2h or an ISO instant."))
    return table


def strip_legend_text(*, upstream: bool) -> str:
    """The schedules panel's LAST 20 INSTANTS, character by character (docs/keys.md)."""
    where = " (not in upstream Awa mode: no fire ledger)" if upstream else ""
    return (f"LAST 20 INSTANTS{where}: each of a schedule's last 20 due instants, oldest first: "
            f"{OUTCOME_LEGEND}; a backfilled instant shows its job's, manual triggers are left out.")


def help_table(allowed: Callable[[Act], bool], remapped: Mapping[str, str] | None = None) -> Table:
    """Every key of every place `allowed` keeps, as `remapped` (the config file's [keys]) has them."""
    remapped = remapped or {}
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True, style="bold")
    table.add_column()
    for scope, title in SCOPES:
        rows = [a for a in ACTS if a.scope == scope and allowed(a)]
        if scope == "app":
            panels = [a for a in rows if a.action.startswith("show_panel") and a.key.isdigit()]
            keys = f"1-{len(PANELS)}" if len(panels) == len(PANELS) else ",".join(a.key for a in panels)
            rows.insert(2, Act("app", keys, "", "", "panels: " + ", ".join(a.label for a in panels)))
            rows = [a for a in rows if not (a.action.startswith("show_panel") and a.key.isdigit())]
        for index, act in enumerate(rows):
            shown = key_label(remapped[act.id]) if act.id in remapped else act.key_label
            table.add_row(Text(title if index == 0 else "", style="bold"), Text(shown), Text(act.help))
        if rows:
            table.add_row("", "", "")
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "dismiss", "close"),
        Binding("question_mark", "dismiss", "close", key_display="?"),
        Binding("q", "dismiss", "close"),
    ]

    def __init__(self, allowed: Callable[[Act], bool], read_only: bool, features_note: str | None = None,
                 keys: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.allowed = allowed
        self.read_only = read_only
        self.features_note = features_note  # why some keys are missing (upstream Awa mode)
        self.keys = keys or {}  # the config file's [keys]: shown as the keys they are now

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            mode = " (READ-ONLY: no action can change anything)" if self.read_only else ""
            yield Static(Text(f"Keys{mode}", style="bold"))
            if self.features_note:
                yield Static(Text(self.features_note.capitalize() + "."), id="help-features")
            yield Static(help_table(self.allowed, self.keys))
            yield Static(Text("Filters (/)", style="bold"))
            yield Static(filters_table())
            yield Static(Text("\nHEALTH", style="bold"))
            yield Static(health_table())
            yield Static(Text(""))
            yield Static(Text(LEGEND))
            yield Static(Text(strip_legend_text(upstream=self.features_note is not None)))
            yield Static(Text("esc, ? or q closes this help", style="dim"))
