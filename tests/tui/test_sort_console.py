"""The sort column and direction are marked in the header; clicking a header sorts by it."""

from __future__ import annotations

from tui_helpers import settled, table_keys, until


def header(app) -> list[str]:
    return [c.label.plain for c in app.main.panel("schedules").table.ordered_columns]


async def test_header_marks_the_sort_and_a_click_sorts(console):
    app, pilot = console
    panel = app.main.panel("schedules")
    await until(pilot, lambda: header(app)[0] == "NAME ↑", what="name marked")
    assert header(app)[1:3] == ["STATE", "NEXT FIRE"]
    await pilot.click("#schedules-table", offset=(30, 0))  # the STATE header
    await until(pilot, lambda: panel.sort == "state", what="sorted by state")
    assert header(app)[:2] == ["NAME", "STATE ↑"]
    await settled(pilot, app)
    await pilot.click("#schedules-table", offset=(30, 0))  # again: reversed
    await until(pilot, lambda: panel.descending, what="reversed")
    assert header(app)[1] == "STATE ↓"
    await pilot.press("O")
    await until(pilot, lambda: not panel.descending, what="O reverses back")
    assert header(app)[1] == "STATE ↑"
    await settled(pilot, app)
    assert len(table_keys(app)) == 8


async def test_clicking_a_panel_tab_switches_to_it(console):
    from textual.widgets import ContentSwitcher

    app, pilot = console
    # "[1 Schedules]  2 Owners   3 Runtimes ...": x=17 is inside " 2 Owners ".
    await pilot.click("#panel-bar", offset=(17, 0))
    await until(pilot, lambda: app.main.query_one(ContentSwitcher).current == "panel-owners", what="owners")
    assert app.active_panel == "owners"
    await pilot.click("#panel-bar", offset=(30, 0))  # " 3 Runtimes "
    await until(pilot, lambda: app.active_panel == "runtimes", what="runtimes")
