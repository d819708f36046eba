"""Snapshots of the fire ledger's screens (issue 13) on the seeded database with ledger
history (ledger_seed.py): the jobs panel at 80x24 and 120x36, a job's detail with its two
failed attempts, and a schedule's detail scrolled to its ledger and Why.

Update after an intended change: pytest tests/tui/test_snapshots_ledger.py --snapshot-update
"""

from __future__ import annotations

import pytest
from ledger_seed import seeded  # noqa: F401  (the seeded database with ledger history)
from test_snapshots import SIZES, panel_before
from tui_helpers import ready, select, until

from awa_tui.tui.screens.detail import DetailScreen
from awa_tui.tui.screens.job_detail import JobDetailScreen


@pytest.mark.parametrize("size", SIZES)
def test_jobs_panel(snap_compare, console_factory, size):
    assert snap_compare(console_factory(), terminal_size=size, run_before=panel_before("6"))


@pytest.mark.parametrize("size", SIZES)
def test_schedules_with_results(snap_compare, console_factory, size):
    assert snap_compare(console_factory(), terminal_size=size, run_before=panel_before(None))


def test_job_detail(snap_compare, console_factory):
    async def run_before(pilot) -> None:
        app = pilot.app
        await ready(pilot, app)
        await pilot.press("6")
        await until(pilot, lambda: app.main.panel("jobs").rows, what="jobs")
        select(app, "7", "jobs")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen.data, what="job detail")
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=(120, 36), run_before=run_before)


def test_schedule_detail_with_ledger(snap_compare, console_factory):
    async def run_before(pilot) -> None:
        app = pilot.app
        await ready(pilot, app)
        select(app, "billing.nightly-invoice")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.data and app.screen.ledger,
                    what="detail with its ledger")
        await pilot.press("left_square_bracket", "left_square_bracket", "left_square_bracket",
                          "left_square_bracket")
        await until(pilot, lambda: app.screen.ledger.why.verdict.instant.day == 4, what="Mar 4 chosen")
        await pilot.pause()
        app.screen.query_one("#detail-ledger").scroll_visible(top=True, animate=False, immediate=True)
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=(120, 36), run_before=run_before)
