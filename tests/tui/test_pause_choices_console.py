"""S65 from the console's pause key: the confirmation offers an optional end (an instant or
a duration, the CLI's reading of --until) and a reason; the pause is audited, and the
summary then reads as the CLI's list does. A bad end is said under its field and writes
nothing; one the engine refuses (in the past) is one line, nothing written either."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from textual.widgets import Input, Static
from tui_helpers import audit_actions, notes, row_of, select, settled, until
from tui_seed import OPERATOR

from awa_tui.tui.formatting import utc
from awa_tui.tui.screens.confirm import ConfirmScreen

NAME = "metrics.rollup"  # active in the seed


async def _dialog(pilot: Any, app: Any) -> ConfirmScreen:
    select(app, NAME)
    await pilot.press("s")
    return await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, what="the dialog")


def _note(dialog: ConfirmScreen, key: str) -> str:
    return str(dialog.query_one(f"#choice-{key}-note", Static).render())


async def test_pause_until_an_instant_with_a_reason_typed_in_the_dialog(console: Any, conn: Any) -> None:
    app, pilot = console
    dialog = await _dialog(pilot, app)
    assert dialog.focused is dialog.query_one("#no")  # a stray enter still cancels
    await pilot.press("tab")
    assert dialog.focused is dialog.query_one("#choice-until", Input)
    await pilot.press(*"2030-01-01T14:00Z")
    assert _note(dialog, "until") == "ends 2030-01-01 14:00:00Z; the leader resumes it then and its policy applies"
    await pilot.press("tab", *"db migration", "enter")
    await until(pilot, lambda: row_of(conn, NAME)["paused_at"] is not None, what="the pause")
    row = row_of(conn, NAME)
    assert (row["paused_by"], row["paused_until"], row["pause_reason"]) == (
        OPERATOR, datetime(2030, 1, 1, 14, 0, tzinfo=UTC), "db migration")
    assert audit_actions(conn)[-1] == (OPERATOR, "pause", NAME)
    await until(pilot, lambda: any(n.startswith(f"paused {NAME}") for n in notes(app)), what="the result")
    assert f"paused {NAME} until 2030-01-01 14:00:00Z: db migration (as {OPERATOR}; see audit log: l)" in notes(app)
    await settled(pilot, app)
    summary = str(app.main.panel("schedules").query_one("#schedules-summary", Static).render())
    assert summary.startswith(f"{NAME}: PAUSED until 2030-01-01 14:00:00Z (in ")
    assert f" by {OPERATOR} since {utc(row['paused_at'])} (" in summary.splitlines()[0]
    assert ": db migration · " in summary.splitlines()[0]


async def test_pause_for_a_duration_ends_that_long_after_the_pause(console: Any, conn: Any) -> None:
    app, pilot = console
    dialog = await _dialog(pilot, app)
    dialog.query_one("#choice-until", Input).value = "2h"
    await pilot.pause()
    assert _note(dialog, "until") == ("ends 2h00m after the pause is made; the leader resumes it then and its "
                                      "policy applies")
    await pilot.press("y")  # the focus is on a button: y answers
    await until(pilot, lambda: row_of(conn, NAME)["paused_at"] is not None, what="the pause")
    row = row_of(conn, NAME)
    assert row["paused_until"] - row["paused_at"] == timedelta(hours=2)  # both the database's clock
    assert row["pause_reason"] is None


async def test_a_plain_pause_is_still_y(console: Any, conn: Any) -> None:
    app, pilot = console
    await _dialog(pilot, app)
    await pilot.press("y")
    await until(pilot, lambda: row_of(conn, NAME)["paused_at"] is not None, what="the pause")
    row = row_of(conn, NAME)
    assert (row["paused_until"], row["pause_reason"]) == (None, None)


async def test_a_bad_end_is_said_under_its_field_and_nothing_is_written(console: Any, conn: Any) -> None:
    app, pilot = console
    before = (row_of(conn, NAME), len(audit_actions(conn)))
    dialog = await _dialog(pilot, app)
    dialog.query_one("#choice-until", Input).value = "soon"
    await pilot.pause()
    assert _note(dialog, "until") == "until: expected a duration (90s, 2h, 1d) or an ISO-8601 instant, got 'soon'"
    await pilot.press("y")
    await pilot.pause()
    assert app.screen is dialog  # refused in the dialog: nothing was sent
    dialog.query_one("#choice-until", Input).value = "2020-01-01T00:00Z"  # read, but in the past
    await pilot.pause()
    await pilot.press("y")
    await until(pilot, lambda: any(n.startswith("until:") for n in notes(app)), what="the refusal")
    [said] = [n for n in notes(app) if n.startswith("until:")]
    assert said.startswith("until: 2020-01-01T00:00:00+00:00 is not in the future (now ")
    assert (row_of(conn, NAME), len(audit_actions(conn))) == before


async def test_a_selection_is_paused_with_the_same_end_and_reason(console: Any, conn: Any) -> None:
    app, pilot = console
    names = ["metrics.rollup", "weekly.digest"]  # both active in the seed
    for name in names:
        select(app, name)
        await pilot.press("space")
    await pilot.press("s")
    dialog = await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, what="the dialog")
    assert dialog.heading == "Pause schedules?"
    dialog.query_one("#choice-until", Input).value = "2030-01-01T14:00Z"
    dialog.query_one("#choice-reason", Input).value = "db migration"
    await pilot.press("y")
    await until(pilot, lambda: all(row_of(conn, n)["paused_at"] is not None for n in names), what="the pauses")
    assert [(row_of(conn, n)["paused_until"], row_of(conn, n)["pause_reason"]) for n in names] == [
        (datetime(2030, 1, 1, 14, 0, tzinfo=UTC), "db migration")] * 2
