"""A fleet that stopped firing: a due fire nobody made reads `overdue 1m50s` (not `due now`,
which a fire 1 s late also reads), its HEALTH turns LATE once it waited past its lateness
bound although the (stalled) leader's last word was ok, and the title counts the OVERDUE.
Every time is the database clock's of the refresh (here the injected one)."""

from __future__ import annotations

from datetime import timedelta

from tui_helpers import ready
from tui_seed import NOW


def cell_text(app, name: str, column: str) -> str:
    table = app.main.panel("schedules").table
    index = [c.key for c in table.column_specs].index(column)
    value = table.get_row(name)[table.shown.index(index)]
    return value.plain if hasattr(value, "plain") else str(value)


def title(app) -> str:
    return str(app.main.panel("schedules").query_one(".panel-title").content)


async def test_a_fire_nobody_made_reads_overdue_and_late(console_factory):
    # crm.contact-sync's due fire is 12:00:40; the fleet stopped: it is 12:02:30 now.
    app = console_factory(clock=lambda: NOW + timedelta(minutes=2))
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot, app)
        assert cell_text(app, "crm.contact-sync", "next") == "overdue 1m50s"
        assert cell_text(app, "crm.contact-sync", "health") == "LATE"
        assert cell_text(app, "metrics.rollup", "next") == "in 2m30s"  # 12:05: not due yet
        assert cell_text(app, "cleanup.tmp-files", "next") == "on resume"  # paused: nobody owes it
        assert " · 1 OVERDUE" in title(app)


async def test_a_fire_just_due_reads_due_now(console_factory):
    # 2 s after crm.contact-sync's instant: a live leader is about to fire it.
    app = console_factory(clock=lambda: NOW + timedelta(seconds=12))
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot, app)
        assert cell_text(app, "crm.contact-sync", "next") == "due now"
        assert cell_text(app, "crm.contact-sync", "health") != "LATE"
        assert "OVERDUE" not in title(app)
