"""Console defects from the 3 a.m. issue, one pilot test each (each failed before its fix)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest
from psycopg.types.json import Jsonb
from rich.console import Console as RichConsole
from tui_helpers import notes, ready, select, settled, table_keys, until
from tui_seed import NOW

from awa_tui.engine.client import Client
from awa_tui.tui.screens.confirm import ConfirmScreen
from awa_tui.tui.screens.detail import DetailScreen
from awa_tui.tui.screens.info import InfoScreen

EXTRA = [f"zz.bulk-{i:02d}" for i in range(30)]  # sort after the seeded names


def add_schedules(conn: Any, names: list[str]) -> None:
    with conn.transaction():
        for name in names:
            conn.execute(
                "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, args) "
                "VALUES (%s, '0 3 * * *', 'UTC', 'ops.extra', 'default', %s)", (name, Jsonb({})))


def plain(renderable: Any, width: int = 200) -> str:
    console = RichConsole(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def visible_rows(table: Any) -> range:
    """Row indexes the table shows now (its height less the header line)."""
    top = int(table.scroll_offset.y)
    return range(top, top + table.size.height - (table.header_height if table.show_header else 0))


async def test_panel_keys_come_back_after_terminal_too_small(console):
    """Defect 1: after 'terminal too small' and back, `t` works again without pressing 1."""
    app, pilot = console
    await pilot.resize_terminal(40, 10)
    await until(pilot, lambda: app.main.has_class("-too-small"), what="too-small screen")
    await pilot.resize_terminal(120, 36)
    await until(pilot, lambda: not app.main.has_class("-too-small"), what="panels back")
    await until(pilot, lambda: app.focused is app.main.panel("schedules").table, what="table focused again")
    select(app, "metrics.rollup")
    await pilot.press("t")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="trigger dialog")
    assert app.screen.heading == "Trigger schedule?"
    await pilot.press("n")


async def test_home_end_and_vi_keys_move_between_rows(console):
    """Defect 3: Home/End (and g/G, j/k) move the cursor to rows; they never scroll sideways."""
    app, pilot = console
    table = app.main.panel("schedules").table
    keys = table_keys(app)
    assert len(keys) == 8
    await pilot.press("end")
    assert table.cursor_row == 7 and table.scroll_offset.x == 0
    await pilot.press("home")
    assert table.cursor_row == 0 and table.scroll_offset.x == 0
    await pilot.press("G")
    assert table.cursor_row == 7
    await pilot.press("g")
    assert table.cursor_row == 0
    await pilot.press("j", "j")
    assert table.cursor_row == 2 and table.selected_key == keys[2]
    await pilot.press("k")
    assert table.cursor_row == 1 and table.selected_key == keys[1]


async def test_name_column_stays_while_scrolling_sideways(console):
    app, pilot = console
    await pilot.resize_terminal(80, 24)
    await pilot.press("2")  # the owners' columns never drop: wider than 80, they scroll
    await settled(pilot, app)
    table = app.main.panel("owners").table
    for _ in range(6):
        await pilot.press("right")
    await pilot.pause()
    assert table.scroll_offset.x > 0
    header = "".join(segment.text for segment in table.render_line(0))
    assert header.startswith(" OWNER ")
    assert "MANIFEST" not in header  # scrolled past it, OWNER frozen in place
    row = "".join(segment.text for segment in table.render_line(1))
    assert row.startswith(" billing ")


async def test_selected_row_stays_visible_after_shrinking(console_factory, conn):
    """Defect 5: shrinking the terminal keeps the selected row (the summary's) on screen."""
    add_schedules(conn, EXTRA)
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        table = app.main.panel("schedules").table
        select(app, "zz.bulk-20")
        await pilot.pause()
        assert table.cursor_row in visible_rows(table)
        await pilot.resize_terminal(80, 16)
        await until(pilot, lambda: table.size.height < 10, what="a short table")
        await until(pilot, lambda: table.cursor_row in visible_rows(table), what="selected row scrolled into view")
        assert table.selected_key == "zz.bulk-20"
        summary = app.main.panel("schedules").query_one("#schedules-summary")
        assert str(summary.render()).startswith("zz.bulk-20: ")


@pytest.mark.console(read_only=True)
async def test_read_only_mutation_keys_say_why_once(console):
    """Defect 8: s, t, a, ctrl+d and u in read-only mode say why (one toast, not one per press)."""
    app, pilot = console
    select(app, "metrics.rollup")
    for key in ("s", "t", "a", "ctrl+d", "u", "s"):
        await pilot.press(key)
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
    assert notes(app) == [
        "read-only console (--read-only): pause/resume, trigger, adopt, retire, restore, backfill, edit/override, new, "
        "delete, reset are disabled here"]


@pytest.mark.parametrize("panel, summary_id", [("1", "#schedules-summary"), ("2", "#owners-summary")])
async def test_toasts_never_cover_the_summary_line(console_factory, panel, summary_id):
    """Defect 6: a toast (5 s) sits above the summary line (and the owners' BLOCKED reason)."""
    app = console_factory()
    async with app.run_test(size=(120, 36), notifications=True) as pilot:  # toasts are off by default in tests
        await ready(pilot, app)
        await pilot.press(panel)
        await settled(pilot, app)
        for size in ((120, 36), (80, 24)):
            await pilot.resize_terminal(*size)
            app.notify("a long toast that says something the operator must read before it goes " * 2, timeout=30)
            toasts = await until(pilot, lambda: list(app.screen.query("Toast")), what="a toast")
            await pilot.pause()
            summary = app.screen.query_one(summary_id).region
            footer = app.screen.query_one("Footer").region
            assert summary.height == (3 if summary_id == "#schedules-summary" else 2)  # + last result line
            for toast in toasts:
                assert toast.region.height > 0
                assert not toast.region.overlaps(summary), (size, toast.region, summary)
                assert not toast.region.overlaps(footer)
            app.clear_notifications()
            await until(pilot, lambda: not list(app.screen.query("Toast")), what="toasts gone")


@pytest.mark.console(refresh=0.5)
async def test_detail_screen_is_live_and_says_when_it_was_loaded(console, conn):
    """Defect 2: the detail screen re-reads at the console's refresh rate (a pause made
    elsewhere appears without pressing r) and says when its data was loaded."""
    app, pilot = console
    select(app, "metrics.rollup")
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.data, what="detail loaded")
    body = lambda: plain(app.screen.query_one("#detail-body").content)  # noqa: E731
    assert "loaded 12:00:30Z · refreshes every 0.5s" in body()
    assert "PAUSED" not in body()
    conn.execute("UPDATE awa.cron_jobs SET paused_at = now(), paused_by = 'bob@elsewhere' "
                 "WHERE name = 'metrics.rollup'")
    await until(pilot, lambda: "PAUSED by bob@elsewhere" in body(), what="the pause shown without a key")


RT1, RT2, RT3 = ("6f1c2a9e-0000-4000-8000-000000000001", "0b7d4e21-0000-4000-8000-000000000002",
                 "c3a0ffee-0000-4000-8000-000000000003")


async def test_runtimes_keep_their_order_show_whole_ids_and_mark_this_console(console_factory, seeded, conn):
    """Defect 9: rows do not reorder on heartbeats, ids are whole, and under --lead the
    console's own runtime says so."""
    engine = Client(seeded, operator="alice@ops")
    engine.identity = dataclasses.replace(engine.identity, instance_id=uuid.UUID(RT2))  # as if it were app-2
    try:
        app = console_factory(engine=engine)
        async with app.run_test(size=(120, 36)) as pilot:
            await ready(pilot, app)
            await pilot.press("3")
            await settled(pilot, app)
            assert table_keys(app, "runtimes") == [RT1, RT2, RT3]
            # app-2 heartbeats after app-1: the query's order changes, the panel's does not.
            conn.execute("UPDATE awa.runtime_instances SET last_seen_at = %s WHERE instance_id = %s",
                         (NOW, uuid.UUID(RT2)))
            await settled(pilot, app)
            assert table_keys(app, "runtimes") == [RT1, RT2, RT3]
            table = app.main.panel("runtimes").table
            lines = ["".join(seg.text for seg in table.render_line(y)) for y in range(4)]
            assert lines[1].startswith(f" {RT1}  LEADER ")
            assert lines[2].startswith(f" {RT2}  follower (this) ")
            assert lines[3].startswith(f" {RT3}  follower ")
            assert "(this)" not in lines[1] + lines[3]
    finally:
        engine.close()


async def test_plan_enter_opens_the_full_reason_and_the_rows_it_would_touch(console):
    """Defect 7: the DETAIL column cuts a long reason; enter shows it whole, with the rows."""
    app, pilot = console
    await pilot.press("4")
    await settled(pilot, app)
    select(app, "1", "plan")
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, InfoScreen), what="plan entry page")
    assert app.screen.heading == "Plan entry #1: BLOCKED -"
    assert plain(app.screen.query_one("#info-body").content) == (
        "owner: billing\n"
        "change: BLOCKED\n"
        "applies now: -\n"
        "schedule: -\n"
        "reason: conflict: schedule 'payments.settlement-reconciliation-eu-west' exists unowned; "
        "an operator must adopt it for 'billing'\n"
        "\n"
        "rows it would touch (held back by this blocker):\n"
        "  CONFLICT payments.settlement-reconciliation-eu-west\n"
        "  INSERT   billing.dunning\n"
        "  UPDATE   billing.nightly-invoice\n"
        "\n"
    )
    await pilot.press("escape")
    await until(pilot, lambda: not isinstance(app.screen, InfoScreen), what="closed")
    select(app, "4", "plan")
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, InfoScreen), what="plan entry page")
    body = plain(app.screen.query_one("#info-body").content)
    assert "reason: cron_expr: 30 2 * * * -> 45 2 * * *\n" in body
    assert body.endswith("rows it would touch:\n  UPDATE   billing.nightly-invoice\n\n")


async def test_adopt_says_when_no_runtime_declares_the_owner(console, conn):
    """Defect 10: adopting for an owner no running runtime declares is said in the dialog."""
    app, pilot = console
    assert app.declared_owners == frozenset({"billing"})  # app-1 and app-2 declare billing's manifest
    select(app, "cleanup.tmp-files")
    await pilot.press("a")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="adopt dialog")
    note = lambda: plain(app.screen.query_one("#dialog-owner-note").content).strip()  # noqa: E731
    await pilot.press(*"nobody")
    await until(pilot, lambda: note(), what="the owner note")
    assert note() == ("No running runtime declares owner nobody: it is recorded, but nothing reconciles this "
                      "schedule until a runtime of that owner runs (declared: billing).")
    await pilot.press(*["backspace"] * 6, *"billing")
    await until(pilot, lambda: note() == "", what="the note gone for a declared owner")
    await pilot.press("escape")
    await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="cancelled")
    assert conn.execute("SELECT owner FROM awa.cron_jobs WHERE name = 'cleanup.tmp-files'").fetchone()["owner"] is None


async def test_narrow_terminals_keep_name_state_next_first_and_the_rest_past_the_edge(console):
    """Defect 4: at 80x24 the schedules' first screen is NAME, STATE and NEXT FIRE and what
    fits beside them (the higher priority numbers give way first); the rest are still in
    the table, past the right edge (issue 39); wide, they come back onto the first screen."""
    app, pilot = console
    table = app.main.panel("schedules").table
    every = [c.label.plain for c in table.ordered_columns]
    wide = [every[i] for i in range(len(table.first_screen))]
    assert wide[:3] == ["NAME ↑", "STATE", "NEXT FIRE"] and len(wide) >= 6  # sorted by name
    await pilot.resize_terminal(80, 24)
    await until(pilot, lambda: len(table.first_screen) < len(wide), what="columns past the edge")
    first = [c.label.plain for c in table.ordered_columns[: len(table.first_screen)]]
    assert sum(c.get_render_width(table) for c in table.ordered_columns[: len(first)]) <= table.size.width
    # HEALTH (1) and LAST RESULT (2) stay; FAILS 24h and the strip (3) and the rest past the edge.
    assert first == ["NAME ↑", "STATE", "NEXT FIRE", "HEALTH", "LAST RESULT"]
    assert [c.label.plain for c in table.ordered_columns] == every  # none left out
    assert table.selected_key == "billing.nightly-invoice"
    await pilot.resize_terminal(120, 36)
    await until(pilot, lambda: len(table.first_screen) == len(wide), what="columns back")
    assert [c.label.plain for c in table.ordered_columns] == every
