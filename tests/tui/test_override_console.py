"""Issue 16 in the console: the override form (e), its confirmation, the OVERRIDDEN row
with the code's values beside the effective ones, reset (E), and bad input refused in
one line with nothing written. Real database, Textual pilot, snapshots."""

from __future__ import annotations

from typing import Any

from textual.widgets import Input
from tui_helpers import audit_actions, notes, ready, row_of, select, settled, until
from tui_seed import OPERATOR

from awa_tui import Client
from awa_tui.engine.actions.overrides import OverrideRequest
from awa_tui.tui.panels.schedules import overridden_text, state_cell
from awa_tui.tui.screens.confirm import ConfirmScreen
from awa_tui.tui.screens.override import OverrideScreen


async def _form(pilot: Any, app: Any, name: str) -> OverrideScreen:
    select(app, name)
    await pilot.press("e")
    return await until(pilot, lambda: isinstance(app.screen, OverrideScreen) and app.screen, what="override form")


def _fill(form: OverrideScreen, **values: str) -> None:
    for key, value in values.items():
        form.query_one(f"#override-{key}", Input).value = value


async def test_override_then_reset_through_the_console(console, conn):
    app, pilot = console
    form = await _form(pilot, app, "metrics.rollup")
    assert {k: form.query_one(f"#override-{k}", Input).value for k in ("cron", "timezone", "queue", "priority")} == {
        "cron": "*/5 * * * *", "timezone": "UTC", "queue": "default", "priority": "2"}
    _fill(form, cron="H/10 * * * *", queue="urgent")
    await pilot.press("enter")
    dialog = await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, what="confirm")
    assert dialog.heading == "Override schedule?"
    assert dict(dialog.details)["Consequence"] == (
        "Sets cron_expr H/10 * * * *, queue urgent. The code's values are kept: sync and reconciliation never "
        "overwrite an override; reset (E) returns to the code definition.")
    await pilot.press("y")
    await until(pilot, lambda: row_of(conn, "metrics.rollup")["overridden"] is not None, what="override")
    row = row_of(conn, "metrics.rollup")
    assert (row["cron_expr"], row["cron_written"], row["queue"]) == ("1,11,21,31,41,51 * * * *", "H/10 * * * *",
                                                                     "urgent")
    assert row["overridden"] == {"cron_expr": "*/5 * * * *", "cron_written": None, "queue": "default"}
    assert audit_actions(conn)[-1] == (OPERATOR, "override", "metrics.rollup")
    await settled(pilot, app)
    shown = app.main.panel("schedules").rows["metrics.rollup"]
    assert state_cell(shown).plain == "OVERRIDDEN"
    assert overridden_text(shown) == (
        "OVERRIDDEN cron_expr 1,11,21,31,41,51 * * * * (code: */5 * * * *), queue urgent (code: default) · reset: E")
    await pilot.press("E")
    dialog = await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, what="confirm reset")
    assert dict(dialog.details)["Consequence"] == (
        "Ends the override: back to the code definition (cron_expr */5 * * * *, queue default).")
    await pilot.press("y")
    await until(pilot, lambda: row_of(conn, "metrics.rollup")["overridden"] is None, what="reset")
    row = row_of(conn, "metrics.rollup")
    assert (row["cron_expr"], row["cron_written"], row["queue"]) == ("*/5 * * * *", None, "default")
    assert audit_actions(conn)[-1] == (OPERATOR, "override_reset", "metrics.rollup")


async def test_bad_values_are_one_line_and_write_nothing(console, conn):
    app, pilot = console
    before = row_of(conn, "metrics.rollup")
    form = await _form(pilot, app, "metrics.rollup")
    _fill(form, args="{nope")
    await pilot.press("enter")
    error = form.query_one("#dialog-error").render()
    assert str(error) == "args: not valid JSON (Expecting property name enclosed in double quotes): '{nope'"
    assert app.screen is form  # still open: nothing was sent
    _fill(form, args="", priority="9")
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm")
    await pilot.press("y")
    await until(pilot, lambda: any(n.startswith("priority:") for n in notes(app)), what="refusal")
    assert [n for n in notes(app) if n.startswith("priority:")] == ["priority: must be an integer 1..4, got 9"]
    assert row_of(conn, "metrics.rollup") == before


async def test_reset_of_a_row_not_overridden_is_said_at_once(console, conn):
    app, pilot = console
    select(app, "metrics.rollup")
    await pilot.press("E")
    await until(pilot, lambda: notes(app), what="notice")
    assert notes(app) == ["metrics.rollup is not overridden; nothing to reset"]
    assert not isinstance(app.screen, ConfirmScreen)


def _overridden(seeded: str) -> None:
    with Client(seeded, operator="alice@ops") as client:
        client.actions.override("metrics.rollup", OverrideRequest(cron="H/10 * * * *", queue="urgent", priority=1))


def test_overridden_row_snapshot(snap_compare, console_factory, seeded):
    _overridden(seeded)

    async def run_before(pilot) -> None:
        app = pilot.app
        await ready(pilot, app)
        select(app, "metrics.rollup")
        await settled(pilot, app)
        app.clear_notifications()
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=(120, 36), run_before=run_before)


def test_override_form_snapshot(snap_compare, console_factory, seeded):
    _overridden(seeded)

    async def run_before(pilot) -> None:
        app = pilot.app
        await ready(pilot, app)
        select(app, "metrics.rollup")
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, OverrideScreen), what="override form")
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=(80, 24), run_before=run_before)


def test_detail_shows_the_written_expression_and_the_code_values(seeded):
    from rich.console import Console
    from tui_seed import NOW

    from awa_tui.tui.screens.detail import definition

    _overridden(seeded)
    with Client(seeded, operator="alice@ops") as client:
        info = client.reads.get_schedule("metrics.rollup")
    console = Console(width=200, record=True)
    console.print(definition(info, NOW))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    assert "written    H/10 * * * * (H, resolved for this name)" in lines
    assert ("OVERRIDDEN cron_expr code: */5 * * * *, priority code: 2, queue code: default  (reset: E)"
            in lines)
