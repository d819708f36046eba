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
    # The STATE header: NAME takes 31 cells at 120 columns (22, the 7 the first screen has to
    # spare for its longest name, and its padding; 2 are the vertical scrollbar's).
    assert [c.get_render_width(app.main.panel("schedules").table)
            for c in app.main.panel("schedules").table.ordered_columns[:2]] == [31, 18]
    await pilot.click("#schedules-table", offset=(36, 0))
    await until(pilot, lambda: panel.sort == "state", what="sorted by state")
    assert header(app)[:2] == ["NAME", "STATE ↑"]
    await settled(pilot, app)
    await pilot.click("#schedules-table", offset=(36, 0))  # again: reversed
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


RT1, RT2, RT3 = ("6f1c2a9e-0000-4000-8000-000000000001", "0b7d4e21-0000-4000-8000-000000000002",
                 "c3a0ffee-0000-4000-8000-000000000003")


async def test_o_sorts_any_panel_by_any_column_and_keeps_it_across_refreshes(console):
    from awa_tui.tui.screens.sort import SortScreen

    app, pilot = console
    await pilot.press("3")
    await settled(pilot, app)
    assert table_keys(app, "runtimes") == [RT1, RT2, RT3]
    await pilot.press("o")
    await until(pilot, lambda: isinstance(app.screen, SortScreen), what="the sort menu")
    labels = [o.prompt for o in app.screen.query_one("#sort-options").options]
    assert labels[:3] == ["INSTANCE", "ROLE", "STATE"] and "PID" in labels
    await pilot.press(*["down"] * labels.index("PID"), "enter")
    await until(pilot, lambda: table_keys(app, "runtimes") == [RT3, RT1, RT2], what="by pid: 777, 4242, 5151")
    table = app.main.panel("runtimes").table
    assert [c.label.plain for c in table.ordered_columns if c.key.value == "pid"] == ["PID ↑"]
    await settled(pilot, app)
    assert table_keys(app, "runtimes") == [RT3, RT1, RT2]  # a refresh keeps the operator's order
    await pilot.press("O")
    await until(pilot, lambda: table_keys(app, "runtimes") == [RT2, RT1, RT3], what="reversed")
