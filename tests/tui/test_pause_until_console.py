"""S65 and S66 in the console: a pause with an end and a reason reads the same in the
schedules panel's summary and the detail's state line (`PAUSED until ... by alice since
...: db migration`), and the detail shows the catch-up window beside the policy. The seeded
database runs at a fixed clock (NOW, 12:00:30); the values are written by hand."""

from __future__ import annotations

from typing import Any

from test_navigation import rendered
from textual.widgets import Static
from tui_helpers import ready, select, settled, until
from tui_seed import t

from awa_tui.tui.screens.detail import DetailScreen

NAME = "metrics.rollup"


async def test_a_pause_with_an_end_and_a_reason_reads_the_same_in_the_summary_and_the_detail(
    seeded: str, console_factory: Any, conn: Any
) -> None:
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")  # a pause made at 12:00:00, by hand
        conn.execute("UPDATE awa.cron_jobs SET paused_at = %s, paused_by = 'alice', paused_until = %s, "
                     "pause_reason = 'db migration', catchup_window = 3600 WHERE name = %s",
                     (t("12:00:00"), t("14:00:00"), NAME))
    expected = ("PAUSED until 2025-03-08 14:00:00Z (in 1h59m) by alice since 2025-03-08 12:00:00Z (30s ago): "
                "db migration")
    app = console_factory()
    async with app.run_test(size=(160, 40)) as pilot:
        await ready(pilot, app)
        select(app, NAME)
        await settled(pilot, app)
        summary = str(app.main.panel("schedules").query_one("#schedules-summary", Static).render())
        assert summary.startswith(f"{NAME}: {expected}")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.data is not None,
                    what="the detail")
        body = rendered(app.screen.query_one("#detail-body", Static).content)
        assert f"{NAME}  {expected}" in body
        assert any(line.split() == ["policy", "coalesce", "catch-up", "window", "1h00m"] for line in body.splitlines())
