"""The schedule detail's ledger (issue 13): the verdicts of the last due instants and the
`why` of one of them, chosen with [ (older) and ] (newer). The expected verdicts are worked
out by hand from ledger_seed.py: billing.nightly-invoice is due at 02:30 New York (07:30Z
in EST), created Mar 1 08:00Z; leadership held Mar 1-3 and from Mar 5, none between; it
fired (jobs 1 and 2) only on Mar 7 and Mar 8, so Mar 2..6 were folded into Mar 7."""

from __future__ import annotations

from typing import Any

from ledger_seed import seeded  # noqa: F401  (the seeded database with ledger history)
from test_navigation import rendered
from tui_helpers import select, until

from awa_tui.tui.screens.detail import DetailScreen


def day(d: int) -> str:
    return f"2025-03-{d:02d} 07:30:00Z"


EXPECTED = [  # newest first, as the table shows it: (due, verdict, job, result, late)
    (day(8), "fired", "2", "ok", "1.2s"),
    (day(7), "fired", "1", "ok", "0.8s"),
    (day(6), "coalesced", "-", "-", "-"),
    (day(5), "coalesced", "-", "-", "-"),
    (day(4), "no_leader", "-", "-", "-"),
    (day(3), "no_leader", "-", "-", "-"),
    (day(2), "coalesced", "-", "-", "-"),
]



def ledger_text(app: Any) -> str:
    return rendered(app.screen.query_one("#detail-ledger").content)


def why_line(app: Any) -> str:
    return app.screen.ledger.why.text


async def open_detail(app: Any, pilot: Any, name: str) -> None:
    select(app, name)
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.ledger is not None,
                what="the detail with its ledger")


async def test_the_detail_shows_each_due_instant_with_its_verdict(console):
    app, pilot = console
    await open_detail(app, pilot, "billing.nightly-invoice")
    shown = [(utc_text(v.instant), v.verdict, str(v.job_id) if v.job_id else "-", v.result or "-")
             for v in reversed(app.screen.ledger.verdicts)]
    assert shown == [row[:4] for row in EXPECTED]
    text = ledger_text(app)
    rows = [line.split() for line in text.splitlines()
            if line.split() and line.split()[0] in (">", "2025-03-02", "2025-03-03", "2025-03-04", "2025-03-05",
                                                     "2025-03-06", "2025-03-07", "2025-03-08")]
    assert len(rows) == len(EXPECTED)
    # The latest is marked `>`: the Why paragraph explains it.
    assert rows[0][:7] == [">", "2025-03-08", "07:30:00Z", "fired", "2", "ok", "1.2s"]
    assert rows[1][:6] == ["2025-03-07", "07:30:00Z", "fired", "1", "ok", "0.8s"]
    assert "5 earlier folded in" in text
    assert "no leader 03-03 00:00:00 .. 03-05 00:00:00" in text
    assert "into the fire at 03-07 07:30:00 (5 folded)" in text
    assert why_line(app) == ("billing.nightly-invoice: last due instant 2025-03-08T07:30:00Z: fired (job 2, 1.2s "
                             "late), ok. Next due 2025-03-09T07:00:00Z.")
    assert why_line(app) in text


async def test_brackets_choose_the_instant_the_why_explains(console):
    app, pilot = console
    await open_detail(app, pilot, "billing.nightly-invoice")
    for _ in range(2):
        await pilot.press("left_square_bracket")
        await pilot.pause()
    await until(pilot, lambda: app.screen.ledger.why.verdict.instant.day == 6, what="Mar 6 chosen")
    assert why_line(app) == ("billing.nightly-invoice: due instant 2025-03-06T07:30:00Z: not fired on its own: "
                             "coalesced into the fire at 2025-03-07T07:30:00Z (5 instants folded).")
    for _ in range(3):
        await pilot.press("left_square_bracket")
        await until(pilot, lambda: not app.screen.loading, what="loaded")
        await pilot.pause()
    await until(pilot, lambda: app.screen.ledger.why.verdict.instant.day == 3, what="Mar 3 chosen")
    assert why_line(app) == (
        "billing.nightly-invoice: due instant 2025-03-03T07:30:00Z: not fired: no runtime held leadership from "
        "2025-03-03T00:00:00Z until 2025-03-05T00:00:00Z; coalesced into the fire at 2025-03-07T07:30:00Z "
        "(5 instants).")
    assert "> 2025-03-03 07:30:00Z no_leader" in " ".join(ledger_text(app).split())
    for _ in range(9):  # past the newest it stays there: the latest again
        await pilot.press("right_square_bracket")
        await pilot.pause()
    await until(pilot, lambda: app.screen.chosen is None and app.screen.ledger.why.verdict.instant.day == 8,
                what="back to the latest")


async def test_a_paused_schedule_says_who_skipped_its_instants(console):
    app, pilot = console
    await open_detail(app, pilot, "cleanup.tmp-files")
    assert why_line(app) == (
        "cleanup.tmp-files: last due instant 2025-03-08T12:00:00Z: not fired: the schedule was paused by "
        "alice@ops at 2025-03-08T11:20:00Z. Next due 2025-03-08T12:15:00Z. Now paused (by alice@ops at "
        "2025-03-08T11:20:00Z).")
    newest = [(utc_text(v.instant), v.verdict, v.by) for v in app.screen.ledger.verdicts][-4:]
    assert newest == [("2025-03-08 11:15:00Z", "fired", None), ("2025-03-08 11:30:00Z", "skipped_paused", "alice@ops"),
                      ("2025-03-08 11:45:00Z", "skipped_paused", "alice@ops"),
                      ("2025-03-08 12:00:00Z", "skipped_paused", "alice@ops")]
    assert "skipped_paused" in ledger_text(app) and "by alice@ops at 03-08 11:20:00" in ledger_text(app)
    assert len([v for v in app.screen.ledger.verdicts if v.verdict != "manual"]) == 50


def utc_text(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%SZ")
