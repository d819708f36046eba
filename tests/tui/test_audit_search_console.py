"""Audit search in the console (issue 13: "what did operator Z do yesterday?"): the audit
log's `/` takes operator, action, target and a time range (since/until: a duration back
from the console's clock, or an instant), searched by the engine over every entry, and
the list pages past the latest 200. ledger_seed.py adds 230 entries by robot@ops, one a
minute from Mar 2 00:00Z (filler-000 .. filler-229), to tui_seed's 3."""

from __future__ import annotations

from typing import Any

import pytest
from ledger_seed import AUDIT_FILLER, seeded  # noqa: F401  (the seeded database with ledger history)
from tui_helpers import until

from awa_tui.tui.screens.audit import AuditScreen
from awa_tui.tui.widgets.keyed_table import KeyedTable

TOTAL = AUDIT_FILLER + 3



def title(app: Any) -> str:
    return str(app.screen.query_one("#audit-title").content)


def targets(app: Any) -> list[str]:
    table = app.screen.query_one(KeyedTable)
    return [str(table.get_row(row.key)[4]) for row in table.ordered_rows]


async def open_audit(app: Any, pilot: Any) -> None:
    await pilot.press("l")
    await until(pilot, lambda: isinstance(app.screen, AuditScreen) and app.screen.entries, what="audit log")


async def to_last_loaded_row(app: Any, pilot: Any) -> None:
    """The cursor onto the last loaded row, as scrolling down there does (not G)."""
    table = app.screen.query_one(KeyedTable)
    table.focus()
    await pilot.pause()
    table.move_cursor(row=table.row_count - 1, animate=False)
    await pilot.pause()


async def search(app: Any, pilot: Any, text: str, expected: list[str]) -> None:
    app.screen.query_one("FilterBar").value = text
    await until(pilot, lambda: targets(app) == expected, what=f"entries matching {text}")


async def test_the_audit_log_pages_past_the_latest_200(console):
    app, pilot = console
    await open_audit(app, pilot)
    assert len(targets(app)) == 200
    assert "Audit log 200 operator actions, newest first · end of list loads older" in title(app)
    # Newest entry first (by id: robot's were written after the seed's three).
    assert targets(app)[:3] == ["filler-229", "filler-228", "filler-227"]
    assert targets(app)[-1] == "filler-030"
    await to_last_loaded_row(app, pilot)
    await until(pilot, lambda: len(targets(app)) == TOTAL, what="the older page")
    assert targets(app)[-4:] == ["filler-000", "legacy.export", "cleanup.tmp-files", "queue:integrations"]
    assert f"Audit log {TOTAL} operator actions, newest first · all shown" in title(app)


@pytest.mark.parametrize(("text", "expected"), [
    ("operator:robot@ops until:2025-03-02T00:02:00Z", ["filler-002", "filler-001", "filler-000"]),
    ("operator:ROBOT@OPS since:2025-03-02T03:48:00Z", ["filler-229", "filler-228"]),
    ("action:retire", ["legacy.export"]),
    ("since:2025-03-08T10:00:00Z", ["cleanup.tmp-files", "queue:integrations"]),
    # 2h back from the console's clock (12:00:30Z): only alice's pause at 11:20 is in it.
    ("since:2h", ["cleanup.tmp-files"]),
    ("target:tmp -operator:robot@ops", ["cleanup.tmp-files"]),
    ("operator:*@ops action:pause", ["cleanup.tmp-files"]),
    ("since:2025-03-02T01:00:00Z until:2025-03-02T01:01:00Z", ["filler-061", "filler-060"]),
    # Day words at the console's clock (Mar 8 12:00:30Z): today is from Mar 8 00:00Z, yesterday
    # from Mar 7 00:00Z (no entry on the 7th); until:yesterday leaves out the 7th and the 8th.
    ("since:today", ["cleanup.tmp-files", "queue:integrations"]),
    ("since:YESTERDAY until:today", []),
    ("until:yesterday -operator:robot@ops", ["legacy.export"]),
])
async def test_audit_filters_search_every_entry(console, text, expected):
    app, pilot = console
    await open_audit(app, pilot)
    await pilot.press("slash")
    await search(app, pilot, text, expected)
    assert "all shown" in title(app)


async def test_a_search_with_more_than_a_page_pages_too(console):
    app, pilot = console
    await open_audit(app, pilot)
    await pilot.press("slash")
    await search(app, pilot, "operator:robot@ops", [f"filler-{n:03d}" for n in range(229, 29, -1)])
    assert "end of list loads older" in title(app)
    table = app.screen.query_one(KeyedTable)
    table.focus()
    await until(pilot, lambda: app.screen.focused is table, what="the list focused (j is not typed as text)")
    await to_last_loaded_row(app, pilot)
    await until(pilot, lambda: len(targets(app)) == AUDIT_FILLER, what="the rest of robot's")
    assert targets(app) == [f"filler-{n:03d}" for n in range(229, -1, -1)]
    # G instead: the last page of the search at once (robot's oldest 200), the filter kept.
    await pilot.press("g", "r")  # read from the newest again: 200 of them, older ones not loaded
    await until(pilot, lambda: len(targets(app)) == 200, what="the newest page again")
    await pilot.press("G")
    await until(pilot, lambda: targets(app) == [f"filler-{n:03d}" for n in range(199, -1, -1)]
                and table.cursor_row == 199, what="robot's oldest 200")
    assert "the end of the list" in title(app)


async def test_a_bad_time_is_one_line_and_keeps_the_entries(console):
    app, pilot = console
    await open_audit(app, pilot)
    await pilot.press("slash")
    await search(app, pilot, "action:retire", ["legacy.export"])
    app.screen.query_one("FilterBar").value = "since:lastweek"
    await until(pilot, lambda: "lastweek" in title(app), what="the error")
    assert ("filter: since: expected a duration (90s, 2h, 14d), today, yesterday or an ISO-8601 instant, "
            "got 'lastweek'" in title(app))
    assert targets(app) == ["legacy.export"]
