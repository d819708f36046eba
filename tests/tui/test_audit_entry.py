"""Enter on an audit row opens the entry in full (issue 39): the session that wrote it
(database user, client address, application, backend pid), BEFORE and AFTER whole and
wrapped (the list's cell cuts them), the changed keys; esc goes back to the list.
Snapshots at 80x24 and 160x48.

Update after an intended change: pytest tests/tui/test_audit_entry.py --snapshot-update
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from lease_seed import leader_lock_held
from psycopg.types.json import Jsonb
from tui_helpers import ready, screen_text, until
from tui_seed import NOW, RUNTIMES, seed

from awa_tui.tui.screens.audit import AuditScreen
from awa_tui.tui.screens.audit_entry import AuditEntryScreen
from awa_tui.tui.widgets.keyed_table import KeyedTable

# An override whose args are longer than any terminal line: the list cuts it, the entry does not.
LONG_ARGS = {"regions": [f"region-{n:02d}" for n in range(30)], "note": "the end of the long value"}
BEFORE = {"cron_expr": "0 2 * * *", "args": {"regions": ["eu"]}}
AFTER = {"cron_expr": "30 2 * * *", "args": LONG_ARGS}


@pytest.fixture
def seeded(dsn: str, conn: psycopg.Connection[Any]) -> Iterator[str]:
    seed(conn)
    with conn.transaction():  # restored as a dump would be: the session columns as written
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(
            "INSERT INTO awa.audit_log (at, operator, action, target, before, after, detail, db_user, client_addr, "
            "application_name, backend_pid) VALUES ('2025-03-08T11:50:00Z', 'dave@ops', 'override', "
            "'billing.nightly-invoice', %s, %s, %s, 'awa_operator', '10.20.30.40', 'awa-tui console', 4242)",
            (Jsonb(BEFORE), Jsonb(AFTER), Jsonb({"reason": "quarter end"})))
    with leader_lock_held(dsn, RUNTIMES[0]["instance_id"], NOW):
        yield dsn


def text(app: Any) -> str:
    return html.unescape(screen_text(app))


async def read_all(app: Any, pilot: Any) -> str:
    """Page down through the entry, collecting what each screen shows."""
    scroll = app.screen.query_one("#audit-entry")
    seen = ""
    for _ in range(20):
        seen += text(app)
        if scroll.scroll_y >= scroll.max_scroll_y:
            return seen
        await pilot.press("pagedown")
        await pilot.pause()
    raise AssertionError("the entry did not end within 20 screens")


async def open_entry(app: Any, pilot: Any) -> AuditEntryScreen:
    await pilot.press("l")
    await until(pilot, lambda: isinstance(app.screen, AuditScreen) and app.screen.entries, what="the audit log")
    table = app.screen.query_one(KeyedTable)
    assert table.selected_key is not None
    assert app.screen.entries[0].operator == "dave@ops"  # the newest: under the cursor
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, AuditEntryScreen) and app.screen.data is not None,
                what="the audit entry")
    await pilot.pause()
    return app.screen


@pytest.mark.console(size=(160, 48))
async def test_enter_opens_every_field_of_the_entry(console):
    app, pilot = console
    screen = await open_entry(app, pilot)
    shown = text(app)
    for label, value in [("at", "2025-03-08 11:50:00"), ("operator", "dave@ops"), ("action", "override"),
                         ("target", "billing.nightly-invoice"), ("database user", "awa_operator"),
                         ("client address", "10.20.30.40"), ("application", "awa-tui console"),
                         ("backend pid", "4242")]:
        assert re.search(rf"^{label} *{re.escape(value)}", shown, re.MULTILINE), f"{label}: {value} not shown"
    # AFTER in full: every region and the last words of the long value are on the screen.
    assert all(f'"region-{n:02d}"' in shown for n in range(30))
    assert "the end of the long value" in shown
    assert '"quarter end"' in await read_all(app, pilot)
    assert screen.data is not None and screen.data.after == AFTER
    await pilot.press("escape")
    await until(pilot, lambda: isinstance(app.screen, AuditScreen), what="back to the list")


@pytest.mark.console(size=(80, 24))
async def test_a_narrow_terminal_wraps_the_entry_instead_of_cutting_it(console):
    app, pilot = console
    await open_entry(app, pilot)
    seen = await read_all(app, pilot)
    assert all(f'"region-{n:02d}"' in seen for n in range(30))
    assert "the end of the long value" in seen


async def test_an_entry_stored_without_a_session_says_so(console):
    """The seed's entries were restored without the trigger: no user, a local connection."""
    app, pilot = console
    await pilot.press("l")
    await until(pilot, lambda: isinstance(app.screen, AuditScreen) and app.screen.entries, what="the audit log")
    table = app.screen.query_one(KeyedTable)
    row = next(i for i, e in enumerate(app.screen.entries) if e.target == "cleanup.tmp-files")
    table.move_cursor(row=row, animate=False)
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, AuditEntryScreen) and app.screen.data is not None,
                what="the audit entry")
    await pilot.pause()
    shown = text(app)
    assert re.search(r"^client address *local \(Unix socket\)", shown, re.MULTILINE)
    assert "paused_by" in shown and '"alice@ops"' in shown


@pytest.mark.parametrize("size", [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")])
def test_snapshot_audit_entry(snap_compare, console_factory, size):
    async def run_before(pilot) -> None:
        app = pilot.app
        await ready(pilot, app)
        await open_entry(app, pilot)
        app.clear_notifications()
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=size, run_before=run_before)
