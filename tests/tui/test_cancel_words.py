"""A cancelled dialog says what was not done once: the verb and the target."""

from __future__ import annotations

from tui_helpers import notes, select, until

from awa_tui.tui.screens.confirm import ConfirmScreen


async def test_cancel_names_the_action_once(console):
    app, pilot = console
    select(app, "metrics.rollup")
    await pilot.press("t")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the trigger dialog")
    await pilot.press("n")
    await until(pilot, lambda: notes(app), what="the toast")
    assert notes(app) == ["cancelled: trigger schedule metrics.rollup, nothing was done"]
