"""Runtimes: every engine process that reported a snapshot, fresh or stale by DB time (S21).

The poll fetches runtimes and the leader lock's holder every refresh anyway: the ATTENTION
line (no lock holder, or a STALLED one whose lease expired) is shown on every panel by the
status bar, so an operator never has to come here to learn that nothing is firing.
Leadership is the lock holder's (Client.leadership()), never a snapshot's is_leader flag: a runtime
killed with -9 keeps that flag in its row for a whole freshness window.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import DataTable

from awa_tui.engine.read.fleet import Leadership, describe
from awa_tui.engine.read.models import RuntimeRow
from awa_tui.printable import printable_row
from awa_tui.tui import actions
from awa_tui.tui.formatting import relative, span, span_precise, utc
from awa_tui.tui.messages import InfoRequested, RuntimeEventsRequested
from awa_tui.tui.panels.base import Panel, Work
from awa_tui.tui.screens.confirm import facts
from awa_tui.tui.widgets.filter_bar import FilterBar
from awa_tui.tui.widgets.fitted import FittedLine
from awa_tui.tui.widgets.keyed_table import Column, cell

COLUMNS = (  # priority: which give way first when narrow, past the right edge (0 never; enter shows all)
    Column("instance", "INSTANCE", 36),  # whole ids: the first 7 characters are not unique enough to act on
    Column("role", "ROLE", 35),  # "refused: pooler in transaction mode" whole, when it is one
    Column("fresh", "STATE", 7),
    Column("seen", "LAST SEEN", 9, priority=1),
    Column("host", "HOST", 14, priority=2),
    Column("pid", "PID", 7, priority=4),
    Column("version", "VERSION", 8, priority=5),
    Column("proto", "PROTO", 5, priority=7),
    Column("owner", "OWNER", 12, priority=3),
    Column("manifest", "MANIFEST", 10, priority=6),
    Column("started", "STARTED (UTC)", 20, priority=8),
)


@dataclass(frozen=True)
class RuntimesView:
    """What the runtimes panel shows: the snapshot rows and the lock holder."""

    rows: list[RuntimeRow]
    leadership: Leadership
    own_instance: str | None = None  # this console's in-process runtime (--lead), marked in ROLE
    own_refusal: str | None = None  # why that runtime never competes for leadership (client.runtime.leader_refusal)


def attention(leadership: Leadership, own_refusal: str | None = None) -> str | None:
    """The cluster-level problem an operator must see on every panel, if any. `own_refusal`:
    this console's engine refuses to lead, so it is not the runtime that will take over."""
    not_us = f"; not this console, which refuses to lead ({own_refusal})" if own_refusal else ""
    if not leadership.held:
        return f"no live leader: nothing fires until a runtime takes the leader lock{not_us}"
    if leadership.stalled:
        left = leadership.lease_left_s
        since = f" {span(left)} ago" if left is not None else ""
        return (f"leader STALLED: {leadership.holder()} holds the lock but its lease expired{since}; "
                f"nothing fires until a standby deposes it{not_us}")
    return None


def leader_text(leadership: Leadership) -> str:
    if not leadership.held:
        return "no leader"
    if leadership.stalled:
        return f"leader STALLED {leadership.holder()}"
    left = leadership.lease_left_s
    return f"leader {leadership.holder()}, lease {span(left or 0)}"


def blocked_text(row: RuntimeRow) -> str | None:
    """Its newest pass gave up on a lock or statement timeout (S59): when, and which
    sessions it waited on (text from the database: the caller shows an escaped row)."""
    newest = row.passes[0] if row.passes else None
    if newest is None or not newest.timed_out:
        return None
    text = f"last pass TIMED OUT at {utc(newest.at)} after {newest.duration_ms / 1000:.1f} s"
    if not newest.blockers:
        return text
    return text + "; blocked by " + describe(newest.blockers)


# A runtime snapshots every snapshot_interval (10 s unless configured): past 1.5 of them
# plus a margin its heartbeat stopped (killed -9, frozen, cut off), long before its row
# stops being fresh (3 intervals, at least 30 s).
DEFAULT_SNAPSHOT_INTERVAL = timedelta(seconds=10)
SILENT_MARGIN = timedelta(seconds=2)


def silent_for(row: RuntimeRow, now: datetime) -> timedelta | None:
    """How long a still-fresh runtime has said nothing, once that is past its heartbeat."""
    if row.stopped_at is not None or not row.fresh or row.last_seen_at is None:
        return None
    interval = row.snapshot_interval if row.snapshot_interval and row.snapshot_interval > timedelta(0) \
        else DEFAULT_SNAPSHOT_INTERVAL
    quiet = now - row.last_seen_at
    return quiet if quiet > interval * 1.5 + SILENT_MARGIN else None


def state_text(row: RuntimeRow, now: datetime) -> str:
    if row.stopped_at is not None:
        return "stopped"
    quiet = silent_for(row, now)
    if quiet is not None:
        return f"SILENT {span_precise(quiet.total_seconds())}"
    return "fresh" if row.fresh else "STALE"


ROLES = {"leader": "LEADER", "stalled": "STALLED", "follower": "follower"}


def refused_text(refusal: str) -> str:
    """A runtime that never competes for the leader lock, in its ROLE: 'refused: pooler in
    transaction mode' (its snapshot's role would only say follower)."""
    return f"refused: {refusal}"


def cells(row: RuntimeRow, now: datetime) -> tuple[Text, ...]:
    role = row.role
    manifest = row.manifest_hash
    return (
        cell(str(row.instance_id)),
        cell(refused_text(row.lead_refusal), "bold") if row.lead_refusal and role == "follower"
        else cell(ROLES.get(role, role), "" if role == "follower" else "bold"),
        cell(state_text(row, now), "" if row.fresh and silent_for(row, now) is None else "bold"),
        cell(relative(row.last_seen_at, now)),
        cell(row.hostname),
        cell(row.pid),
        cell(row.version),
        cell(row.protocol_version),
        cell(row.owner or "-"),
        cell(manifest[:8] if manifest else "-"),
        cell(utc(row.started_at)),
    )


def runtime_text(row: RuntimeRow, now: datetime, refusal: str | None = None) -> Table:
    """A runtime's snapshot in full (escaped row): what the narrow columns cut. `refusal`:
    why this console's own runtime never competes for leadership."""
    interval = row.snapshot_interval
    refusal = refusal or row.lead_refusal
    if refusal:
        role = f"{refused_text(refusal)}; it never competes for the leader lock (give it a direct leader connection)"
    elif row.lease_expires_at:
        role = f"{ROLES.get(row.role, row.role)} (lease until {utc(row.lease_expires_at)})"
    else:
        role = ROLES.get(row.role, str(row.role))
    return facts([
        ("instance", str(row.instance_id)),
        ("role", role),
        ("state", f"{state_text(row, now)}; last seen {utc(row.last_seen_at)} ({relative(row.last_seen_at, now)})"),
        ("host", f"{row.hostname} pid {row.pid}"),
        ("version", f"{row.version} (protocol {row.protocol_version})"),
        ("owner", f"{row.owner or '- (none)'}{' authoritative' if row.authoritative else ''}"),
        ("manifest", row.manifest_hash or "-"),
        ("started", utc(row.started_at)),
        ("stopped", utc(row.stopped_at) if row.stopped_at else "-"),
        ("snapshots", f"every {interval}" if interval else "-"),
        # The snapshot's health word; its last passes follow (runtime_page).
        ("health", str(row.health or "-")),
    ])


def passes_table(row: RuntimeRow, now: datetime) -> Table | Text | Group:
    """Its last evaluator passes, newest first, as its snapshot carries them."""
    if not row.passes:
        return Text("none reported: only the leader evaluates, and it reports its passes with each snapshot")
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
    for header in ("AT (UTC)", "AGO", "TOOK", "DUE", "FIRED", "ERRORS"):
        table.add_column(header, no_wrap=True, justify="left" if header in ("AT (UTC)", "AGO") else "right")
    for p in row.passes:
        table.add_row(utc(p.at), relative(p.at, now), f"{p.duration_ms:g} ms", str(p.due), str(p.fired),
                      "timed out" if p.timed_out else str(p.errors))
    blocked = blocked_text(row)
    if blocked is None:
        return table
    return Group(table, Text(blocked, style="bold"))


def runtime_page(row: RuntimeRow, now: datetime, refusal: str | None = None) -> Group:
    """Enter on a runtime: its snapshot in full, then its last passes (escaped row)."""
    return Group(runtime_text(row, now, refusal), Text.assemble("\n", ("Last passes", "bold underline")),
                 passes_table(row, now))


class RuntimesPanel(Panel):
    panel_id = "runtimes"
    title = "Runtimes"
    BINDINGS = actions.bindings("runtimes")
    own_instance: str | None = None  # from the last RuntimesView: enter's page says the refusal
    own_refusal: str | None = None

    def compose(self) -> ComposeResult:
        yield FittedLine(classes="panel-title")
        yield FilterBar("runtimes", "filter: host:app* role:leader stale (enter keeps, esc clears)")
        yield self.chosen_table(COLUMNS, id="runtimes-table")

    def on_mount(self) -> None:
        self.title_line("Runtimes: loading…")

    def work(self) -> Work:
        return lambda client, now: None  # the poll's runtimes are used

    def show(self, data: RuntimesView, now: datetime) -> None:
        rows = data.rows
        fresh = sum(1 for r in rows if r.fresh)
        counts = Text()  # each fault's count, kept at every width
        silent = sum(1 for r in rows if silent_for(r, now) is not None)
        if silent:
            counts.append(f" · {silent} SILENT", style="bold")
        refusing = sum(1 for r in rows if r.lead_refusal and r.stopped_at is None and r.fresh
                       and str(r.instance_id) != data.own_instance)
        if refusing:
            counts.append(f" · {refusing} refuse{'s' if refusing == 1 else ''} to lead", style="bold")
        if data.own_refusal:
            counts.append(f" · this console refuses to lead: {data.own_refusal}", style="bold")
        # The leader's passes give up on a lock: who holds it, on the panel's first line (last:
        # the longest; narrow, its bare word, the leader's row and page have the rest).
        blocked = next((blocked_text(printable_row(r)) for r in rows if r.role == "leader"), None)
        detail, bare = (Text(f" · {blocked}", style="bold"), Text(" · pass TIMED OUT", style="bold")) \
            if blocked else (Text(), Text())
        head = Text.assemble(("Runtimes ", "bold"), f"{len(rows)} ({fresh} fresh)")
        leader = f" · {leader_text(data.leadership)}"
        note = self.filter_note()
        # Narrower: the leader's details give way (its row says them), then the blocker's.
        self.title_line(Text.assemble(head, leader, counts, detail, note), Text.assemble(head, counts, detail, note),
                        Text.assemble(head, counts, bare, note))
        # A stable order (the query's is by last heartbeat, which reshuffled rows every refresh):
        # live before stopped, then by host, pid and id.
        ordered = sorted(self.filtered(rows), key=lambda r: (r.stopped_at is not None, str(r.hostname),
                                                             r.pid or 0, str(r.instance_id)))
        self.now = now
        self.rows = {str(r.instance_id): r for r in ordered}
        self.own_instance, self.own_refusal = data.own_instance, data.own_refusal
        # Hostname, version, owner, manifest hash: database strings, escaped for display.
        self.table.sync(self.chosen_cells([(str(r.instance_id), self._marked(cells(printable_row(r), now), r, data))
                                           for r in ordered]))

    def copy_value(self, key: str) -> tuple[str, str]:
        return "instance id", key

    @on(DataTable.RowSelected, "#runtimes-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_details()

    def action_details(self) -> None:
        """Enter: the runtime in full (identity, manifest, lease, its last reported health)."""
        row = self.selected_row()
        if row is not None and self.now is not None:
            refusal = self.own_refusal if str(row.instance_id) == self.own_instance else None
            self.post_message(InfoRequested(f"Runtime {row.instance_id}", runtime_page(printable_row(row),
                                                                                          self.now, refusal)))

    def action_events(self) -> None:
        """e: the runtime's recent events (became leader, lost the lead, a pass timed out...)."""
        row = self.selected_row()
        if row is not None:
            self.post_message(RuntimeEventsRequested(str(row.instance_id)))

    @staticmethod
    def _marked(made: tuple[Text, ...], row: RuntimeRow, view: RuntimesView) -> tuple[Text, ...]:
        """The ROLE of this console's own runtime says so (only under --lead), and that it
        refuses to lead when it does (its snapshot only says follower)."""
        if view.own_instance is None or str(row.instance_id) != view.own_instance:
            return made
        role = cell(refused_text(view.own_refusal), "bold") if view.own_refusal else made[1].copy()
        role.append(" (this)", style="bold")  # this console's runtime
        return (made[0], role, *made[2:])
