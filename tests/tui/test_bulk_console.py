"""Bulk actions from the console: space / * / ctrl+a select, one confirmation stating the
count, the first names, the database and the operator; Client.bulk writes one audit row
per schedule. Adopt-declared from the owners panel; the resume preview in the dialog."""

from __future__ import annotations

from rich.console import Console as RichConsole
from tui_helpers import audit_actions, notes, row_of, select, settled, table_keys, until
from tui_seed import DB_LABEL, OPERATOR

from awa_tui.tui.screens.confirm import ConfirmScreen


def plain(renderable) -> str:
    console = RichConsole(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def dialog_text(app) -> str:
    return "".join(plain(static.content) for static in app.screen.query("Static"))


def title(app) -> str:
    return str(app.main.panel("schedules").query_one(".panel-title").content)


async def test_space_selects_rows_and_s_pauses_them_with_one_confirmation(console, conn):
    app, pilot = console
    before = len(audit_actions(conn))
    select(app, "crm.contact-sync")
    await pilot.press("space", "space")  # selects it and the next row (the cursor moves down)
    assert "2 SELECTED" in title(app)
    table = app.main.panel("schedules").table
    assert table.get_row("crm.contact-sync")[0].plain == "+ crm.contact-sync"
    assert table.get_row("legacy.export")[0].plain == "+ legacy.export"
    await pilot.press("s")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="one confirmation")
    assert app.screen.heading == "Pause schedules?"
    text = dialog_text(app)
    for line in ("Target      2 schedules: crm.contact-sync, legacy.export", f"Database    {DB_LABEL}",
                 f"Operator    {OPERATOR}"):
        assert line in text, line
    await pilot.press("y")
    await until(pilot, lambda: row_of(conn, "crm.contact-sync")["paused_at"] is not None, what="paused")
    await settled(pilot, app)
    assert row_of(conn, "crm.contact-sync")["paused_by"] == OPERATOR
    assert row_of(conn, "legacy.export")["paused_by"] == OPERATOR
    assert audit_actions(conn)[before:] == [(OPERATOR, "pause", "crm.contact-sync"),
                                            (OPERATOR, "pause", "legacy.export")]
    assert "SELECTED" not in title(app)  # done: the selection is cleared
    assert table.get_row("crm.contact-sync")[0].plain == "crm.contact-sync"


async def test_star_selects_the_filtered_set_and_retire_asks_for_the_count(console, conn):
    app, pilot = console
    before = len(audit_actions(conn))
    await pilot.press("slash", *"queue:default -retired", "enter")
    await until(pilot, lambda: table_keys(app) == ["cleanup.tmp-files", "metrics.rollup"], what="filtered")
    await pilot.press("asterisk")
    assert "2 SELECTED" in title(app)
    await pilot.press("ctrl+d")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="retire dialog")
    assert "Type retire 2 to confirm:" in dialog_text(app)
    await pilot.press(*"retire 2", "enter")
    await until(pilot, lambda: row_of(conn, "metrics.rollup")["retired_at"] is not None, what="retired")
    assert row_of(conn, "cleanup.tmp-files")["retired_by"] == OPERATOR
    assert audit_actions(conn)[before:] == [(OPERATOR, "retire", "cleanup.tmp-files"),
                                            (OPERATOR, "retire", "metrics.rollup")]


async def test_escape_clears_the_selection_before_the_filter(console):
    app, pilot = console
    await pilot.press("ctrl+a")
    assert "8 SELECTED" in title(app)
    await pilot.press("escape")
    assert "SELECTED" not in title(app)


async def test_owners_a_adopts_every_unowned_schedule_the_manifest_declares(console, conn):
    app, pilot = console
    before = len(audit_actions(conn))
    await pilot.press("2")
    await settled(pilot, app)
    select(app, "billing", "owners")
    await pilot.press("a")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="adopt-declared dialog")
    assert app.screen.heading == "Adopt every unowned schedule billing declares?"
    assert "Would adopt 1 schedule: payments.settlement-reconciliation-eu-west." in dialog_text(app)
    await pilot.press("y")
    await until(pilot, lambda: row_of(conn, "payments.settlement-reconciliation-eu-west")["owner"] == "billing",
                what="adopted")
    assert [a[1:] for a in audit_actions(conn)[before:]] == [("adopt", "payments.settlement-reconciliation-eu-west")]


async def test_resume_dialog_shows_the_resume_preview(console):
    app, pilot = console
    select(app, "cleanup.tmp-files")  # paused since 11:20, coalesce
    await pilot.press("s")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="resume dialog")
    assert app.screen.heading == "Resume schedule?"
    assert plain(app.screen.query_one("#dialog-note").content) == (
        "coalesce: resuming fires once now, for the latest due instant 2025-03-08T12:00:00Z "
        "(earlier missed instants are not replayed)\n")
    await pilot.press("n")


async def test_a_bulk_action_names_what_it_skipped_and_why(console, conn):
    app, pilot = console
    select(app, "cleanup.tmp-files")  # already paused by alice@ops
    await pilot.press("space")
    select(app, "metrics.rollup")
    await pilot.press("space", "s")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="one confirmation")
    assert app.screen.heading == "Pause schedules?"  # not all paused: pause, the paused one is skipped
    await pilot.press("y")
    await until(pilot, lambda: row_of(conn, "metrics.rollup")["paused_at"] is not None, what="paused")
    await until(pilot, lambda: any(n.startswith("pause: 1 done") for n in notes(app)), what="the result")
    assert [n for n in notes(app) if n.startswith("pause: ")] == [
        f"pause: 1 done, 1 skipped (cleanup.tmp-files: already paused (by alice@ops)) (as {OPERATOR}; "
        "see audit log: l)"]
    assert row_of(conn, "cleanup.tmp-files")["paused_by"] == "alice@ops"
