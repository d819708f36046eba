"""Cells a refresh changed are lit until the next refresh (issue 39, k9s's habit): a schedule
changed in the database shows its changed cell reversed, a schedule new since the last
refresh every cell of its row; the first paint, a refresh that changed nothing, a filter
and a sort light nothing; the config file's `highlight_changes = false` turns it off.

The oracle is the cell as the table holds it (DataTable.get_cell) and its style, against
the row the test wrote; the seed's cells are unstyled in the columns read here (queue,
zone, policy) and none is reversed."""

from __future__ import annotations

from typing import Any

import pytest
from rich.style import Style
from rich.text import Text
from tui_helpers import settled, until

from awa_tui.tui.panels.schedules import SchedulesPanel
from awa_tui.tui.widgets.keyed_table import KeyedTable
from awa_tui.tui.widgets.lit import LitLive

LIT = Style(reverse=True)
PLAIN = Style()  # the seed's queue, zone and policy cells have no style of their own


def force(conn: Any, query: str, params: Any = None) -> None:
    """A hand edit with triggers off, as the seed writes its rows."""
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(query, params)


def style_of(table: KeyedTable, row: str, column: str) -> Style:
    value = table.get_cell(row, column)
    assert isinstance(value, Text), value
    return Style.parse(value.style) if isinstance(value.style, str) else value.style


def lit_cells(table: KeyedTable) -> set[tuple[str, str]]:
    """(row, column) of every lit cell the table holds: reversed Texts (the seed's cells have
    no reverse of their own) and lit live cells."""
    found = set()
    for row_key in table.rows:
        for column_key in table.columns:
            value = table.get_cell(row_key, column_key)
            if isinstance(value, LitLive) or (isinstance(value, Text) and style_of(table, row_key.value,
                                                                                    column_key.value).reverse):
                found.add((str(row_key.value), str(column_key.value)))
    return found


async def test_a_changed_cell_is_lit_until_the_next_refresh(console: Any, conn: Any) -> None:
    app, pilot = console
    table = app.main.panel("schedules").table
    # First paint and a refresh that changed nothing: nothing lit.
    assert lit_cells(table) == set()
    assert (str(table.get_cell("metrics.rollup", "queue")), style_of(table, "metrics.rollup", "queue")) == \
        ("default", PLAIN)

    force(conn, "UPDATE awa.cron_jobs SET queue = 'urgent' WHERE name = 'metrics.rollup'")
    await settled(pilot, app)
    assert (str(table.get_cell("metrics.rollup", "queue")), style_of(table, "metrics.rollup", "queue")) == \
        ("urgent", LIT)
    assert lit_cells(table) == {("metrics.rollup", "queue")}  # its other cells and the other rows: not lit

    await settled(pilot, app)  # the next refresh, nothing changed: back to plain
    assert (str(table.get_cell("metrics.rollup", "queue")), style_of(table, "metrics.rollup", "queue")) == \
        ("urgent", PLAIN)
    assert lit_cells(table) == set()


async def test_a_new_row_is_lit_whole(console: Any, conn: Any) -> None:
    app, pilot = console
    table = app.main.panel("schedules").table
    force(conn, "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, args) "
                "VALUES ('new.arrival', '0 3 * * *', 'UTC', 'ops.extra', 'default', '{}')")
    await settled(pilot, app)
    columns = [str(key.value) for key in table.columns]
    assert lit_cells(table) == {("new.arrival", column) for column in columns}
    assert style_of(table, "new.arrival", "name") == LIT
    assert style_of(table, "new.arrival", "zone") == LIT
    assert isinstance(table.get_cell("new.arrival", "next"), LitLive)  # a live cell, lit as it renders
    assert drawn_reversed(table, "new.arrival") == {"new.arrival": True, "active": True, "in 14h59m": True}
    await settled(pilot, app)
    assert lit_cells(table) == set()
    assert drawn_reversed(table, "new.arrival") == {"new.arrival": False, "active": False, "in 14h59m": False}


def drawn_reversed(table: KeyedTable, key: str) -> dict[str, bool]:
    """The row's first three cells as drawn on the terminal: their text and whether reversed."""
    line = table.render_line(1 + table.get_row_index(key))  # under the header
    words = [(segment.text.strip(), bool(segment.style and segment.style.reverse)) for segment in line]
    return dict([word for word in words if word[0]][:3])


async def test_a_filter_or_a_sort_lights_nothing(console: Any, conn: Any) -> None:
    app, pilot = console
    panel = app.main.panel("schedules")
    table = panel.table
    # A change in the database and a new filter at once: the rows of the new filter are
    # not compared with the old list's.
    force(conn, "UPDATE awa.cron_jobs SET queue = 'urgent' WHERE name = 'metrics.rollup'")
    await pilot.press("slash", *"owner:platform", "enter")
    await until(pilot, lambda: list(panel.rows) == ["metrics.rollup"], what="the filtered list")
    await settled(pilot, app)
    assert str(table.get_cell("metrics.rollup", "queue")) == "urgent"
    assert lit_cells(table) == set()
    # The same view refreshed: a change is lit.
    force(conn, "UPDATE awa.cron_jobs SET timezone = 'Europe/Paris' WHERE name = 'metrics.rollup'")
    await settled(pilot, app)
    assert lit_cells(table) == {("metrics.rollup", "zone")}

    await pilot.press("escape")  # the filter cleared: the other rows come back, not lit as new
    await until(pilot, lambda: len(panel.rows) == 8, what="the whole list")
    await settled(pilot, app)
    assert lit_cells(table) == set()

    force(conn, "UPDATE awa.cron_jobs SET missed_fire_policy = 'catch_up' WHERE name = 'metrics.rollup'")
    panel._sort_by("queue")  # the sort menu's choice: a new order read from the database
    await until(pilot, lambda: panel.view()[1] == "queue", what="the sort")
    await settled(pilot, app)
    assert str(table.get_cell("metrics.rollup", "policy")) == "catch_up"
    assert lit_cells(table) == set()


async def test_control_a_filter_compared_as_a_refresh_lights_the_rows_it_brings_back(console: Any,
                                                                                    monkeypatch: Any) -> None:
    """Control: with one view for every filter, clearing the filter lights the seven rows
    it brings back as new (what the view in the comparison prevents)."""
    monkeypatch.setattr(SchedulesPanel, "view", lambda self: None)
    app, pilot = console
    panel = app.main.panel("schedules")
    await pilot.press("slash", *"owner:platform", "enter")
    await until(pilot, lambda: list(panel.rows) == ["metrics.rollup"], what="the filtered list")
    await pilot.press("escape")
    await until(pilot, lambda: len(panel.rows) == 8, what="the whole list")
    assert {row for row, _ in lit_cells(panel.table)} == set(panel.rows) - {"metrics.rollup"}


@pytest.mark.console(highlight_changes=False)
async def test_highlight_changes_off_lights_nothing(console: Any, conn: Any) -> None:
    app, pilot = console
    table = app.main.panel("schedules").table
    force(conn, "UPDATE awa.cron_jobs SET queue = 'urgent' WHERE name = 'metrics.rollup'")
    await settled(pilot, app)
    assert (str(table.get_cell("metrics.rollup", "queue")), style_of(table, "metrics.rollup", "queue")) == \
        ("urgent", PLAIN)
    assert lit_cells(table) == set()


async def test_other_panels_light_their_changes_too(console: Any, conn: Any) -> None:
    """Filled by the same table: the queues panel, a queue paused in the database."""
    app, pilot = console
    await pilot.press("5")
    await settled(pilot, app)
    table = app.main.panel("queues").table
    assert lit_cells(table) == set()
    assert [str(table.get_cell("mail", column)) for column in ("state", "by", "since")] == ["active", "-", "-"]
    conn.execute("INSERT INTO awa.queue_meta (queue, paused, paused_at, paused_by) "
                 "VALUES ('mail', true, '2025-03-08 11:59:00+00', 'bob@ops')")
    await settled(pilot, app)
    assert [str(table.get_cell("mail", column)) for column in ("state", "by", "since")] == \
        ["PAUSED", "bob@ops", "03-08 11:59:00"]
    assert lit_cells(table) == {("mail", "state"), ("mail", "by"), ("mail", "since")}
    assert style_of(table, "mail", "state") == Style.parse("bold yellow") + LIT
