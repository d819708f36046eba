"""Helpers of the console tests: waits driven by the pilot (never time.sleep), and short
ways to read the screen and the database."""

from __future__ import annotations

from typing import Any

from helpers import until
from psycopg import sql
from psycopg.types.json import Jsonb


async def settled(pilot: Any, app: Any) -> None:
    """Wait for a completed refresh that has been applied to the screen."""
    count = len(app.apply_times)
    app.refresh_now()
    await until(pilot, lambda: len(app.apply_times) > count and not app.poller.in_flight, what="a refresh")
    await pilot.pause()


async def ready(pilot: Any, app: Any) -> None:
    """First data on screen, no toasts, nothing moving: ready for a snapshot or keys."""
    await until(pilot, lambda: app.apply_times, what="first paint with data")
    await settled(pilot, app)
    app.clear_notifications()
    await pilot.pause()


def notes(app: Any) -> list[str]:
    """Texts of the notifications currently shown."""
    return [n.message for n in app._notifications]


def table_keys(app: Any, panel: str = "schedules") -> list[str]:
    table = app.main.panel(panel).table
    return [row.key.value for row in table.ordered_rows]


def select(app: Any, key: str, panel: str = "schedules") -> None:
    """Put the cursor on a row (the keys under test then act on it)."""
    table = app.main.panel(panel).table
    table.move_cursor(row=table.get_row_index(key), animate=False)


def row_of(conn: Any, name: str) -> dict[str, Any]:
    return conn.execute("SELECT * FROM awa.cron_jobs WHERE name = %s", (name,)).fetchone()


def audit_actions(conn: Any) -> list[tuple[str, str, str]]:
    rows = conn.execute("SELECT operator, action, target FROM awa.audit_log ORDER BY id").fetchall()
    return [(r["operator"], r["action"], r["target"]) for r in rows]


def burst(app: Any, keys: str) -> None:
    """Send `keys` to the app the way a paste or a lagged SSH link delivers them: all queued
    at once, before the console has handled the first (Pilot.press waits after each key)."""
    from textual import events
    from textual.keys import _character_to_key

    for char in keys:
        key = "enter" if char == "\r" else _character_to_key(char) if not char.isalnum() else char
        event = events.Key(key, char)
        event.set_sender(app)
        app._driver.send_message(event)


def screen_text(app: Any) -> str:
    """What the terminal shows, as text (the screenshot without its SVG markup)."""
    import re

    return re.sub(r"<[^>]+>", "", app.export_screenshot()).replace("&#160;", " ")


def write_runtime_json(conn: Any, instance_id: str, column: str, value: Any) -> None:
    """One jsonb column of a runtime's snapshot row (recent_passes, recent_events), written
    as the seed writes (a restored dump: triggers off)."""
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(sql.SQL("UPDATE awa.runtime_instances SET {} = %s WHERE instance_id = %s").format(
            sql.Identifier(column)), (Jsonb(value), instance_id))
