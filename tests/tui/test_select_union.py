"""`*` adds the listed rows to the selection: a second filter's rows join the first's
(esc clears it); `paused_by:` filters by who paused a schedule."""

from __future__ import annotations

from tui_helpers import table_keys, until


async def test_star_under_a_second_filter_adds_to_the_selection(console):
    app, pilot = console
    panel = app.main.panel("schedules")
    await pilot.press("slash", *"owner:billing", "enter")
    await until(pilot, lambda: table_keys(app) == ["billing.nightly-invoice", "legacy.export"], what="billing's")
    await pilot.press("asterisk")
    await pilot.press("slash", "ctrl+u", *"paused_by:alice@ops", "enter")
    await until(pilot, lambda: table_keys(app) == ["cleanup.tmp-files"], what="alice's paused")
    await pilot.press("asterisk")
    assert sorted(panel.selected) == ["billing.nightly-invoice", "cleanup.tmp-files", "legacy.export"]
    await pilot.press("escape")
    assert panel.selected == {}


async def test_the_bulk_dialog_lists_every_target(console):
    """The target line names three and counts the rest; the dialog lists them all."""
    from test_filters_console import ALL

    from awa_tui.tui.screens.confirm import ConfirmScreen

    app, pilot = console
    await pilot.press("asterisk", "t")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the bulk trigger dialog")
    assert dict(app.screen.details)["Target"] == (
        "8 schedules: billing.nightly-invoice, cleanup.tmp-files, crm.contact-sync and 5 more")
    listed = app.screen.query_one("#dialog-list").query_one("Static")
    assert str(listed.render()) == ", ".join(ALL)
