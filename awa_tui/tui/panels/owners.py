"""Owners (S22-S31): who manages which schedules, whether the live manifest is
synchronised (certificate), the grace clock of automatic retirement, and what blocks
reconciliation. Owner-wide retire and restore act from here.

Reads `ConsoleBackend.list_owners()`.
"""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from awa_tui.engine.read.models import OwnerSummary
from awa_tui.filters import Term
from awa_tui.printable import printable, printable_row
from awa_tui.tui import actions, operations
from awa_tui.tui.formatting import relative, span_precise
from awa_tui.tui.messages import OwnersSeen, SchedulesFilterRequested, request_operation
from awa_tui.tui.panels.base import Panel, Work
from awa_tui.tui.selection import declared_adoption
from awa_tui.tui.widgets.filter_bar import FilterBar
from awa_tui.tui.widgets.keyed_table import Column, cell

COLUMNS = (
    Column("owner", "OWNER", 14),
    Column("manifest", "MANIFEST", 19),
    Column("blocked", "BLOCKED BY", 24),
    Column("runtimes", "FRESH RT", 8),
    Column("owned", "OWNED", 5),
    Column("retired", "RETIRED", 7),
    Column("grace", "GRACE", 11),
    Column("pending", "PENDING", 12),
    Column("roles", "TEAM ROLES", 16),
)


def manifest_text(row: OwnerSummary) -> str:
    """'9a8b7c6d synced' / '9a8b7c6d NOT SYNCED' / 'MIXED x2' / 'none live'."""
    hashes = row.manifest_hashes
    if len(hashes) > 1:
        return f"MIXED x{len(hashes)}"
    if not hashes:
        return "none live"
    return f"{hashes[0][:8]} {'synced' if row.certified else 'NOT SYNCED'}"


def grace_text(row: OwnerSummary) -> str:
    remaining, required = row.grace_remaining_s, row.grace_required_s
    if remaining is None or not row.pending.retirements:
        return "-"  # nothing would be retired: no clock to watch
    if remaining <= 0:
        return "met"
    return f"{span_precise(remaining)} left" if required else "-"


def pending_text(row: OwnerSummary) -> str:
    pending = row.pending
    parts = [f"{sign}{count}" for count, sign in ((pending.inserts, "+"), (pending.updates, "~"),
                                                   (pending.retirements, "-")) if count]
    return " ".join(parts) or "none"


def blocker_codes(row: OwnerSummary) -> str:
    return ", ".join(b.get("code", "?") for b in row.blockers) or "-"


def roles_text(row: OwnerSummary) -> str:
    """The team roles that may act on the owner (`db grants --owner-role`), '-' for none."""
    return ", ".join(row.roles) or "-"


def cells(row: OwnerSummary) -> tuple[Text, ...]:
    blocked = bool(row.blockers)
    return (
        cell(row.owner),
        cell(manifest_text(row), "" if row.certified else "bold"),
        cell(blocker_codes(row), "bold" if blocked else ""),
        cell(row.fresh_runtimes),
        cell(row.schedules_owned),
        cell(row.schedules_retired),
        cell(grace_text(row)),
        cell(pending_text(row)),
        cell(roles_text(row)),
    )


class OwnersPanel(Panel[OwnerSummary]):
    panel_id = "owners"
    title = "Owners"
    BINDINGS = actions.bindings("owners")

    def compose(self) -> ComposeResult:
        yield Static(classes="panel-title")
        yield FilterBar("owners", "filter: billing* state:blocked (enter keeps, esc clears)")
        yield self.chosen_table(COLUMNS, id="owners-table")
        yield Static(id="owners-summary", classes="row-summary")

    def on_mount(self) -> None:
        self.title_line("Owners: loading…")

    def work(self) -> Work:
        return lambda client, now: client.reads.list_owners(now=now)

    def show(self, data: list[OwnerSummary], now: datetime) -> None:
        self.now = now
        everyone = data
        data = self.filtered(data)
        # Keyed by the shown owner (the table's first column is its key); values stay real rows.
        self.rows = {printable(row.owner): row for row in data}
        blocked = sum(1 for r in data if r.blockers)
        unsynced = sum(1 for r in data if not r.certified)
        self.title_line(Text.assemble(
            ("Owners ", "bold"), f"{len(data)} · {unsynced} NOT SYNCED · {blocked} BLOCKED · "
            "PENDING: +new ~changed -retired",
        ).append_text(self.filter_note()))
        self.table.sync(self.chosen_cells([(o, cells(printable_row(r))) for o, r in self.rows.items()]))
        self.post_message(OwnersSeen(tuple(printable(r.owner) for r in everyone)))
        self._summary()

    def on_data_table_row_highlighted(self) -> None:
        self._summary()

    def _summary(self) -> None:
        row = self.selected_row()
        widget = self.query_one("#owners-summary", Static)
        if row is None or self.now is None:
            widget.update("No owner has declared a manifest or owns a schedule.")
            return
        row = printable_row(row)
        text = Text.assemble((row.owner, "bold"), ": ")
        blockers = row.blockers
        if blockers:
            text.append("BLOCKED", style="bold")
            text.append(": " + "; ".join(b.get("message", b.get("code", "?")) for b in blockers))
        else:
            text.append("reconciles freely")
        if row.certified_at:
            text.append(f" · certified {relative(row.certified_at, self.now)}")
        if row.roles:
            text.append(f" · team roles: {roles_text(row)}")
        widget.update(text)

    @on(DataTable.RowSelected, "#owners-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_details()

    def action_details(self) -> None:
        """Enter: the owner's schedules (the schedules panel filtered by owner:NAME)."""
        row = self.selected_row()
        if row is not None:
            self.post_message(SchedulesFilterRequested(str(Term("field", "owner", row.owner))))

    def action_adopt_declared(self) -> None:
        request_operation(self, lambda: declared_adoption(self.chosen_row("owner").owner, self.now))

    def action_retire_owner(self) -> None:
        request_operation(self, lambda: operations.retire_owner(self.chosen_row("owner")))

    def action_restore_owner(self) -> None:
        request_operation(self, lambda: operations.restore_owner(self.chosen_row("owner")))
