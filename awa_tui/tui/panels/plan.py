"""Plan: what reconciliation would do now (S34), per owner: inserts, definition updates,
retirements, conflicts, and every reason that blocks them. A preview: it changes
nothing, and the leader's apply re-checks everything under the protocol lock.

Reads `ConsoleBackend.plan()`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from awa_tui.engine.read.models import OwnerPlan
from awa_tui.printable import printable_row
from awa_tui.tui import actions
from awa_tui.tui.messages import InfoRequested
from awa_tui.tui.panels.base import Panel, Work
from awa_tui.tui.widgets.keyed_table import Column, cell

COLUMNS = (
    Column("key", "#", 3),
    Column("owner", "OWNER", 14),
    Column("change", "CHANGE", 8),
    Column("now", "NOW?", 4),
    Column("schedule", "SCHEDULE", 26),
    Column("detail", "DETAIL", 70),
)

Line = tuple[str, str, str, str, str]  # owner, change, applies now?, schedule, detail


def _changes(update: dict[str, Any]) -> str:
    changes = update.get("changes") or {}
    return "; ".join(f"{col}: {c.get('from')} -> {c.get('to')}" for col, c in changes.items()) or "definition"


# What each kind of change says in the DETAIL column (the kinds: OwnerPlan.changes).
DETAILS: dict[str, Callable[[dict[str, Any]], str]] = {
    "insert": lambda _: "new in the manifest",
    "update": _changes,
    "retire": lambda _: "absent from the manifest",
}


def owner_lines(entry: OwnerPlan) -> list[Line]:
    """One owner's plan, blockers first (they explain why the changes below may wait)."""
    owner = entry.owner
    lines: list[Line] = [
        (owner, "BLOCKED", "-", "-", f"{b.get('code')}: {b.get('message', '')}") for b in entry.blockers
    ]

    def applies(flag: bool) -> str:
        return "yes" if flag else "no"

    lines += [(owner, "CONFLICT", "no", c["name"], c.get("message", c.get("kind", ""))) for c in entry.conflicts]
    for kind, will, entries in entry.changes():
        lines += [(owner, kind.upper(), applies(will), e["name"], DETAILS[kind](e)) for e in entries]
    if len(lines) == 0:
        lines.append((owner, "none", "-", "-", "in sync: nothing to do"))
    return lines


def entry_text(line: Line, lines: list[Line]) -> Text:
    """One plan entry in full (the DETAIL column cuts it) and the schedules it would touch:
    its own, or for a blocker every schedule of the owner's plan that it holds back."""
    owner, change, applies, name, detail = line
    text = Text()
    for label, value in (("owner", owner), ("change", change), ("applies now", applies), ("schedule", name)):
        text.append(f"{label}: ", style="bold")
        text.append(f"{value}\n")
    text.append("reason: ", style="bold")
    text.append(f"{detail}\n\n")
    touched = [(c, n) for o, c, _, n, _ in lines if o == owner and n != "-"]
    if change not in ("BLOCKED", "none"):
        touched = [(change, name)]
    text.append("rows it would touch" + (" (held back by this blocker)" if change == "BLOCKED" else "") + ":\n",
                style="bold")
    for what, schedule in touched:
        text.append(f"  {what:<8} {schedule}\n")
    if not touched:
        text.append("  none\n")
    return text


class PlanPanel(Panel[OwnerPlan]):
    panel_id = "plan"
    title = "Plan"
    BINDINGS = actions.bindings("plan")

    def __init__(self) -> None:
        super().__init__()
        self.lines: dict[str, Line] = {}  # row key -> its (escaped) line
        self.all_lines: list[Line] = []

    def compose(self) -> ComposeResult:
        yield Static(classes="panel-title")
        yield self.chosen_table(COLUMNS, id="plan-table")

    def on_mount(self) -> None:
        self.title_line("Plan: loading…")

    def work(self) -> Work:
        return lambda client, now: client.reads.plan(now=now)

    def show(self, data: list[OwnerPlan], now: datetime) -> None:
        # Names, messages and changed values come from the database: escaped for display.
        lines = [line for entry in data for line in owner_lines(printable_row(entry))]
        blocked = sum(1 for line in lines if line[1] == "BLOCKED")
        changes = sum(len(entries) for entry in data for _, _, entries in entry.changes())
        self.title_line(Text.assemble(
            ("Plan ", "bold"),
            f"preview, changes nothing: {len(data)} owner(s), {changes} change(s), {blocked} blocker(s)",
        ))
        rows = []
        self.lines = {str(index): line for index, line in enumerate(lines, start=1)}
        self.all_lines = lines
        for index, (owner, change, applies, name, detail) in enumerate(lines, start=1):
            style = "bold" if change in ("BLOCKED", "CONFLICT") or change.lower() == "retire" else ""
            rows.append((str(index), (cell(index), cell(owner), cell(change, style), cell(applies), cell(name),
                                      cell(detail))))
        self.table.sync(self.chosen_cells(rows))

    def copy_value(self, key: str) -> tuple[str, str]:
        owner, _, _, name, _ = self.lines[key]
        return ("schedule", name) if name != "-" else ("owner", owner)

    def raw_model(self, key: str) -> Any:
        """A plan entry has no read model of its own: its line's parts, named."""
        line = self.lines.get(key)
        return None if line is None else dict(zip(("owner", "change", "applies", "schedule", "detail"), line,
                                                   strict=True))

    @on(DataTable.RowSelected, "#plan-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_details()

    def action_details(self) -> None:
        key = self.table.selected_key
        line = self.lines.get(key) if key else None
        if line is not None:
            title = f"Plan entry #{key}: {line[1]} {line[3]}"
            self.post_message(InfoRequested(title, entry_text(line, self.all_lines)))
