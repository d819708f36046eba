"""Every mutation key, through its confirmation, against a real database: the target is
captured at keypress, re-checked at confirm, acted on with the operator label, audited,
and reported in a one-line notification."""

from __future__ import annotations

from typing import Any

from tui_helpers import audit_actions, notes, row_of, select, table_keys, until
from tui_seed import OPERATOR

from awa_tui.tui.screens.confirm import ConfirmScreen


async def confirm_open(pilot: Any, app: Any) -> ConfirmScreen:
    return await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, what="confirm dialog")


def dialog_text(screen: ConfirmScreen) -> str:
    return " ".join(f"{label} {value}" for label, value in screen.details)


async def test_pause_names_target_database_operator_and_consequence(console, conn):
    app, pilot = console
    select(app, "metrics.rollup")
    await pilot.press("s")
    dialog = await confirm_open(pilot, app)
    text = dialog_text(dialog)
    assert dialog.heading == "Pause schedule?"
    assert "schedule metrics.rollup" in text
    assert "awa@db.example:5432/awa" in text
    assert f"Operator {OPERATOR}" in text
    assert "No new fires until resumed" in text
    await pilot.press("y")
    await until(pilot, lambda: row_of(conn, "metrics.rollup")["paused_at"] is not None, what="pause")
    await until(pilot, lambda: any("paused metrics.rollup" in n for n in notes(app)), what="notification")
    row = row_of(conn, "metrics.rollup")
    assert row["paused_by"] == OPERATOR
    assert audit_actions(conn)[-1] == (OPERATOR, "pause", "metrics.rollup")


async def test_s_on_a_paused_schedule_resumes_it(console, conn):
    app, pilot = console
    select(app, "cleanup.tmp-files")
    await pilot.press("s")
    dialog = await confirm_open(pilot, app)
    assert dialog.heading == "Resume schedule?"
    assert dict(dialog.details)["Consequence"] == (
        "Clears the pause (by alice@ops). Its policy (coalesce) decides what fires for the paused period: "
        "coalesce fires once, catch_up each missed fire in order.")
    await pilot.press("y")
    await until(pilot, lambda: row_of(conn, "cleanup.tmp-files")["paused_at"] is None, what="resume")
    assert audit_actions(conn)[-1] == (OPERATOR, "resume", "cleanup.tmp-files")


async def test_n_and_escape_cancel_without_change(console, conn):
    app, pilot = console
    select(app, "metrics.rollup")
    for key in ("n", "escape"):
        await pilot.press("s")
        await confirm_open(pilot, app)
        await pilot.press(key)
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="dialog closed")
    await until(pilot, lambda: any("cancelled" in n for n in notes(app)), what="cancel notice")
    assert row_of(conn, "metrics.rollup")["paused_at"] is None
    assert len(audit_actions(conn)) == 3  # the seeded entries only


async def test_enter_pressed_at_once_in_a_confirm_dialog_cancels(console, conn):
    """A stray enter (the dialog opened under a typing operator) answers the safe "no"."""
    app, pilot = console
    select(app, "metrics.rollup")
    row_before, audit_before = row_of(conn, "metrics.rollup"), audit_actions(conn)
    await pilot.press("s")
    await confirm_open(pilot, app)
    await pilot.press("enter")
    await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="dialog closed")
    # Dismissed as cancelled: the console says so, and nothing reached the database.
    await until(pilot, lambda: notes(app) == ["cancelled: pause schedule metrics.rollup, nothing was done"],
                what="cancel notice")
    assert row_of(conn, "metrics.rollup") == row_before
    assert row_before["paused_at"] is None
    assert audit_actions(conn) == audit_before


async def test_trigger_enqueues_one_manual_job(console, conn):
    app, pilot = console
    select(app, "cleanup.tmp-files")  # paused: a trigger still runs (S17)
    await pilot.press("t")
    dialog = await confirm_open(pilot, app)
    assert "stays PAUSED" in dialog_text(dialog)
    await pilot.press("y")
    await until(pilot, lambda: any("triggered cleanup.tmp-files: job" in n for n in notes(app)), what="trigger")
    job = conn.execute(
        "SELECT metadata FROM awa.jobs WHERE metadata ->> 'triggered_manually' = 'true'"
    ).fetchone()
    assert job["metadata"]["cron_name"] == "cleanup.tmp-files"
    assert row_of(conn, "cleanup.tmp-files")["paused_at"] is not None
    assert audit_actions(conn)[-1] == (OPERATOR, "trigger", "cleanup.tmp-files")


async def test_trigger_of_a_retired_schedule_is_refused_at_keypress(console, conn):
    app, pilot = console
    select(app, "legacy.export")
    await pilot.press("t")
    await until(pilot, lambda: any("RETIRED and cannot be triggered" in n for n in notes(app)), what="refusal")
    assert not isinstance(app.screen, ConfirmScreen)
    assert conn.execute("SELECT count(*) AS n FROM awa.jobs WHERE metadata ? 'triggered_manually'").fetchone()["n"] == 0


async def test_target_changed_before_confirm_is_refused_and_says_why(console, conn, client):
    app, pilot = console
    select(app, "metrics.rollup")
    await pilot.press("s")
    await confirm_open(pilot, app)
    client.actions.pause("metrics.rollup", operator="bob@elsewhere")  # someone else, meanwhile
    await pilot.press("y")
    refusal = await until(
        pilot, lambda: next((n for n in notes(app) if n.startswith("refused:")), None), what="refusal"
    )
    assert "was active" in refusal and "now PAUSED by bob@elsewhere" in refusal and "nothing was done" in refusal
    assert "\n" not in refusal
    assert row_of(conn, "metrics.rollup")["paused_by"] == "bob@elsewhere"
    assert [a for a in audit_actions(conn) if a[1] == "pause" and a[2] == "metrics.rollup"] == [
        ("bob@elsewhere", "pause", "metrics.rollup")
    ]


async def test_retire_requires_typing_the_name(console, conn):
    app, pilot = console
    select(app, "metrics.rollup")
    await pilot.press("ctrl+d")
    dialog = await confirm_open(pilot, app)
    assert dialog.type_to_confirm == "metrics.rollup"
    await pilot.press("y")  # a letter in the box, not an answer
    await pilot.press("enter")
    await pilot.pause()
    assert isinstance(app.screen, ConfirmScreen)
    assert row_of(conn, "metrics.rollup")["retired_at"] is None
    await pilot.press("backspace")
    await pilot.press(*"metrics.rollup")
    await pilot.press("enter")
    await until(pilot, lambda: row_of(conn, "metrics.rollup")["retired_at"] is not None, what="retire")
    assert row_of(conn, "metrics.rollup")["retired_by"] == OPERATOR
    assert audit_actions(conn)[-1][1:] == ("retire", "metrics.rollup")


async def test_restore_clears_the_tombstone(console, conn):
    app, pilot = console
    select(app, "legacy.export")
    await pilot.press("u")
    dialog = await confirm_open(pilot, app)
    assert dict(dialog.details)["Consequence"] == (
        "Clears the tombstone; evaluation restarts from now: no fire from the retired period is replayed, "
        "whatever the policy.")
    await pilot.press("y")
    await until(pilot, lambda: row_of(conn, "legacy.export")["retired_at"] is None, what="restore")
    assert audit_actions(conn)[-1][1:] == ("restore", "legacy.export")


async def test_adopt_asks_for_the_owner(console, conn):
    name = "payments.settlement-reconciliation-eu-west"
    app, pilot = console
    select(app, name)
    await pilot.press("a")
    dialog = await confirm_open(pilot, app)
    assert dialog.heading == "Adopt schedule?"
    assert "billing" in dialog.suggestions
    await pilot.press("enter")  # empty: refused in the dialog
    assert isinstance(app.screen, ConfirmScreen)
    await pilot.press(*"billing", "enter")
    await until(pilot, lambda: row_of(conn, name)["owner"] == "billing", what="adopt")
    assert audit_actions(conn)[-1][1:] == ("adopt", name)


async def test_a_on_an_owned_schedule_transfers_it(console, conn):
    app, pilot = console
    select(app, "metrics.rollup")
    await pilot.press("a")
    dialog = await confirm_open(pilot, app)
    assert dialog.heading == "Transfer schedule?"
    assert "platform" not in dialog.suggestions
    await pilot.press(*"billing", "enter")
    await until(pilot, lambda: row_of(conn, "metrics.rollup")["owner"] == "billing", what="transfer")
    await until(pilot, lambda: any("transferred from platform to billing" in n for n in notes(app)), what="note")
    assert audit_actions(conn)[-1][1:] == ("transfer", "metrics.rollup")


async def test_owner_wide_retire_and_restore_from_the_owners_panel(console, conn):
    app, pilot = console
    await pilot.press("2")
    await until(pilot, lambda: "platform" in table_keys(app, "owners"), what="owners")
    select(app, "platform", "owners")
    await pilot.press("ctrl+d")
    dialog = await confirm_open(pilot, app)
    assert dialog.type_to_confirm == "platform"
    await pilot.press(*"platform", "enter")
    await until(pilot, lambda: row_of(conn, "metrics.rollup")["retired_at"] is not None, what="retire owner")
    await until(pilot, lambda: any("retired owner platform: 1 schedules" in n for n in notes(app)), what="note")
    await until(pilot, lambda: app.main.panel("owners").rows["platform"].schedules_retired == 1,
                what="owners refreshed")
    await pilot.press("u")
    await confirm_open(pilot, app)
    await pilot.press("y")
    await until(pilot, lambda: row_of(conn, "metrics.rollup")["retired_at"] is None, what="restore owner")
    actions = [a[1] for a in audit_actions(conn)]
    assert "retire_owner" in actions and actions[-1] == "restore_owner"


async def test_queue_pause_and_resume_from_the_queues_panel(console, conn):
    app, pilot = console
    await pilot.press("5")
    await until(pilot, lambda: "reports" in table_keys(app, "queues"), what="queues")
    select(app, "reports", "queues")
    await pilot.press("s")
    dialog = await confirm_open(pilot, app)
    assert "Schedules keep firing into it" in dialog_text(dialog)
    await pilot.press("y")
    paused = lambda: conn.execute("SELECT paused FROM awa.queue_meta WHERE queue = 'reports'").fetchone()  # noqa: E731
    await until(pilot, lambda: paused() and paused()["paused"], what="queue paused")
    await until(pilot, lambda: app.main.panel("queues").rows["reports"].paused, what="panel refreshed")
    await pilot.press("s")
    dialog = await confirm_open(pilot, app)
    assert dialog.heading == "Resume queue?"
    await pilot.press("y")
    await until(pilot, lambda: not paused()["paused"], what="queue resumed")
    assert [a[1] for a in audit_actions(conn)[-2:]] == ["queue_pause", "queue_resume"]


async def test_engine_errors_are_one_line_notifications(console, conn, client):
    app, pilot = console
    select(app, "metrics.rollup")
    await pilot.press("t")
    await confirm_open(pilot, app)
    client.actions.remove("metrics.rollup")  # gone between keypress and confirm
    await pilot.press("y")
    message = await until(pilot, lambda: next((n for n in notes(app) if "refused" in n), None), what="error")
    assert "now removed" in message and "\n" not in message and "Traceback" not in message


async def test_detail_screen_actions_act_on_its_schedule(console, conn):
    app, pilot = console
    select(app, "reports.hourly")
    await pilot.press("enter")
    await until(pilot, lambda: getattr(app.screen, "data", None), what="detail loaded")
    await pilot.press("s")
    await confirm_open(pilot, app)
    await pilot.press("y")
    await until(pilot, lambda: row_of(conn, "reports.hourly")["paused_at"] is not None, what="pause from detail")
    await until(pilot, lambda: getattr(app.screen, "data", None) and app.screen.data.schedule.state == "paused",
                what="detail reloaded")
