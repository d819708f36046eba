"""Enter on an audit row: the entry in full. Who (the operator, and the database user,
client address, application and backend of the session that wrote it), what and when,
BEFORE and AFTER whole (wrapped, never cut), and the keys that changed."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from awa_tui.engine.read.models import AuditRecord
from awa_tui.printable import printable, printable_lines
from awa_tui.tui import actions
from awa_tui.tui.formatting import compact_json, pretty_json, utc
from awa_tui.tui.messages import AuditRecordRequested, CopyRequested, usable_reply
from awa_tui.tui.screens.confirm import facts
from awa_tui.tui.screens.detail import section

NOT_RECORDED = "not recorded in upstream Awa mode"


def changes(before: Any, after: Any) -> RenderableType:
    """The keys whose value differs, one a line, each value whole (the list's cell cuts them)."""
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return Text("not two objects: see BEFORE and AFTER", style="dim")
    keys = [k for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]
    if not keys:
        return Text("no change")
    return facts([(k, f"{compact_json(before.get(k))} -> {compact_json(after.get(k))}") for k in keys])


def json_part(value: Any) -> Text:
    # Escaped line by line: the document's own line breaks stay, nothing in it reaches the terminal raw.
    return Text(printable_lines(pretty_json(value)))


def session_facts(entry: AuditRecord) -> list[tuple[str, str]]:
    if not entry.session_recorded:
        return [("session", NOT_RECORDED)]
    return [
        ("database user", entry.db_user or "-"),
        ("client address", entry.client_addr or "local (Unix socket)"),
        ("application", entry.application_name or "-"),
        ("backend pid", str(entry.backend_pid) if entry.backend_pid is not None else "-"),
    ]


class AuditEntryScreen(Screen[None]):
    BINDINGS = actions.bindings("audit-entry")

    def __init__(self, entry_id: int) -> None:
        super().__init__()
        self.entry_id = entry_id
        self.data: AuditRecord | None = None

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with VerticalScroll(id="audit-entry"):
            yield Static(Text(f"audit entry {self.entry_id}: loading…"), id="audit-entry-body")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#audit-entry", VerticalScroll).focus()  # arrows and page keys scroll a long entry
        self.post_message(AuditRecordRequested(self.entry_id, self.show))

    def show(self, data: AuditRecord | None, error: str | None) -> None:
        if not usable_reply(self, "#audit-entry-body", error, f"audit entry {self.entry_id}"):
            return
        assert data is not None
        self.data = data
        head = Text.assemble((f"audit entry {data.id}", "bold"), "  ", (printable(data.action), "bold"), "  ",
                             printable(data.target))
        self.query_one("#audit-entry-body", Static).update(Group(
            head,
            section("Who and when"),
            facts([("at", utc(data.at)), ("operator", data.operator), ("action", data.action),
                   ("target", data.target), *session_facts(data)]),
            section("Changed"), changes(data.before, data.after),
            section("Before"), json_part(data.before),
            section("After"), json_part(data.after),
            section("Detail"), json_part(data.detail),
        ))

    def action_copy(self) -> None:
        if self.data is not None:
            self.post_message(CopyRequested("audit target", printable(self.data.target)))

    def action_close(self) -> None:
        self.dismiss()
