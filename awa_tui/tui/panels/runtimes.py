"""Runtimes: every engine process that reported a snapshot, fresh or stale by DB time (S21).

The poll fetches runtimes every refresh anyway: the ATTENTION line (live leaders != 1)
is shown on every panel by the status bar, so an operator never has to come here to
learn that nothing is firing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from awa_tui.printable import printable_row
from awa_tui.tui.formatting import relative, utc
from awa_tui.tui.panels.base import Panel, Work
from awa_tui.tui.widgets.keyed_table import Column, KeyedTable, cell

COLUMNS = (
    Column("instance", "INSTANCE", 8),
    Column("role", "ROLE", 8),
    Column("fresh", "STATE", 7),
    Column("seen", "LAST SEEN", 9),
    Column("host", "HOST", 14),
    Column("pid", "PID", 7),
    Column("version", "VERSION", 8),
    Column("proto", "PROTO", 5),
    Column("owner", "OWNER", 12),
    Column("manifest", "MANIFEST", 10),
    Column("started", "STARTED (UTC)", 20),
)


def live_leaders(runtimes: list[dict[str, Any]]) -> int:
    return sum(1 for r in runtimes if r["fresh"] and r["is_leader"])


def attention(runtimes: list[dict[str, Any]]) -> str | None:
    """The cluster-level problem an operator must see on every panel, if any."""
    leaders = live_leaders(runtimes)
    if leaders == 1:
        return None
    if leaders == 0:
        return "no live leader: nothing fires until a runtime takes the leader lock"
    return f"{leaders} live leaders reported: expected exactly 1 (stale snapshots or a split)"


def state_text(row: dict[str, Any]) -> str:
    if row["stopped_at"] is not None:
        return "stopped"
    return "fresh" if row["fresh"] else "STALE"


def cells(row: dict[str, Any], now: datetime) -> tuple[Text, ...]:
    role = "LEADER" if row["is_leader"] else "follower"
    manifest = row.get("manifest_hash")
    return (
        cell(str(row["instance_id"])),
        cell(role, "bold" if row["is_leader"] else ""),
        cell(state_text(row), "" if row["fresh"] else "bold"),
        cell(relative(row["last_seen_at"], now)),
        cell(row["hostname"]),
        cell(row["pid"]),
        cell(row["version"]),
        cell(row["protocol_version"]),
        cell(row.get("owner") or "-"),
        cell(manifest[:8] if manifest else "-"),
        cell(utc(row["started_at"])),
    )


class RuntimesPanel(Panel):
    panel_id = "runtimes"
    title = "Runtimes"

    def compose(self) -> ComposeResult:
        yield Static(classes="panel-title")
        yield KeyedTable(COLUMNS, id="runtimes-table")

    def on_mount(self) -> None:
        self.title_line("Runtimes: loading…")

    def work(self) -> Work:
        return lambda client, now: None  # the poll's runtimes are used

    def show(self, data: list[dict[str, Any]], now: datetime) -> None:
        fresh = sum(1 for r in data if r["fresh"])
        self.title_line(
            Text.assemble(
                ("Runtimes ", "bold"),
                f"{len(data)} known · {fresh} fresh · {live_leaders(data)} live leader(s) · freshness by DB time",
            )
        )
        # Hostname, version, owner, manifest hash: database strings, escaped for display.
        self.table.sync([(str(r["instance_id"]), cells(printable_row(r), now)) for r in data])
