"""`e` on a runtime (k9s's drill-down): its recent events, newest first, each at its database
time: started, became leader, lost or released the lead, deposed a stalled leader, a pass
that timed out on a lock (and who held it), refused to lead, stopped. Read from the
runtime's own snapshot row, so any console sees them, not only the runtime's own log."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from awa_tui.engine.read.fleet import RuntimeEvents
from awa_tui.printable import printable
from awa_tui.tui import actions
from awa_tui.tui.formatting import relative, utc
from awa_tui.tui.messages import CopyRequested, RuntimeEventsDataRequested, usable_reply

NONE_RECORDED = "no events recorded (a runtime of a release before events were kept records none)"
# What an operator should see first: the kinds that mean leadership changed or could not be had.
BOLD_KINDS = frozenset({"lost the lead", "pass timed out", "refused to lead", "deposed a stalled leader"})


# Narrower than this, a detail beside its event would wrap in a column a few words wide:
# each event's detail goes on its own indented line under it instead.
SIDE_BY_SIDE_WIDTH = 110


class EventsView:
    """The events as a table where the width allows, else each event over two lines."""

    def __init__(self, data: RuntimeEvents) -> None:
        self.data = data

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.max_width >= SIDE_BY_SIDE_WIDTH or not self.data.events:
            yield events_table(self.data)
            return
        yield Text("AT (UTC)              AGO       EVENT / DETAIL", style="bold")
        for e in self.data.events:
            style = "bold" if e.kind in BOLD_KINDS else ""
            yield Text.assemble(f"{utc(e.at)}  {relative(e.at, self.data.now):<8}  ", (printable(e.kind), style))
            detail = printable(e.detail)
            if detail:
                yield Padding(Text(detail, overflow="fold"), (0, 0, 0, 4))


def events_table(data: RuntimeEvents) -> RenderableType:
    """The events, newest first (escaped: the details carry database strings)."""
    if not data.events:
        return Text(NONE_RECORDED, style="dim")
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold", expand=True)
    table.add_column("AT (UTC)", no_wrap=True)
    table.add_column("AGO", no_wrap=True)
    table.add_column("EVENT", no_wrap=True)
    table.add_column("DETAIL", ratio=1, overflow="fold")
    for e in data.events:
        style = "bold" if e.kind in BOLD_KINDS else ""
        table.add_row(utc(e.at), relative(e.at, data.now), Text(printable(e.kind), style=style),
                      printable(e.detail) or "-")
    return table


def heading(data: RuntimeEvents) -> Text:
    head = Text.assemble(("Runtime ", "bold"), (str(data.instance_id), "bold"),
                         f"  {printable(data.hostname)} pid {data.pid}")
    if data.refusal:
        head.append(f"\nrefused: {printable(data.refusal)}; it never competes for the leader lock", style="bold")
    return head


class RuntimeEventsScreen(Screen[None]):
    BINDINGS = actions.bindings("runtime-events")

    def __init__(self, instance_id: str) -> None:
        super().__init__()
        self.instance_id = instance_id
        self.data: RuntimeEvents | None = None

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with VerticalScroll(id="runtime-events"):
            yield Static(Text(f"runtime {self.instance_id}: loading…"), id="runtime-events-body")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#runtime-events", VerticalScroll).focus()  # arrows and page keys scroll
        self.action_reload()

    def action_reload(self) -> None:
        self.post_message(RuntimeEventsDataRequested(self.instance_id, self.show))

    def show(self, data: RuntimeEvents | None, error: str | None) -> None:
        if not usable_reply(self, "#runtime-events-body", error, f"runtime {self.instance_id}"):
            return
        body = self.query_one("#runtime-events-body", Static)
        if data is None:
            body.update(Text(f"runtime {self.instance_id}: no snapshot row (pruned a day after it stopped)"))
            return
        self.data = data
        body.update(Group(heading(data), Text.assemble("\n", ("Recent events, newest first", "bold underline")),
                          EventsView(data)))

    def action_copy(self) -> None:
        self.post_message(CopyRequested("instance id", self.instance_id))

    def action_close(self) -> None:
        self.dismiss()
