"""The count lines fit 80 columns (issue 39): the schedules panel's title, its ATTENTION
line and the status bar's ATTENTION line give up what matters least (a hint, the sort,
separators, steady-state counts, a problem's detail) before a count of a fault is cut; at
160 columns they read as before. The seed has every health at once, a leader's pass given
up on a lock and jobs of a kind nobody runs: the lines' longest case.

The oracle is the rendered line as the terminal gets it (the widget's line after styles,
padding aside), written out by hand; the wide forms are the lines the console printed
before the narrow ones existed."""

from __future__ import annotations

from typing import Any

import pytest
from test_attention_console import BLOCKED, LEADER, jobs_waiting, write_passes
from test_health_console import healths  # noqa: F401  (the fixture)
from tui_helpers import ready, settled
from tui_seed import RUNTIMES


@pytest.fixture
def everything(healths: str, conn: Any) -> str:  # noqa: F811
    write_passes(conn, BLOCKED)
    conn.execute("UPDATE awa.runtime_instances SET handled_kinds = '{}' WHERE instance_id = %s", (LEADER,))
    jobs_waiting(conn, "dropped.report", 1200)
    return healths


def shown(app: Any, selector: str, y: int = 0) -> str:
    """Line `y` of the widget as rendered for the terminal, right-trimmed."""
    return app.main.query_one(selector).render_line(y).text.rstrip()


def lines(app: Any) -> tuple[str, str, str]:
    """The schedules panel's title and ATTENTION line, and the status bar's ATTENTION line."""
    return (shown(app, "#panel-schedules .panel-title"), shown(app, "#schedules-attention"),
            shown(app, "#status-bar", 1))


async def test_the_count_lines_fit_80_columns_and_stay_whole_at_160(console_factory: Any, everything: str) -> None:
    app = console_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        # The hint and sort go, the health counts close up, RETIRED (a steady state) goes; every
        # fault's count stays with its word. The schedule's ATTENTION says how many more and the
        # filter that lists them before its reason, which is cut; the status bar's gives the
        # last problem's bare count.
        assert lines(app) == (
            "Schedules 8 of 8 · 1 PAUSED · 1 OVERDUE 1 BROKEN 1 FAILING 1 MISSED 1 LATE",
            "ATTENTION  BROKEN crm.contact-sync (+3 more: filter health:…) since 2025-03-0…",
            " ATTENTION 2  leader's pass TIMED OUT (session 4243) · 1,200 jobs unserved")
        await pilot.press("5")  # the worst schedule joins the status bar's line on the other panels
        await settled(pilot, app)
        assert shown(app, "#status-bar", 1) == \
            " ATTENTION 3  pass TIMED OUT · 1,200 jobs unserved · 4 schedules unhealthy"

        await pilot.resize_terminal(160, 48)  # the same console, wider: the lines it printed before
        await pilot.press("1")
        await settled(pilot, app)
        # The title and the status bar as before; the schedule's ATTENTION, too long for 160
        # as well, has its count before the reason there too.
        assert lines(app) == (
            "Schedules 8 of 8 · 1 PAUSED · 1 RETIRED · 1 OVERDUE · 1 BROKEN · 1 FAILING · 1 MISSED · 1 LATE "
            "· sort name ↑",
            "ATTENTION  BROKEN crm.contact-sync (+3 more: filter health:…) since 2025-03-08 12:00:30Z: "
            "cron_expr: '*/10 * * * * * *' has 7 fields; expected 5 (min hour do…",
            " ATTENTION 2  leader's pass TIMED OUT (session 4243) · 1,200 jobs unserved (kind dropped.report)")
        await pilot.press("5")
        await settled(pilot, app)
        assert shown(app, "#status-bar", 1) == (
            " ATTENTION 3  leader's pass TIMED OUT (session 4243) · 1,200 jobs unserved (kind dropped.report) · "
            "schedule crm.contact-sync BROKEN (+3 more unhealthy)")


async def test_a_short_line_is_the_same_at_80_columns(console_factory: Any, seeded: str) -> None:
    """Control: a title that fits is shown whole, sort and all."""
    app = console_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        assert shown(app, "#panel-schedules .panel-title") == "Schedules 8 of 8 · 1 PAUSED · 1 RETIRED · sort name ↑"


@pytest.mark.parametrize("size", [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")])
def test_snapshot_every_count_line(snap_compare: Any, console_factory: Any, everything: str,
                                   size: tuple[int, int]) -> None:
    assert snap_compare(console_factory(), terminal_size=size, run_before=lambda pilot: ready(pilot, pilot.app))


async def test_the_runtimes_title_keeps_its_problems_at_80_columns(console_factory: Any, everything: str,
                                                                   conn: Any) -> None:
    """At 80 columns the leader's details give way on the runtimes panel's first line (its
    row says them), then the blocker's (the leader's page has it), never a fault's count:
    here a runtime that refuses to lead and the leader's pass given up on a lock."""
    conn.execute("UPDATE awa.runtime_instances SET lead_refusal = 'pooler in transaction mode' "
                 "WHERE instance_id = %s", (str(RUNTIMES[1]["instance_id"]),))
    app = console_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press("3")
        await settled(pilot, app)
        title = "#panel-runtimes .panel-title"
        assert shown(app, title) == "Runtimes 3 (2 fresh) · 1 refuses to lead · pass TIMED OUT"
        write_passes(conn, [])  # the lock is gone: the leader's details would fit but for the count
        await pilot.press("r")
        await settled(pilot, app)
        assert shown(app, title) == "Runtimes 3 (2 fresh) · 1 refuses to lead"
        await pilot.resize_terminal(160, 48)  # wider: the line as it always read
        await settled(pilot, app)
        assert shown(app, title) == (
            "Runtimes 3 (2 fresh) · leader app-1 pid 4242 (instance 6f1c2a9e), lease 5s · 1 refuses to lead")
