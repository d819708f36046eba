"""G (End) on a paged list goes to the last row of the whole list, not of the loaded page,
by reading the last page (never every row between): the schedules (pages of 3 of 8), the
jobs and the audit log (pages of 4); g reads the first page again."""

from __future__ import annotations

import pytest
from ledger_seed import seeded  # noqa: F401  (the seeded database with ledger history)
from test_filters_console import ALL
from tui_helpers import ready, table_keys, until

from awa_tui.tui.panels import jobs
from awa_tui.tui.screens import audit


async def test_G_on_the_schedules_reads_the_last_page(console_factory):
    """8 schedules, pages of 3: G reads the last 3 of the order at once (the 2 between are
    never read), the cursor on the last of all; g reads the first page again."""
    app = console_factory(page_size=3)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        assert table_keys(app) == ALL[:3]
        await pilot.press("G")
        table = app.main.panel("schedules").table
        await until(pilot, lambda: table_keys(app) == ALL[-3:] and table.selected_key == ALL[-1],
                    what=f"the last schedule of all (on {table.selected_key!r})")
        assert "the last 3 of 8" in str(app.main.panel("schedules").query_one(".panel-title").render())
        await pilot.press("g")
        await until(pilot, lambda: table_keys(app) == ALL[:3] and table.selected_key == ALL[0],
                    what="the first page again")


async def test_G_on_the_schedules_follows_the_sort(console_factory):
    """Sorted by name, descending: the last page is the first 3 names, in that order."""
    app = console_factory(page_size=3)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        await pilot.press("O")
        await until(pilot, lambda: table_keys(app) == ALL[::-1][:3], what="descending by name")
        await pilot.press("end")
        table = app.main.panel("schedules").table
        await until(pilot, lambda: table_keys(app) == ALL[::-1][-3:] and table.selected_key == ALL[0],
                    what="the first name, at the end of the descending list")


async def test_G_on_the_jobs_reads_the_last_page(console_factory, monkeypatch):
    """11 jobs, pages of 4: G shows the oldest 4 (never the 7 between), the cursor on job 1;
    g goes back to the newest page, the cursor on its first row."""
    monkeypatch.setattr(jobs, "PAGE", 4)
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        await pilot.press("6")
        await until(pilot, lambda: table_keys(app, "jobs") == ["11", "10", "9", "8"], what="the first page")
        await pilot.press("G")
        table = app.main.panel("jobs").table
        await until(pilot, lambda: table_keys(app, "jobs") == ["4", "3", "2", "1"] and table.selected_key == "1",
                    what="the oldest page, on the oldest job of all")
        assert "4 oldest" in str(app.main.panel("jobs").query_one(".panel-title").render())
        await pilot.press("g")
        await until(pilot, lambda: table_keys(app, "jobs") == ["11", "10", "9", "8"] and table.selected_key == "11",
                    what="the newest page again, on the newest job")


async def test_G_on_the_jobs_passes_the_engine_cap(console_factory, monkeypatch):
    """The old G read up to the engine's cap in one read (MAX_LIMIT jobs) and stopped there:
    with a cap of 6 (of 11 jobs) it landed on job 6. The last page has no cap to stop at."""
    monkeypatch.setattr(jobs, "PAGE", 4)
    monkeypatch.setattr(jobs, "MAX_LIMIT", 6)
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        await pilot.press("6")
        await until(pilot, lambda: table_keys(app, "jobs") == ["11", "10", "9", "8"], what="the first page")
        await pilot.press("end")
        table = app.main.panel("jobs").table
        await until(pilot, lambda: table.selected_key == "1", what=f"the oldest job of all (on {table.selected_key!r})")


@pytest.mark.parametrize("key", ["G", "end"])
async def test_G_on_the_audit_log_reads_the_last_page(console_factory, monkeypatch, key, conn):
    """Pages of 4: G reads the oldest 4 entries at once (not every page between), the cursor
    on the oldest entry of all; g reads the newest again."""
    rows = conn.execute("SELECT id FROM awa.audit_log ORDER BY id").fetchall()
    ids = [str(r["id"]) for r in rows]
    assert len(ids) > 4 * 2  # more than two pages
    monkeypatch.setattr(audit, "PAGE", 4)
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, audit.AuditScreen) and app.screen.entries,
                    what="the audit log")
        screen = app.screen
        table = screen.query_one("#audit-table")
        assert [str(e.id) for e in screen.entries] == ids[::-1][:4]
        await pilot.press(key)
        await until(pilot, lambda: [str(e.id) for e in screen.entries] == ids[:4][::-1]
                    and table.selected_key == ids[0], what="the oldest page, on the oldest entry")
        assert "the end of the list" in str(screen.query_one("#audit-title").render())
        await pilot.press("g")
        await until(pilot, lambda: [str(e.id) for e in screen.entries] == ids[::-1][:4]
                    and table.selected_key == ids[-1], what="the newest page again")
