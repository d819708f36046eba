"""`check` warns about jobs waiting more than ten minutes past their run time (workers
behind or not running), per queue, leaving out queues an operator paused; the same age is
served as a metric (test_metrics.py)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg
from cli_helpers import awa

from awa_tui.engine.health.check import check

NOW = datetime.fromisoformat("2026-12-06T12:00:00+00:00")


def _waiting(conn: psycopg.Connection[Any], queue: str, ago: timedelta, count: int = 1) -> None:
    conn.execute("INSERT INTO awa.jobs (kind, queue, run_at) SELECT 'report.build', %s, %s "
                 "FROM generate_series(1, %s)", (queue, NOW - ago, count))


def _waiting_problems(conn: psycopg.Connection[Any]) -> list[tuple[str, bool]]:
    return [(p.message, p.warning) for p in check(conn, now=NOW).fleet if p.code == "jobs_waiting"]


def test_queues_with_jobs_waiting_past_ten_minutes_are_named_with_the_oldest_age(
    conn: psycopg.Connection[Any], client: Any
) -> None:
    client.migrate()
    _waiting(conn, "reports", timedelta(minutes=12), 3)
    _waiting(conn, "reports", timedelta(hours=1, minutes=2, seconds=5))
    _waiting(conn, "reports", timedelta(minutes=9))  # within the ten minutes: not counted
    _waiting(conn, "default", timedelta(minutes=9, seconds=59))
    _waiting(conn, "held", timedelta(days=2))  # a paused queue: the operator's choice
    conn.execute("INSERT INTO awa.queue_meta (queue, paused) VALUES ('held', true)")
    conn.execute("INSERT INTO awa.jobs (kind, queue, run_at, state) VALUES ('report.build', 'done', %s, 'completed')",
                 (NOW - timedelta(days=1),))
    assert _waiting_problems(conn) == [
        ("4 job(s) on queue reports waited over 10m00s past their run time (the oldest 1h02m): "
         "workers are behind or not running", True)]


def test_the_warning_is_one_line_of_check_and_exit_1(conn: psycopg.Connection[Any], client: Any, dsn: str) -> None:
    client.migrate()
    conn.execute("INSERT INTO awa.jobs (kind, queue, run_at) VALUES ('report.build', 'reports', "
                 "now() - interval '3 hours')")
    result = awa("check", "--dsn", dsn)
    waiting = [line for line in result.stdout.splitlines() if "fleet jobs_waiting" in line]
    assert len(waiting) == 1 and waiting[0].startswith(
        "WARNING fleet jobs_waiting: 1 job(s) on queue reports waited over 10m00s past their run time (the oldest 3h0")
    assert result.returncode == 2  # nothing leads in this test database: no_leader, critical, sets the code
