"""The schedules panel's ledger columns (issue 13): LAST RESULT, FAILS 24h and the outcome
strip of the last 20 due instants, read with the page (the strips in a few statements);
sortable and filterable (`result:failed`); at 80x24 NAME, STATE and NEXT FIRE stay and
LAST RESULT joins them. Expected values are worked out by hand from tui_seed.JOBS and
ledger_seed.py."""

from __future__ import annotations

import pytest
from ledger_seed import seeded  # noqa: F401  (the seeded database with ledger history)
from tui_helpers import select, settled, table_keys, until
from tui_seed import NOW

from awa_tui.engine.client import Client
from awa_tui.engine.ledger.models import instant_outcome
from awa_tui.filters import parse
from awa_tui.tui.formatting import outcome_strip

# name: (last result, last error, fails in 24 h, outcome strip of the last 20 due instants,
# oldest first). Leadership (ledger_seed.TERMS): led Mar 1-3 00:00, nobody until Mar 5 00:00,
# led since; every schedule was created Mar 1 08:00. `~`: folded into a later fire.
EXPECTED = {
    # 07:30Z daily: Mar 2 folded, Mar 3-4 nobody led, Mar 5-6 folded, Mar 7-8 ok.
    "billing.nightly-invoice": ("ok", None, 0, "~??~~.."),
    # every 15 min, 07:15-12:00: folded until 11:00's discarded job, 11:15 ok, paused at 11:20.
    "cleanup.tmp-files": ("ok", None, 1, "~" * 15 + "x.---"),
    # every 10 s, 11:57:20-12:00:30: the last two fired and wait (their queue is paused).
    "crm.contact-sync": ("waiting", None, 0, "~" * 18 + "ww"),
    # 09:00Z weekdays: Mar 3 nobody led (no job), retired at 09:05 that day: Mar 4-7 skipped.
    "legacy.export": ("none", None, 0, "?----"),
    # every 5 min, 10:25-12:00: 11:55 ok, 12:00 running; the manual trigger is no due instant.
    "metrics.rollup": ("ok", None, 0, "~" * 18 + ".>"),
    # 06:00Z daily: Mar 2 folded, Mar 3-4 nobody led, Mar 5-7 folded, Mar 8 ok.
    "payments.settlement-reconciliation-eu-west": ("ok", None, 0, "~??~~~."),
    # hourly, Mar 7 17:00-Mar 8 12:00: only 12:00 fired, and it will retry.
    "reports.hourly": ("failed", "TimeoutError: query ran past 10s", 1, "~" * 19 + "r"),
    # Mondays 07:00Z: Mar 3, when nobody led.
    "weekly.digest": ("none", None, 0, "?"),
}


@pytest.mark.usefixtures("seeded")
def test_the_schedule_page_reads_last_result_fails_and_strip(dsn: str) -> None:
    with Client(dsn) as client:
        page = client.reads.schedule_page(now=NOW)
        found = {r.name: (r.last_result, r.last_error, r.fails_24h, outcome_strip(r.outcomes)) for r in page.rows}
        assert found == EXPECTED
        # Each character is the verdict the detail screen's ledger gives that instant.
        for row in page.rows:
            ledger = [v for v in client.reads.ledger(row.name, limit=50, now=NOW) if v.verdict != "manual"][-20:]
            assert row.outcomes == tuple(instant_outcome(v.verdict, v.job_state) for v in ledger), row.name
        # FAILS 24h counts back from `now`: a day later the failures of Mar 8 are out of it.
        later = client.reads.schedule_page(now=NOW.replace(day=9, hour=12, minute=0, second=31))
        assert {r.name: r.fails_24h for r in later.rows if r.fails_24h} == {}


@pytest.mark.parametrize(("text", "expected"), [
    ("result:failed", ["reports.hourly"]),
    ("result:none", ["legacy.export", "weekly.digest"]),
    ("result:waiting", ["crm.contact-sync"]),
    ("-result:ok -result:none", ["crm.contact-sync", "reports.hourly"]),
])
@pytest.mark.usefixtures("seeded")
def test_result_filter_selects_by_the_latest_job(dsn: str, text: str, expected: list[str]) -> None:
    with Client(dsn) as client:
        page = client.reads.schedule_page(now=NOW, where=parse(text, "schedules"))
        assert [r.name for r in page.rows] == expected
        assert page.matched == len(expected)


async def test_the_columns_show_result_fails_and_strip(console):
    app, pilot = console
    table = app.main.panel("schedules").table
    reports = [str(c) for c in table.get_row("reports.hourly")]
    assert reports[4:7] == ["FAILED", "1", "~" * 19 + "r"]  # after NAME, STATE, NEXT FIRE, HEALTH
    assert [str(c) for c in table.get_row("metrics.rollup")][4:7] == ["ok", "0", "~" * 18 + ".>"]
    select(app, "reports.hourly")
    await pilot.pause()
    text = str(app.main.panel("schedules").query_one("#schedules-summary").content)
    assert text.splitlines()[-1] == (
        "last result FAILED: TimeoutError: query ran past 10s · 1 failed in 24h · last 20 due instants "
        + "~" * 19 + "r (r retrying  ~ coalesced into a later fire)")


async def test_sorting_by_last_result_puts_the_failing_first(console):
    app, pilot = console
    panel = app.main.panel("schedules")
    panel.sort_by_column("result")
    await until(pilot, lambda: table_keys(app)[0] == "reports.hourly", what="sorted by result")
    assert table_keys(app) == ["reports.hourly", "crm.contact-sync", "billing.nightly-invoice", "cleanup.tmp-files",
                               "metrics.rollup", "payments.settlement-reconciliation-eu-west", "legacy.export",
                               "weekly.digest"]
    panel.sort_by_column("fails")  # ascending: no failures first, by name
    await until(pilot, lambda: table_keys(app)[-1] == "reports.hourly", what="sorted by fails")
    assert table_keys(app)[-2:] == ["cleanup.tmp-files", "reports.hourly"]


@pytest.mark.console(size=(80, 24))
async def test_at_80_columns_name_state_next_fire_and_last_result_stay(console):
    app, pilot = console
    await settled(pilot, app)
    table = app.main.panel("schedules").table
    assert [table.column_specs[i].key for i in table.first_screen] == ["name", "state", "next", "health", "result"]


async def test_at_120_columns_fails_and_the_strip_show_too(console):
    app, _ = console
    table = app.main.panel("schedules").table
    shown = [table.column_specs[i].key for i in table.first_screen]
    assert shown[:7] == ["name", "state", "next", "health", "result", "fails", "strip"]
