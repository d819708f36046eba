"""Columns that do not fit are scrolled to, never left out (issue 39): at 80x24 right
brings them into view beside the frozen name, w (wide) shows every column's whole content
and back, the cursor stays on its row across the toggle and a refresh, and a w typed
into a filter is text. Values are the seed's (tui_seed.py) or inserted here, read back
from the rendered table and the screen."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from psycopg.types.json import Jsonb
from test_console_defects import EXTRA, add_schedules
from textual import events
from textual.command import CommandPalette
from textual.geometry import Region
from textual.widgets import OptionList
from tui_helpers import burst, screen_text, select, settled, table_keys, until
from tui_seed import NOW

from awa_tui.tui.widgets.keyed_table import KeyedTable

LONG_NAME = "analytics.warehouse-nightly-rollup-of-every-tenant-eu-west-1"  # 60 characters
LONG_ERROR = "OperationalError: could not connect to warehouse-eu-west-1:5432 ok"  # 66 characters


def rendered(table: KeyedTable) -> list[str]:
    """The table's lines as drawn (header first), those the scrollbars leave in view."""
    width, height = table.scrollable_content_region.size
    return ["".join(segment.text for segment in strip) for strip in table.render_lines(Region(0, 0, width, height))]


def cell_under(table: KeyedTable, header: str, row: int) -> str:
    """The text drawn in row `row` (0: the first row) under the header `header`, from that
    column's left edge to the next one's (two spaces at least part headers: a cell's padding
    either side), so a cut cell shows its ellipsis."""
    lines = rendered(table)
    head = lines[0]
    start = head.index(f" {header}")
    after = start + 1 + len(header)
    following = re.search(r"  +(?=\S)", head[after:])
    end = after + following.end() - 1 if following else len(head)
    return lines[1 + row][start:end].strip()


def on_screen(app: Any) -> str:
    return html.unescape(screen_text(app))


def add_long_job(conn: Any) -> int:
    """A schedule with a 60-character name and a failed job of it with a 66-character error."""
    assert len(LONG_NAME) == 60 and len(LONG_ERROR) == 66
    with conn.transaction():
        conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, args) "
                     "VALUES (%s, '0 3 * * *', 'UTC', 'ops.extra', 'default', '{}')", (LONG_NAME,))
        row = conn.execute(
            "INSERT INTO awa.jobs (kind, queue, state, attempt, run_at, created_at, metadata, errors) "
            "VALUES ('ops.extra', 'default', 'retryable', 1, %s, %s, %s, %s) RETURNING id",
            (NOW, NOW, Jsonb({"cron_name": LONG_NAME, "cron_fire_time": "2025-03-08T12:00:00Z"}),
             Jsonb([{"attempt": 1, "error": LONG_ERROR, "at": "2025-03-08T12:00:01+00:00"}]))).fetchone()
    return int(row["id"])


@pytest.mark.console(size=(80, 24))
async def test_at_80x24_right_reaches_a_column_past_the_edge_and_the_name_stays(console):
    app, pilot = console
    table = app.main.panel("schedules").table
    assert table_keys(app)[0] == "billing.nightly-invoice"
    assert " ZONE " not in rendered(table)[0]  # past the right edge at first
    # One column a press: STATE, NEXT FIRE, HEALTH, LAST RESULT, FAILS 24h, LAST 20 INSTANTS,
    # NEXT (UTC), LAST FIRE and LATE out of the way; ZONE (18 with its padding) then fits the
    # 54 cells beside NAME (24) after CRON (16) and MEANING (19): 78, the scrollbar's room left.
    presses = 9
    await pilot.press(*["right"] * presses)
    lines = rendered(table)
    assert lines[0].split()[2:5] == ["CRON", "MEANING", "ZONE"]
    assert lines[0].startswith(" NAME ↑ ")  # the name column stays frozen
    assert lines[1].startswith(" billing.nightly-invoi… ")  # cut at 22
    assert cell_under(table, "ZONE", 0) == "America/New_York"  # the seed's zone of billing.nightly-invoice
    assert "America/New_York" in on_screen(app)
    # Left goes back one column at a time, to the first screen.
    for _ in range(presses):
        await pilot.press("left")
    assert table.scroll_offset.x == 0
    assert rendered(table)[0].split() == ["NAME", "↑", "STATE", "NEXT", "FIRE", "HEALTH", "LAST", "RESULT"]


@pytest.mark.console(size=(80, 24))
async def test_the_mouse_scrolls_sideways_too(console):
    """A horizontal wheel (or shift+wheel) over the list, as a terminal sends it."""
    app, pilot = console
    table = app.main.panel("schedules").table
    for _ in range(40):
        table.post_message(events.MouseScrollRight(table, 10, 3, 0, 0, 0, False, False, False))
    await until(pilot, lambda: table.scroll_offset.x >= 40, what="scrolled by the wheel")
    lines = rendered(table)
    assert lines[0].startswith(" NAME ↑ ") and " STATE " not in lines[0]
    assert lines[1].startswith(" billing.nightly-invoi… ")  # cut at 22


@pytest.mark.console(size=(80, 24))
async def test_owner_column_past_the_edge_shows_the_owner(console):
    app, pilot = console
    table = app.main.panel("schedules").table
    select(app, "metrics.rollup")
    # 11 presses: ZONE (18), POLICY (10) and OWNER (10) beside NAME, then QUEUE and the rest.
    await pilot.press(*["right"] * 11)
    assert rendered(table)[0].split()[2:5] == ["ZONE", "POLICY", "OWNER"]
    row = table_keys(app).index("metrics.rollup")
    assert cell_under(table, "OWNER", row) == "platform"  # the seed's owner of metrics.rollup
    assert rendered(table)[1 + row].startswith(" metrics.rollup ")
    assert table.selected_key == "metrics.rollup"  # sideways moves no row


async def test_wide_shows_a_long_name_and_error_whole_and_back_cuts_them(console_factory, conn):
    job = add_long_job(conn)
    app = console_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.apply_times, what="first paint")
        await pilot.press("6")
        panel = app.main.panel("jobs")
        await until(pilot, lambda: table_keys(app, "jobs")[:1] == [str(job)], what="the new job, newest first")
        table = panel.table
        await pilot.press("j")  # the summary line shows job 10, not the long one
        assert table.selected_key == "10"
        # Fitted to 78 (80 less the scrollbar's room): SCHEDULE cut at 20 and given the 8 cells
        # the first screen leaves (JOB 5, STATE 9, LAST ERROR 28: 70 with padding): 27
        # characters and an ellipsis.
        assert cell_under(table, "SCHEDULE", 0) == LONG_NAME[:27] + "…"
        assert cell_under(table, "LAST ERROR", 0) == LONG_ERROR[:27] + "…"
        await pilot.press("w")
        assert table.wide
        assert cell_under(table, "SCHEDULE", 0) == LONG_NAME
        assert LONG_NAME in on_screen(app)
        await pilot.press("right", "right")  # SCHEDULE and STATE out of the way
        assert rendered(table)[0].split()[:3] == ["JOB", "LAST", "ERROR"]
        assert cell_under(table, "LAST ERROR", 0) == LONG_ERROR
        assert LONG_ERROR in on_screen(app)
        assert rendered(table)[1].startswith(f" {job} ")  # JOB stays frozen
        await pilot.press("w")
        assert not table.wide
        assert rendered(table)[0].split()[:3] == ["JOB", "LAST", "ERROR"]  # the column in view stays
        await pilot.press("left", "left")
        assert table.scroll_offset.x == 0
        assert cell_under(table, "SCHEDULE", 0) == LONG_NAME[:27] + "…"
        assert LONG_NAME not in on_screen(app)


async def test_the_cursor_stays_on_its_schedule_across_wide_and_a_refresh(console_factory, conn):
    add_long_job(conn)
    app = console_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.apply_times, what="first paint")
        await settled(pilot, app)
        table = app.main.panel("schedules").table
        keys = table_keys(app)
        assert keys[0] == LONG_NAME  # "analytics..." sorts first
        panel = app.main.panel("schedules")
        select(app, "crm.contact-sync")
        await pilot.press("space")  # selected (marked "+ "), the cursor one row down
        select(app, "metrics.rollup")
        await pilot.pause()
        row = table.cursor_row
        assert row == keys.index("metrics.rollup") == 5
        for wide in (True, False, True):
            await pilot.press("w")
            assert table.wide is wide
            assert (table.selected_key, table.cursor_row) == ("metrics.rollup", row)
            await settled(pilot, app)  # a refresh: the same rows, the same widths
            assert (table.selected_key, table.cursor_row) == ("metrics.rollup", row)
            assert table.wide is wide
            assert list(panel.selected) == ["crm.contact-sync"]
            assert rendered(table)[1 + keys.index("crm.contact-sync")].startswith(" + crm.contact-sync ")
        assert cell_under(table, "NAME ↑", 0) == LONG_NAME  # still wide after the refresh
        assert rendered(table)[1 + row].startswith(" metrics.rollup ")


async def far_down_then_wide(console_factory: Any, conn: Any) -> tuple[int, int, KeyedTable, list[str]]:
    """30 more schedules at 80x24, the cursor 5 rows above the last, then w: (the first
    row in view before w, after w, the table, its lines after)."""
    add_schedules(conn, EXTRA)
    app = console_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.apply_times, what="first paint")
        await settled(pilot, app)
        table = app.main.panel("schedules").table
        await pilot.press("end")
        await until(pilot, lambda: table.selected_key == EXTRA[-1], what="the last row")
        await pilot.press(*["up"] * 5)
        assert table.selected_key == EXTRA[-6]
        await pilot.pause()
        before = table.scroll_offset.y
        await pilot.press("w")
        await pilot.pause()
        return before, table.scroll_offset.y, table, rendered(table)


async def test_wide_keeps_the_rows_in_view_far_down_the_list(console_factory, conn):
    before, after, table, lines = await far_down_then_wide(console_factory, conn)
    assert before == 38 - (len(lines) - 1) > 0  # 38 rows, the last at the bottom of the view
    assert after == before  # the same rows in view
    assert lines[-1].startswith(f" {EXTRA[-1]} ")
    assert table.selected_key == EXTRA[-6]


async def test_control_without_restoring_the_view_the_rows_move(console_factory, conn, monkeypatch):
    """Negative control: the relayout without its view restored (DataTable.clear() scrolls
    to the top, then brings the cursor row back to the bottom edge): the rows in view move
    under the operator's eyes; the test above catches that."""
    monkeypatch.setattr(KeyedTable, "_restore_view", lambda self, anchor, top: None)
    before, after, table, lines = await far_down_then_wide(console_factory, conn)
    assert before > 0 and after != before
    assert not lines[-1].startswith(f" {EXTRA[-1]} ")
    assert table.selected_key == EXTRA[-6]


async def test_the_first_screen_leaves_the_vertical_scrollbar_its_room(console_factory, conn):
    add_schedules(conn, EXTRA)  # 38 rows: more than 80x24 shows, a vertical scrollbar
    app = console_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.apply_times, what="first paint")
        await settled(pilot, app)
        table = app.main.panel("schedules").table
        await until(pilot, lambda: table.show_vertical_scrollbar, what="the vertical scrollbar")
        assert table.scrollable_content_region.width == 78
        # 22 + 16 + 11 + 8 + 11 and their padding: 78, nothing to spare for NAME (24 without the scrollbar).
        await until(pilot, lambda: [c.width for c in table.ordered_columns[:5]] == [22, 16, 11, 8, 11],
                    what="the columns fitted to 78")
        assert rendered(table)[0].rstrip().endswith(" LAST RESULT")


async def test_w_typed_in_the_filter_is_text(console):
    app, pilot = console
    table = app.main.panel("schedules").table
    box = app.main.panel("schedules").query_one("#filter")
    await pilot.press("slash", "w")
    await until(pilot, lambda: box.value == "w", what="the typed w")
    assert not table.wide
    burst(app, "ww")  # a burst too
    await until(pilot, lambda: box.value == "www", what="the burst")
    assert not table.wide
    # Control: the same key on the list toggles wide.
    await pilot.press("escape")
    table.focus()
    await pilot.pause()
    await pilot.press("w")
    assert table.wide


async def test_w_is_in_the_help_not_the_footer(console):
    """Left out of the footer so `q quit` keeps its words at 80 columns; help lists it."""
    app, pilot = console
    assert "wide" not in str(app.main.panel("schedules").query_one("#schedules-summary").content)
    assert "wide" not in on_screen(app)
    await pilot.press("question_mark")
    await until(pilot, lambda: "wide columns" in on_screen(app), what="the help's line for w")


async def test_wide_runs_from_the_palette_found_by_its_word(console):
    """Typing "wide" in the command palette finds the toggle; run, it acts on the list in
    front of the operator (here the queues panel's), which stays on screen; again: fitted."""
    app, pilot = console
    await pilot.press("5")
    await settled(pilot, app)
    table = app.main.panel("queues").table
    for wide in (True, False):
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
        await pilot.press(*"wide")
        options = app.screen.query_one(OptionList)
        await until(pilot, lambda hits=options: hits.option_count > 0, what="the palette's hits")
        first = str(options.get_option_at_index(0).prompt)
        assert first.startswith("columns: wide / fitted"), first
        await pilot.press("enter")
        await until(pilot, lambda want=wide: table.wide is want, what=f"wide {wide} from the palette")
        assert app.screen is app.main and app.active_panel == "queues"
    assert not app.main.panel("schedules").table.wide  # only the list in front of the operator
