"""Issue 15 in the console: a FINISHED schedule, and the backfill action (b) with its count.

Pilot tests drive the real app on the seeded database (fixed clock NOW); the snapshots
(pytest-textual-snapshot) pin the FINISHED row and the backfill dialog.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Static
from tui_helpers import audit_actions, notes, ready, select, settled, until
from tui_seed import OPERATOR, t

from awa_tui.tui.screens.confirm import ConfirmScreen

FINISHED_NAME = "batch.once"


@pytest.fixture
def finished(seeded: str, conn: Any) -> str:
    """A schedule that fired its one allowed time at 11:00 and finished then."""
    conn.execute(
        "INSERT INTO awa.cron_jobs (name, cron_expr, kind, queue, max_fires, fires_count, last_enqueued_at, "
        "next_fire_at, finished_at, created_at) VALUES (%s, '0 * * * *', 'batch.run', 'default', 1, 1, %s, %s, %s, %s)",
        (FINISHED_NAME, t("11:00:00"), t("12:00:00"), t("11:00:00"), t("08:00:00", 1)))
    return seeded


def _cell_texts(app: Any, name: str) -> list[str]:
    table = app.main.panel("schedules").table
    return [c.plain for c in table.get_row(name)]


async def test_a_finished_schedule_reads_finished_with_no_next_fire(finished: str, console_factory: Any) -> None:
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        cells = _cell_texts(app, FINISHED_NAME)
        assert cells[1:4] == ["FINISHED", "-", "-"]  # state, next (relative), next (UTC)
        select(app, FINISHED_NAME)
        await settled(pilot, app)
        summary = str(app.main.panel("schedules").query_one("#schedules-summary", Static).render())
        assert summary.startswith(f"{FINISHED_NAME}: FINISHED at 2025-03-08 11:00:00Z (1h ago)")
        assert "next fire" not in summary


async def test_backfill_shows_the_count_then_enqueues_exactly_it(seeded: str, console_factory: Any,
                                                                 conn: Any) -> None:
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        select(app, "metrics.rollup")
        await pilot.press("b")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="backfill dialog")
        note = app.screen.query_one("#dialog-note", Static).render()
        # Every 5 min over 2025-03-07 12:00:30 .. 2025-03-08 12:00:30: 12:05 (7th) to 12:00
        # (8th) is 288 instants; 11:55 and 12:00 fired (seeded jobs).
        assert str(note) == ("286 jobs would be enqueued for 2025-03-07 12:00:30Z .. 2025-03-08 12:00:30Z "
                             "(2 already fired, 0 left to the scheduler).")
        await pilot.press("y")
        await until(pilot, lambda: any("backfilled metrics.rollup" in n for n in notes(app)), what="result")
        assert [n for n in notes(app) if "backfilled" in n] == [
            f"backfilled metrics.rollup: 286 jobs (as {OPERATOR}; see audit log: l)"]
    rows = conn.execute(
        "SELECT count(*) AS n, count(DISTINCT metadata ->> 'cron_fire_time') AS distinct_instants, "
        "min(metadata ->> 'cron_fire_time') AS first, max(metadata ->> 'cron_fire_time') AS last, "
        "bool_and(metadata ->> 'backfilled_by' = %s) AS by_operator "
        "FROM awa.jobs WHERE metadata ? 'backfill'", (OPERATOR,)).fetchone()
    assert rows == {"n": 286, "distinct_instants": 286, "first": "2025-03-07T12:05:00Z",
                    "last": "2025-03-08T11:50:00Z", "by_operator": True}
    assert (OPERATOR, "backfill", "metrics.rollup") in audit_actions(conn)


async def test_backfill_is_refused_at_keypress_for_a_retired_schedule(seeded: str, console_factory: Any) -> None:
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        select(app, "legacy.export")
        await pilot.press("b")
        await settled(pilot, app)
        assert not isinstance(app.screen, ConfirmScreen)
        assert "legacy.export is RETIRED: restore it before a backfill (u)" in notes(app)


async def test_backfill_is_not_offered_read_only(seeded: str, console_factory: Any) -> None:
    app = console_factory(read_only=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        select(app, "metrics.rollup")
        await pilot.press("b")
        await settled(pilot, app)
        assert not isinstance(app.screen, ConfirmScreen)


# --- snapshots -------------------------------------------------------------------------------


def test_snapshot_finished_row(snap_compare: Any, finished: str, console_factory: Any) -> None:
    async def run_before(pilot: Any) -> None:
        app = pilot.app
        await ready(pilot, app)
        select(app, FINISHED_NAME)
        await settled(pilot, app)
        app.clear_notifications()
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=(120, 36), run_before=run_before)


def test_snapshot_backfill_dialog(snap_compare: Any, seeded: str, console_factory: Any) -> None:
    async def run_before(pilot: Any) -> None:
        app = pilot.app
        await ready(pilot, app)
        select(app, "metrics.rollup")
        await pilot.press("b")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="backfill dialog")
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=(120, 36), run_before=run_before)
