"""k9s's range mark (ctrl+space; V too): every row from the last selected one to the cursor,
both included, in the table's order, added to the selection; the bulk actions then act on
exactly those."""

from __future__ import annotations

from tui_helpers import audit_actions, row_of, select, settled, table_keys, until
from tui_seed import OPERATOR

from awa_tui.tui.screens.confirm import ConfirmScreen
from awa_tui.tui.selection import marked_range


def marked(app) -> list[str]:
    """The rows the table shows as selected ("+ name"), read from its cells, in its order."""
    table = app.main.panel("schedules").table
    return [key for key in table_keys(app) if table.get_row(key)[0].plain == f"+ {key}"]


def test_a_range_runs_from_the_anchor_to_the_cursor_either_way():
    order = ["a", "b", "c", "d", "e"]
    assert marked_range(order, "b", "d") == ["b", "c", "d"]
    assert marked_range(order, "d", "b") == ["b", "c", "d"]
    assert marked_range(order, "c", "c") == ["c"]
    assert marked_range(order, None, "c") == ["c"]
    assert marked_range(order, "gone", "c") == ["c"]  # the last selected row is no longer listed


async def test_mark_row_2_move_to_row_5_range_marks_rows_2_to_5(console):
    app, pilot = console
    assert table_keys(app) == ["billing.nightly-invoice", "cleanup.tmp-files", "crm.contact-sync", "legacy.export",
                               "metrics.rollup", "payments.settlement-reconciliation-eu-west", "reports.hourly",
                               "weekly.digest"]
    select(app, "cleanup.tmp-files")  # row 2
    await pilot.press("space")  # selects it; the cursor moves to row 3
    await pilot.press("j", "j")  # row 5
    assert app.main.panel("schedules").table.selected_key == "metrics.rollup"
    await pilot.press("ctrl+@")  # what ctrl+space sends through SSH and tmux
    assert marked(app) == ["cleanup.tmp-files", "crm.contact-sync", "legacy.export", "metrics.rollup"]
    assert app.main.panel("schedules").table.selected_key == "metrics.rollup"  # the cursor stays
    # A second range, from the end of the first (the row last selected) down to row 7: in union.
    await pilot.press("j", "j", "ctrl+space")
    assert marked(app) == ["cleanup.tmp-files", "crm.contact-sync", "legacy.export", "metrics.rollup",
                           "payments.settlement-reconciliation-eu-west", "reports.hourly"]
    title = str(app.main.panel("schedules").query_one(".panel-title").content)
    assert "6 SELECTED" in title


async def test_a_range_with_nothing_selected_marks_the_cursor_row_then_runs_up_from_it(console):
    app, pilot = console
    select(app, "legacy.export")  # row 4
    await pilot.press("V")
    assert marked(app) == ["legacy.export"]
    await pilot.press("k", "k", "V")  # row 2: the range runs up to it
    assert marked(app) == ["cleanup.tmp-files", "crm.contact-sync", "legacy.export"]
    # A separate run: space on row 7 is the new start, the range joins the earlier one.
    select(app, "reports.hourly")
    await pilot.press("space", "V")  # space moves the cursor to row 8
    assert marked(app) == ["cleanup.tmp-files", "crm.contact-sync", "legacy.export", "reports.hourly",
                           "weekly.digest"]
    await pilot.press("escape")  # clears the selection and the start of a range
    select(app, "metrics.rollup")
    await pilot.press("V")
    assert marked(app) == ["metrics.rollup"]


async def test_a_range_follows_the_order_shown(console):
    """Sorted the other way, rows 2-4 are other schedules: the range is the rows between on
    screen, not between in name order."""
    app, pilot = console
    await pilot.press("O")
    await until(pilot, lambda: table_keys(app)[0] == "weekly.digest", what="reversed")
    select(app, "reports.hourly")  # row 2
    await pilot.press("space", "j", "V")  # row 4
    assert marked(app) == ["reports.hourly", "payments.settlement-reconciliation-eu-west", "metrics.rollup"]


async def test_a_bulk_pause_after_a_range_pauses_exactly_those_schedules(console, conn):
    app, pilot = console
    names = ["crm.contact-sync", "legacy.export", "metrics.rollup", "payments.settlement-reconciliation-eu-west"]
    others = [n for n in table_keys(app) if n not in names]
    assert [row_of(conn, n)["paused_at"] for n in names] == [None] * 4  # all active: each one is paused
    paused_before = {n: row_of(conn, n)["paused_at"] for n in others}
    before = len(audit_actions(conn))
    select(app, "crm.contact-sync")  # row 3
    await pilot.press("space", "j", "j", "ctrl+@")  # row 6
    await pilot.press("s")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="one confirmation")
    assert dict(app.screen.details)["Target"] == (
        "4 schedules: crm.contact-sync, legacy.export, metrics.rollup and 1 more")
    await pilot.press("y")
    await until(pilot, lambda: len(audit_actions(conn)) == before + 4, what="four audit rows")
    await settled(pilot, app)
    assert [row_of(conn, n)["paused_by"] for n in names] == [OPERATOR] * 4
    assert {n: row_of(conn, n)["paused_at"] for n in others} == paused_before  # nothing else touched
    assert audit_actions(conn)[before:] == [(OPERATOR, "pause", n) for n in names]
    assert marked(app) == []  # done: the selection is cleared


async def test_help_lists_the_range_mark(console):
    from test_keymap import rendered

    from awa_tui.tui.screens.help import HelpScreen, help_table

    app, pilot = console
    await pilot.press("question_mark")
    await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
    lines = rendered(help_table(app.screen.allowed, app.screen.keys)).splitlines()
    assert [" ".join(line.split()) for line in lines if "to the cursor" in line] == [
        "ctrl+space, V select every row from the last selected one to the cursor, added to the selection (none "
        "selected yet: the cursor's row)"]
