"""`l`: the audit trail (S20): who did what, when (DB time), before and after."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from awa_tui.engine.models import AuditEntry
from awa_tui.printable import printable, printable_row
from awa_tui.tui import actions, filtering
from awa_tui.tui.formatting import compact_json, utc
from awa_tui.tui.messages import AuditDataRequested, usable_reply
from awa_tui.tui.widgets.filter_bar import FilterBar
from awa_tui.tui.widgets.keyed_table import Column, KeyedTable, cell

COLUMNS = (
    Column("id", "#", 5),
    Column("at", "AT (UTC)", 20),
    Column("operator", "OPERATOR", 18),
    Column("action", "ACTION", 13),
    Column("target", "TARGET", 24),
    Column("change", "BEFORE -> AFTER", 70),
)


def _change(entry: AuditEntry) -> str:
    before, after = entry.before, entry.after
    if isinstance(before, dict) and isinstance(after, dict):
        keys = [k for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]
        return "; ".join(f"{k}: {before.get(k)} -> {after.get(k)}" for k in keys) or "no change"
    return f"{compact_json(before)} -> {compact_json(after)}"


class AuditScreen(Screen[None]):
    BINDINGS = actions.bindings("audit")

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static(Text("Audit log: loading…"), classes="panel-title", id="audit-title")
        yield FilterBar("audit", "filter: operator:alice@ops action:pause target:billing (enter keeps, esc clears)")
        yield KeyedTable(COLUMNS, id="audit-table")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.action_reload()
        self.query_one(KeyedTable).focus()

    def action_reload(self) -> None:
        self.post_message(AuditDataRequested(self.show))

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    def on_filter_bar_filter_changed(self, message: FilterBar.FilterChanged) -> None:
        self.action_reload()

    def action_back(self) -> None:
        bar = self.query_one(FilterBar)
        if bar.where or bar.error or bar.display:
            bar.clear_filter()
            self.query_one(KeyedTable).focus()
        else:
            self.action_close()

    def show(self, data: list[AuditEntry] | None, error: str | None) -> None:
        if not usable_reply(self, "#audit-title", error, "Audit log"):
            return
        assert data is not None
        bar = self.query_one(FilterBar)
        data = filtering.apply(bar.where, data)
        self.query_one("#audit-title", Static).update(
            Text.assemble(("Audit log ", "bold"), f"latest {len(data)} operator actions, newest first")
            .append_text(bar.note())
        )
        self.query_one(KeyedTable).sync([
            # Database strings escaped (printable_row keeps a None target None: shown as "-").
            (str(e.id), (cell(e.id), cell(utc(e.at)), cell(printable_row(e.operator)),
                            cell(printable_row(e.action)), cell(printable_row(e.target)),
                            cell(printable(_change(e)))))
            for e in data
        ])

    def action_close(self) -> None:
        self.dismiss()
