"""ATTENTION on every panel and a live STALE counter (S75, issues 39 and 34).

A session of the test holds ACCESS EXCLUSIVE on the schedules' table the console's refresh
reads: the STALE counter moves every second while nothing answers, and names the session in
the way, read on a second connection. The leader's last pass given up on a lock, and jobs of
a kind no live runtime handles, show on the schedules panel (and the others), counted. The
oracles are the test's own: the locking session's pid, the rows it writes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from tui_helpers import ready, screen_text, settled, until, write_runtime_json
from tui_seed import NOW, RUNTIMES

from awa_tui.engine.health.models import UnservedKind
from awa_tui.engine.read.fleet import Blocker, HeldLock, ReadWait
from awa_tui.tui.attention import Problem, attention_forms, attention_line, unserved_problem, wait_text

LEADER = str(RUNTIMES[0]["instance_id"])


@contextmanager
def table_locked(dsn: str, table: str = "awa.cron_jobs") -> Iterator[int]:
    """A session holding ACCESS EXCLUSIVE on `table` until the block ends; yields its pid."""
    with psycopg.connect(dsn, application_name="attention test") as locker:
        locker.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        try:
            yield locker.info.backend_pid
        finally:
            locker.rollback()


def counter(app: Any) -> int | None:
    """The seconds of 'no answer for Ns' in the STALE reason, if it says so."""
    found = re.match(r"no answer for (\d+)s", app.freshness.stale_reason) if app.freshness.stale else None
    return int(found.group(1)) if found else None


def screen_line(app: Any, word: str) -> str:
    """The terminal's line holding `word`, as shown (cut at the terminal's width)."""
    lines = [line for line in screen_text(app).replace("&#x27;", "'").splitlines() if word in line]
    assert len(lines) == 1, lines
    return lines[0].rstrip()


def status_text(app: Any) -> str:
    return " ".join(str(app.main.query_one("#status-bar").render()).split())


async def test_a_stuck_refresh_counts_every_second_and_names_the_lock_in_its_way(console_factory: Any,
                                                                                   seeded: str) -> None:
    app = console_factory()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot, app)
        with table_locked(seeded) as pid:
            app.refresh_now()
            blocker = (f"pid {pid} holds ACCESS EXCLUSIVE on table awa.cron_jobs (user postgres, attention test, "
                       "idle in transaction: LOCK TABLE awa.cron_jobs)")
            await until(pilot, lambda: blocker in app.freshness.stale_reason, timeout=20,
                        what="STALE naming the locking session")
            first = counter(app)
            assert first is not None and app.poller.in_flight  # no read answered: the UI's clock moved it
            assert app.freshness.stale_reason == f"no answer for {first}s: {blocker}"
            assert f"STALE no answer for {first}s: {blocker} · last good data 12:00:30Z" in status_text(app)
            await until(pilot, lambda: (counter(app) or 0) > first, what="the counter moving on")
            assert app.poller.in_flight

            # Negative control: without the UI's one-second tick the text stays where it was
            # while the fetch runs on (what the console did before: it was set once).
            app.watchdog_timer.pause()
            frozen = app.freshness.stale_reason
            shown = counter(app) or 0
            await until(pilot, lambda: (app.poller.running() or 0) >= shown + 3, what="three seconds more")
            assert app.freshness.stale_reason == frozen
            app.watchdog_timer.resume()
            await until(pilot, lambda: (counter(app) or 0) >= shown + 3, what="the counter catching up")
        await until(pilot, lambda: not app.freshness.stale, timeout=15, what="the refresh answering")
        assert "STALE" not in status_text(app) and "no answer" not in status_text(app)


BLOCKED = [  # the leader's newest pass gave up on a lock another session held (S59)
    {"at": (NOW - timedelta(seconds=1)).isoformat(), "duration_ms": 2004.0, "due": 0, "fired": 0, "errors": 0,
     "timed_out": True,
     "blockers": [{"pid": 4243, "user": "alice", "application": "psql", "state": "idle in transaction",
                   "kind": "LOCK TABLE awa.jobs", "waited_for": "table awa.jobs"}]},
]
# As the runtimes panel says the blockers (describe), after the pass's headline.
PASS_LINE = ("leader's last pass TIMED OUT after 2.0 s: blocked by session 4243 "
             "(user alice, psql, idle in transaction) holding table awa.jobs: LOCK TABLE awa.jobs")


def write_passes(conn: Any, passes: list[dict[str, Any]]) -> None:
    write_runtime_json(conn, LEADER, "recent_passes", passes)


async def test_the_leaders_timed_out_pass_shows_on_the_schedules_panel(console_factory: Any, conn: Any) -> None:
    write_passes(conn, BLOCKED)
    app = console_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        assert app.active_panel == "schedules"
        assert app.freshness.attention == PASS_LINE
        # At 80 columns the line is cut, its start kept: the badge and the session's pid.
        assert screen_line(app, "ATTENTION") == \
            " ATTENTION  leader's last pass TIMED OUT after 2.0 s: blocked by session 4243…"
        await pilot.press("5")  # and on another panel
        await settled(pilot, app)
        assert app.freshness.attention == PASS_LINE


def jobs_waiting(conn: Any, kind: str, count: int) -> None:
    conn.execute("INSERT INTO awa.jobs (kind, queue, run_at) SELECT %s, 'reports', %s::timestamptz "
                 "FROM generate_series(1, %s)", (kind, NOW - timedelta(minutes=2), count))


async def test_an_unserved_kind_shows_with_its_count(console_factory: Any, conn: Any) -> None:
    # The live runtime (app-1) handles every kind the seed's jobs have: only the new one is unserved.
    conn.execute("UPDATE awa.runtime_instances SET handled_kinds = "
                 "(SELECT coalesce(array_agg(DISTINCT kind), '{}') FROM awa.jobs) WHERE instance_id = %s",
                 (LEADER,))
    jobs_waiting(conn, "dropped.report", 75)
    jobs_waiting(conn, "served.elsewhere", 3)
    conn.execute("UPDATE awa.runtime_instances SET handled_kinds = handled_kinds || '{served.elsewhere}' "
                 "WHERE instance_id = %s", (LEADER,))
    app = console_factory()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot, app)
        line = "75 jobs of kind dropped.report waiting, no live runtime handles it"
        assert app.freshness.attention == line
        assert screen_line(app, "ATTENTION") == f" ATTENTION  {line}"
        await pilot.press("3")  # the runtimes panel says it too
        await settled(pilot, app)
        assert app.freshness.attention == line


async def test_every_problem_counted_first_on_one_line(console_factory: Any, conn: Any) -> None:
    write_passes(conn, BLOCKED)
    conn.execute("UPDATE awa.runtime_instances SET handled_kinds = '{}' WHERE instance_id = %s", (LEADER,))
    jobs_waiting(conn, "dropped.report", 1200)
    app = console_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        assert app.freshness.attention == ("leader's pass TIMED OUT (session 4243) · "
                                           "1,200 jobs unserved (kind dropped.report)")
        assert app.freshness.attention_count == 2
        # The count in the badge, and each problem's own count, within 80 columns: the last
        # one by its bare count (its kind needs the room the first one's session takes).
        assert screen_line(app, "ATTENTION") == \
            " ATTENTION 2  leader's pass TIMED OUT (session 4243) · 1,200 jobs unserved"


async def test_the_worst_schedule_shows_on_the_other_panels(console_factory: Any, conn: Any) -> None:
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute("INSERT INTO awa.cron_health (name, health, since, reason) VALUES "
                     "('reports.hourly', 'failing', %s, 'job 7 failed\x1b[2J'), ('weekly.digest', 'late', %s, NULL)",
                     (NOW - timedelta(minutes=5), NOW - timedelta(minutes=1)))
    app = console_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        assert app.freshness.attention is None  # the schedules panel has its own line (S42)
        await pilot.press("5")
        await settled(pilot, app)
        line = ("schedule reports.hourly FAILING (+1 more unhealthy) since 2025-03-08 11:55:30Z: "
                "job 7 failed\\x1b[2J")
        assert app.freshness.attention == line
        assert screen_line(app, "ATTENTION") == \
            " ATTENTION  schedule reports.hourly FAILING (+1 more unhealthy) since 2025-03…"


def test_the_words() -> None:
    assert attention_line([None, None]) == (None, 0)
    assert attention_line([Problem("a in full", "a"), None, Problem("b in full", "b")]) == ("a · b", 2)
    assert attention_forms([Problem("a in full", "a (x)", "a"), Problem("b in full", "b (y)", "b"), None,
                            Problem("c in full", "c (z)")]) == ("a (x) · b (y) · c (z)", "a (x) · b · c (z)",
                                                               "a · b · c (z)")
    assert attention_forms([Problem("a in full", "a (x)", "a")]) == ("a in full",)
    assert attention_forms([None]) == ()
    assert unserved_problem([UnservedKind("a.x", 1200, ("q",)), UnservedKind("b\x1b", 3, ("q",))]) == Problem(
        "1,203 jobs of 2 kinds waiting, no live runtime handles them: a.x 1,200, b\\x1b 3",
        "1,203 jobs unserved (2 kinds)", "1,203 jobs unserved")
    blocker = Blocker(pid=7, application="", state="active", kind="", waited_for="a transactionid", user="")
    assert wait_text(ReadWait(9, (HeldLock(blocker, ""), HeldLock(blocker, "SHARE")))) == (
        "pid 7 is ahead of it for a transactionid (user unknown, no application name, active: statement not shown)"
        " (+1 more sessions)")
    assert wait_text(ReadWait(9)) == "it waits on no lock (a slow statement, or the network)"
    assert wait_text(None) == ""
    assert wait_text(None, "timed out") == "could not tell what it waits on (timed out)"


@pytest.mark.parametrize("size", [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")])
def test_snapshot_attention_with_two_problems(snap_compare: Any, console_factory: Any, conn: Any,
                                              size: tuple[int, int]) -> None:
    write_passes(conn, BLOCKED)
    conn.execute("UPDATE awa.runtime_instances SET handled_kinds = '{}' WHERE instance_id = %s", (LEADER,))
    jobs_waiting(conn, "dropped.report", 1200)
    assert snap_compare(console_factory(), terminal_size=size, run_before=lambda pilot: ready(pilot, pilot.app))
