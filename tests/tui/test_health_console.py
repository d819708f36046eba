"""Health in the console (S42): the HEALTH column with each health, the header counts, the
ATTENTION line, sort and filter by health, and the detail's expectations and health.
The seeded database is doctored so the leader's real evaluation, at the console's fixed
clock, finds every health: late, failing, missed, broken, paused, retired and ok."""

from __future__ import annotations

from typing import Any

import pytest
from tui_helpers import ready, select, settled, table_keys, until
from tui_seed import NOW, t

from awa_tui.engine.client import Client

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 36), id="120x36")]

EXPECTED = {
    "billing.nightly-invoice": "ok",
    "cleanup.tmp-files": "paused",
    "crm.contact-sync": "broken",
    "legacy.export": "retired",
    "metrics.rollup": "ok",
    "payments.settlement-reconciliation-eu-west": "missed",
    "reports.hourly": "failing",
    "weekly.digest": "late",
}


def force(conn: Any, query: str, params: Any = None) -> None:
    """A hand edit with triggers off, as the seed writes its rows."""
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(query, params)


@pytest.fixture
def healths(seeded: str, conn: Any) -> str:
    # Schedule rows by hand with triggers off, like the seed (no audit row at the wall clock's
    # time on the screenshots); the jobs' outcomes go through the outcome trigger.
    force(conn, "UPDATE awa.cron_jobs SET next_fire_at = %s WHERE name = 'weekly.digest'", (t("11:58:00"),))
    force(conn, "UPDATE awa.cron_jobs SET cron_expr = '*/10 * * * * * *' WHERE name = 'crm.contact-sync'")
    force(conn, "UPDATE awa.cron_jobs SET expect_success_within = 300, max_lateness = 120, "
                "max_consecutive_failures = 2, pause_after_failures = 5 "
                "WHERE name = 'payments.settlement-reconciliation-eu-west'")
    conn.execute("UPDATE awa.jobs SET finalized_at = %s WHERE metadata ->> 'cron_name' = "
                 "'payments.settlement-reconciliation-eu-west'", (t("06:09:00"),))  # 4 minutes too late
    conn.execute("UPDATE awa.jobs SET state = 'discarded', finalized_at = %s "
                 "WHERE metadata ->> 'cron_name' = 'reports.hourly'", (t("12:00:10"),))
    with Client(seeded) as client:
        client.runtime.evaluate_health(now=NOW)
    found = {r["name"]: r["health"] for r in conn.execute(
        "SELECT c.name, coalesce(h.health, 'ok') AS health FROM awa.cron_jobs c "
        "LEFT JOIN awa.cron_health h ON h.name = c.name").fetchall()}
    assert found == EXPECTED
    return seeded


def title(app: Any) -> str:
    return str(app.main.panel("schedules").query_one(".panel-title").content)


def attention(app: Any) -> str:
    return str(app.main.panel("schedules").query_one("#schedules-attention").content)


@pytest.mark.parametrize("size", SIZES)
def test_each_health_on_the_schedules_panel(snap_compare, console_factory, healths, size):
    async def run_before(pilot) -> None:
        app = pilot.app
        await ready(pilot, app)

    assert snap_compare(console_factory(), terminal_size=size, run_before=run_before)


def test_the_detail_shows_expectations_and_health(snap_compare, console_factory, healths):
    async def run_before(pilot) -> None:
        app = pilot.app
        await ready(pilot, app)
        select(app, "payments.settlement-reconciliation-eu-west")
        await pilot.press("enter")
        await until(pilot, lambda: getattr(app.screen, "data", None), what="detail")
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=(120, 36), run_before=run_before)


async def test_header_counts_attention_filter_and_sort(console_factory, healths):
    app = console_factory()
    async with app.run_test(size=(160, 40)) as pilot:
        await ready(pilot, app)
        assert "1 BROKEN · 1 FAILING · 1 MISSED · 1 LATE" in title(app)
        assert attention(app) == (
            "ATTENTION  BROKEN crm.contact-sync since 2025-03-08 12:00:30Z: cron_expr: '*/10 * * * * * *' has 7 "
            "fields; expected 5 (min hour dom month dow) or 6 (sec min hour dom month dow) (+3 more: filter health:…)")
        panel = app.main.panel("schedules")
        await pilot.press("slash")
        panel.query_one("#filter").value = "health:missed"
        await until(pilot, lambda: table_keys(app) == ["payments.settlement-reconciliation-eu-west"],
                    what="health filter")
        panel.query_one("#filter").value = "-health:ok -health:paused -health:retired"
        await until(pilot, lambda: len(table_keys(app)) == 4, what="unhealthy filter")
        await pilot.press("enter", "escape")
        await until(pilot, lambda: len(table_keys(app)) == 8, what="cleared")
        panel._sort_by("health")
        await settled(pilot, app)
        assert table_keys(app)[:4] == ["crm.contact-sync", "reports.hourly",
                                       "payments.settlement-reconciliation-eu-west", "weekly.digest"]


async def test_no_attention_line_when_all_is_well(console):
    app, _ = console
    assert not app.main.panel("schedules").query_one("#schedules-attention").display
    assert "BROKEN" not in title(app) and "LATE" not in title(app)
