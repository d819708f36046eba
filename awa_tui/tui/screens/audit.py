"""`l`: the audit trail (S20): who did what, when (DB time), before and after. The filter
(operator, action, target, since, until) is searched by the engine over every entry, a
page of 200 at a time, newest first: moving onto the last row loads the next, older page;
G reads the last page (the oldest entries) at once, g the newest again. Enter opens an entry
in full (audit_entry.py)."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from awa_tui.engine.ledger.models import AuditEntry, AuditPage
from awa_tui.printable import printable, printable_row
from awa_tui.tui import actions
from awa_tui.tui.formatting import compact_json, utc
from awa_tui.tui.messages import AuditDataRequested, AuditEntryRequested, RawRequested, usable_reply
from awa_tui.tui.widgets.filter_bar import FilterBar
from awa_tui.tui.widgets.keyed_table import Column, KeyedTable, cell

PAGE = 200
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

    def __init__(self) -> None:
        super().__init__()
        self.entries: list[AuditEntry] = []  # every page loaded so far, newest first
        self.next_before_id: int | None = None  # the next (older) page starts below this id
        self.loading = False
        self.tail = False  # G: the oldest page is shown (the end of the list), not the newest ones
        self.to_start = False  # g from there: the cursor goes to the newest entry once it is read

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static(Text("Audit log: loading…"), classes="panel-title", id="audit-title")
        yield FilterBar("audit", "filter: operator:alice@ops action:pause target:billing since:2h until:ISO "
                        "(enter keeps, esc clears)")
        yield KeyedTable(COLUMNS, id="audit-table")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.action_reload()
        self.query_one(KeyedTable).focus()

    def action_reload(self) -> None:
        """From the newest entry again (the filter changed, or r); at the end of the list
        after G, that last page again."""
        self.loading = True
        self.post_message(AuditDataRequested(lambda page, error: self.show(page, error, more=False),
                                             self.query_one(FilterBar).where, None, PAGE, oldest=self.tail))

    def _load_more(self) -> None:
        if self.loading or self.next_before_id is None:
            return
        self.loading = True
        self.post_message(AuditDataRequested(lambda page, error: self.show(page, error, more=True),
                                             self.query_one(FilterBar).where, self.next_before_id, PAGE))

    @on(DataTable.RowHighlighted, "#audit-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        table = self.query_one(KeyedTable)
        if event.cursor_row >= table.row_count - 1 and not table.to_end:  # G reads the last page instead (_edge)
            self._load_more()

    @on(KeyedTable.EdgeRequested, "#audit-table")
    def _edge(self, event: KeyedTable.EdgeRequested) -> None:
        """G with older entries beyond the loaded ones: the last page, read at once (never
        every page in between); g from there: the newest entries again."""
        if event.last and not self.tail and self.next_before_id is not None:
            self.tail = True
            self.action_reload()
        elif not event.last and self.tail:
            self.tail, self.to_start = False, True
            self.action_reload()

    @on(DataTable.RowSelected, "#audit-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_details()

    def action_details(self) -> None:
        """The entry under the cursor in full (its own screen)."""
        table = self.query_one(KeyedTable)
        key = table.selected_key
        if key is not None:
            self.post_message(AuditEntryRequested(int(key)))

    def action_raw(self) -> None:
        """`y`: the entry under the cursor raw, from the page already read."""
        key = self.query_one(KeyedTable).selected_key
        entry = next((e for e in self.entries if str(e.id) == key), None)
        if entry is not None:
            self.post_message(RawRequested(f"audit entry {key}", entry))

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    def on_filter_bar_filter_changed(self, message: FilterBar.FilterChanged) -> None:
        self.tail = False
        self.action_reload()

    def action_back(self) -> None:
        bar = self.query_one(FilterBar)
        if bar.where or bar.error or bar.display:
            bar.clear_filter()
            self.query_one(KeyedTable).focus()
        else:
            self.action_close()

    def show(self, page: AuditPage | None, error: str | None, more: bool = False) -> None:
        self.loading = False
        if not usable_reply(self, "#audit-title", error, "Audit log"):
            return
        assert page is not None
        if page.oldest != self.tail:
            return  # read before G or g: the read they asked for follows
        bar = self.query_one(FilterBar)
        self.entries = [*self.entries, *page.entries] if more else list(page.entries)
        self.next_before_id = page.next_before_id
        data = self.entries
        if page.oldest:
            title = Text.assemble(("Audit log ", "bold"), f"the oldest {len(data):,} operator actions, newest first")
            title.append(" · the end of the list; g: the newest")
        else:
            title = Text.assemble(("Audit log ", "bold"), f"{len(data):,} operator actions, newest first")
            title.append(" · end of list loads older, G the oldest" if self.next_before_id is not None
                         else " · all shown")
        self.query_one("#audit-title", Static).update(title.append_text(bar.note()))
        self.query_one(KeyedTable).sync([
            # Database strings escaped (printable_row keeps a None target None: shown as "-").
            (str(e.id), (cell(e.id), cell(utc(e.at)), cell(printable_row(e.operator)),
                            cell(printable_row(e.action)), cell(printable_row(e.target)),
                            cell(printable(_change(e)))))
            for e in data
        ])
        # The cursor reached the last row while a page was in flight (that move's request
        # was dropped, one page at a time): the end of the list still asks for older ones.
        table = self.query_one(KeyedTable)
        if table.row_count and table.cursor_row >= table.row_count - 1 and not table.to_end:
            self._load_more()
        if self.to_start:  # g from the last page: the newest entry
            self.to_start = False
            table.move_cursor(row=0, animate=False)

    def action_close(self) -> None:
        self.dismiss()
