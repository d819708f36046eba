"""The jobs panel (key 6) and the job detail screen, on the seeded database with ledger
history (ledger_seed.py): newest first, the jobs filter grammar searched by the engine,
enter opens a job with each attempt's error and traceback, v links job and schedule both
ways, retry and cancel are confirmed, audited and refused with the reason."""

from __future__ import annotations

from typing import Any

import pytest
from ledger_seed import seeded  # noqa: F401  (the seeded database with ledger history)
from test_navigation import rendered
from tui_helpers import audit_actions, notes, select, settled, table_keys, until

from awa_tui.tui.panels.jobs import JobsPanel
from awa_tui.tui.screens.confirm import ConfirmScreen
from awa_tui.tui.screens.detail import DetailScreen
from awa_tui.tui.screens.job_detail import JobDetailScreen

ALL_JOBS = ["11", "10", "9", "8", "7", "6", "5", "4", "3", "2", "1"]



def title(app: Any) -> str:
    return str(app.main.panel("jobs").query_one(".panel-title").content)


def summary(app: Any) -> str:
    return str(app.main.panel("jobs").query_one("#jobs-summary").content)


def row_texts(app: Any, key: str) -> list[str]:
    table = app.main.panel("jobs").table
    return [str(c) for c in table.get_row(key)]


async def open_jobs(app: Any, pilot: Any) -> None:
    await pilot.press("6")
    await until(pilot, lambda: table_keys(app, "jobs") == ALL_JOBS, what="the jobs, newest first")


async def filtered(app: Any, pilot: Any, text: str, expected: list[str]) -> None:
    app.main.panel("jobs").filter_bar.value = text
    await until(pilot, lambda: table_keys(app, "jobs") == expected, what=f"jobs matching {text}")


async def test_jobs_panel_lists_every_job_newest_first_with_its_outcome(console):
    app, pilot = console
    await open_jobs(app, pilot)
    assert isinstance(app.main.panel("jobs"), JobsPanel)
    assert "Jobs 11 newest · 2 FAILED shown" in title(app)
    # JOB, SCHEDULE, STATE, LAST ERROR, FIRE (UTC), TRY, LATE, QUEUE (all fit at 120 columns).
    assert row_texts(app, "7") == ["7", "reports.hourly", "retryable", "TimeoutError: query ran past 10s",
                                   "03-08 12:00:00", "2/5", "0.5s", "reports"]
    assert row_texts(app, "3") == ["3", "cleanup.tmp-files", "discarded", "PermissionError: /tmp/spool is read-only",
                                   "03-08 11:00:00", "3/3", "0.3s", "default"]
    assert row_texts(app, "11") == ["11", "metrics.rollup", "completed", "-", "manual", "1/25", "-", "default"]
    assert row_texts(app, "10")[6] == "47s"
    select(app, "9", "jobs")
    await pilot.pause()
    assert summary(app) == (
        "job 9 crm.contact-sync: available (result waiting), attempt 0 of 25 · fired for 2025-03-08 12:00:30Z, "
        "0.1s late · queue integrations QUEUE PAUSED: it waits\nno error")


@pytest.mark.parametrize(("text", "expected"), [
    ("result:failed", ["7", "3"]),
    ("failed", ["7", "3"]),
    ("state:available", ["9", "8"]),
    ("schedule:metrics.rollup", ["11", "6", "5"]),
    ("schedule:metrics.*", ["11", "6", "5"]),
    ("manual", ["11"]),
    ("-manual schedule:METRICS.ROLLUP", ["6", "5"]),
    ("queue:integrations", ["9", "8"]),
    ("result:ok -queue:default", ["10", "2", "1"]),
    ("kind:settle", ["10"]),
    ("cleanup", ["4", "3"]),
])
async def test_jobs_filter_is_the_grammar_searched_by_the_engine(console, text, expected):
    app, pilot = console
    await open_jobs(app, pilot)
    await filtered(app, pilot, text, expected)
    assert f"filter: {text}" in title(app)


async def test_a_bad_jobs_filter_is_one_line_and_keeps_the_rows(console):
    app, pilot = console
    await open_jobs(app, pilot)
    await filtered(app, pilot, "result:failed", ["7", "3"])
    app.main.panel("jobs").filter_bar.value = "state:broken"
    await until(pilot, lambda: "unknown state" in title(app), what="the error")
    assert ("filter: state: unknown state 'broken'; states are available, running, completed, retryable, "
            "discarded, cancelled") in title(app)
    await settled(pilot, app)
    assert table_keys(app, "jobs") == ["7", "3"]


async def test_enter_opens_the_job_with_every_attempt_and_v_goes_to_its_schedule(console):
    app, pilot = console
    await open_jobs(app, pilot)
    select(app, "7", "jobs")
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen.data, what="the job detail")
    body = rendered(app.screen.query_one("#job-body").content)
    for line in (
        "job 7  reports.hourly  RETRYABLE  TimeoutError: query ran past 10s",
        "attempt 1  2025-03-08 12:00:01Z -> 2025-03-08 12:00:03Z  runtime 6f1c2a9e-0000-4000-8000-000000000001",
        "error: ConnectionError: warehouse refused the connection",
        'File "reports/build.py", line 41, in run',
        "attempt 2  2025-03-08 12:00:13Z -> 2025-03-08 12:00:23Z",
        "error: TimeoutError: query ran past 10s",
        "Failed attempts (2)",
    ):
        assert line in body, line
    assert [a.attempt for a in app.screen.data.attempts] == [1, 2]
    await pilot.press("v")
    await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.data, what="its schedule")
    assert app.screen.schedule_name == "reports.hourly"
    await pilot.press("escape")
    await until(pilot, lambda: isinstance(app.screen, JobDetailScreen), what="back to the job")
    await pilot.press("escape")
    await until(pilot, lambda: app.screen is app.main, what="back to the panels")


async def test_v_on_a_schedule_lists_its_jobs(console):
    app, pilot = console
    select(app, "metrics.rollup")
    await pilot.press("v")
    await until(pilot, lambda: app.active_panel == "jobs" and table_keys(app, "jobs") == ["11", "6", "5"],
                what="the schedule's jobs")
    assert "filter: schedule:metrics.rollup" in title(app)


async def test_v_on_the_schedule_detail_lists_its_jobs(console):
    app, pilot = console
    select(app, "cleanup.tmp-files")
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.data, what="detail")
    await pilot.press("v")
    await until(pilot, lambda: app.screen is app.main and table_keys(app, "jobs") == ["4", "3"],
                what="the schedule's jobs on the jobs panel")


async def test_retry_a_failed_job_is_confirmed_and_audited(console, conn):
    app, pilot = console
    await open_jobs(app, pilot)
    select(app, "3", "jobs")
    await pilot.press("t")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirm dialog")
    await pilot.press("y")
    await until(pilot, lambda: any("retried job 3" in n for n in notes(app)), what="done")
    row = conn.execute("SELECT state, finalized_at FROM awa.jobs WHERE id = 3").fetchone()
    assert row == {"state": "available", "finalized_at": None}
    assert audit_actions(conn)[-1] == ("alice@ops", "job_retry", "job:3")


async def test_cancel_a_waiting_job_and_ask_a_running_one_to_stop(console, conn):
    app, pilot = console
    await open_jobs(app, pilot)
    before = audit_actions(conn)
    select(app, "6", "jobs")
    await pilot.press("x")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirm dialog of a running job")
    await pilot.press("y")
    await until(pilot, lambda: any("asked job 6's runtime to stop it" in n for n in notes(app)), what="asked")
    row = conn.execute("SELECT state, cancel_requested_at IS NOT NULL AS asked FROM awa.jobs WHERE id = 6").fetchone()
    assert row == {"state": "running", "asked": True}  # its runtime stops it (tests/engine/jobs)
    assert audit_actions(conn)[len(before):] == [("alice@ops", "job_cancel", "job:6")]
    before = audit_actions(conn)
    select(app, "8", "jobs")
    await pilot.press("x")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirm dialog")
    await pilot.press("n")
    await until(pilot, lambda: app.screen is app.main, what="dialog closed")
    assert conn.execute("SELECT state FROM awa.jobs WHERE id = 8").fetchone() == {"state": "available"}
    await pilot.press("x")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirm dialog again")
    await pilot.press("y")
    await until(pilot, lambda: any("cancelled job 8" in n for n in notes(app)), what="done")
    assert conn.execute("SELECT state FROM awa.jobs WHERE id = 8").fetchone() == {"state": "cancelled"}
    assert audit_actions(conn)[len(before):] == [("alice@ops", "job_cancel", "job:8")]


@pytest.mark.console(read_only=True)
async def test_read_only_console_has_no_retry_or_cancel(console, conn):
    app, pilot = console
    await open_jobs(app, pilot)
    select(app, "3", "jobs")
    await pilot.press("t")
    await until(pilot, lambda: any("read-only console" in n for n in notes(app)), what="the read-only note")
    assert conn.execute("SELECT state FROM awa.jobs WHERE id = 3").fetchone() == {"state": "discarded"}


async def test_jobs_sort_by_any_column(console):
    app, pilot = console
    await open_jobs(app, pilot)
    panel = app.main.panel("jobs")
    panel.sort_by_column("state")  # by the state's word; ties keep newest first
    await until(pilot, lambda: table_keys(app, "jobs")[0] == "9", what="sorted by state")
    assert table_keys(app, "jobs") == ["9", "8", "11", "10", "5", "4", "2", "1", "3", "7", "6"]
    panel.sort_by_column("id")  # numbers as numbers: 1, 2, ... 11
    await until(pilot, lambda: table_keys(app, "jobs")[0] == "1", what="sorted by id")
    assert table_keys(app, "jobs") == [str(n) for n in range(1, 12)]


async def test_the_end_of_the_list_loads_older_jobs(console, conn):
    app, pilot = console
    conn.execute(
        "INSERT INTO awa.jobs (kind, queue, state, created_at, metadata) "
        "SELECT 'bulk.kind', 'bulk', 'completed', now(), jsonb_build_object('cron_name', 'bulk.' || n) "
        "FROM generate_series(1, 200) AS n")
    await pilot.press("6")
    await until(pilot, lambda: len(table_keys(app, "jobs")) == 200, what="the first page")
    assert table_keys(app, "jobs")[0] == "211" and table_keys(app, "jobs")[-1] == "12"
    assert "end of list loads more" in title(app)
    table = app.main.panel("jobs").table
    table.move_cursor(row=table.row_count - 1, animate=False)  # scrolled down there (G reads the last page)
    await until(pilot, lambda: len(table_keys(app, "jobs")) == 211, what="the next page")
    assert table_keys(app, "jobs")[-11:] == ALL_JOBS
    assert "end of list loads more" not in title(app)


async def test_v_puts_the_cursor_on_the_schedules_newest_job(console):
    """The cursor was on the oldest job of the whole list: after v it is on the schedule's
    newest, not kept at its old place (which was the schedule's oldest)."""
    app, pilot = console
    await open_jobs(app, pilot)
    select(app, "1", "jobs")
    await pilot.press("1")
    select(app, "metrics.rollup")
    await pilot.press("v")
    await until(pilot, lambda: table_keys(app, "jobs") == ["11", "6", "5"], what="the schedule's jobs")
    assert app.main.panel("jobs").table.selected_key == "11"


async def test_v_then_enter_opens_the_newest_job(console):
    """`v` then enter at once (before the filtered page may have arrived): enter waits for
    that page and opens the schedule's newest job, never one of the old list."""
    app, pilot = console
    await open_jobs(app, pilot)
    select(app, "1", "jobs")
    await pilot.press("1")
    select(app, "metrics.rollup")
    await pilot.press("v", "enter")
    await until(pilot, lambda: isinstance(app.screen, JobDetailScreen), what="a job detail")
    assert app.screen.job_id == 11
