"""`awa-tui run --job-retention DURATION --job-keep N`: the leader's housekeeping prunes
finished jobs older than the horizon, keeping each schedule's last N, and never touches a
waiting job; bad values are one-line errors before anything starts."""

from __future__ import annotations

import signal
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cli_helpers import COMMAND, awa, cli_env, one_line_error
from helpers import wait_for
from psycopg.types.json import Jsonb

NAME = "old.schedule"


def _insert(conn: psycopg.Connection[Any], state: str, finished_ago: timedelta | None, created_ago: timedelta) -> int:
    row = conn.execute(
        "INSERT INTO awa.jobs (kind, queue, state, attempt, created_at, run_at, finalized_at, metadata) "
        "VALUES ('old.kind', 'default', %s, 1, now() - %s::interval, now() - %s::interval, now() - %s::interval, %s) "
        "RETURNING id",
        (state, created_ago, created_ago, finished_ago, Jsonb({"cron_name": NAME})),
    ).fetchone()
    assert row is not None
    return int(row["id"])


def _ids(conn: psycopg.Connection[Any]) -> list[int]:
    rows = conn.execute("SELECT id FROM awa.jobs WHERE metadata ->> 'cron_name' = %s ORDER BY id", (NAME,))
    return [r["id"] for r in rows.fetchall()]


def test_run_prunes_finished_jobs_past_the_horizon_keeping_the_last_n(
    dsn: str, conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    hours = timedelta(hours=1)
    waiting = _insert(conn, "available", None, 3 * hours)  # never touched, however old
    retrying = _insert(conn, "retryable", None, 3 * hours)
    old = [_insert(conn, "completed", 2 * hours, 2 * hours) for _ in range(5)]
    recent = _insert(conn, "completed", timedelta(minutes=10), timedelta(minutes=10))
    # Kept: the schedule's last 2 jobs (recent and old[-1]); pruned: old[0..3], finished
    # more than 1 h ago; the waiting ones stay.
    expected = sorted([waiting, retrying, old[-1], recent])
    log_path = tmp_path / "run.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [*COMMAND, "run", "--app", "cli_app:setup", "--dsn", dsn, "--job-retention", "1h", "--job-keep", "2"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=cli_env(),
        )
        try:
            wait_for(lambda: _ids(conn) == expected, timeout=30, what="the leader's retention round")
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=20) == 0, log_path.read_text()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert _ids(conn) == expected
    pruned = conn.execute("SELECT pruned_jobs FROM awa.ledger_pruned WHERE cron_name = %s", (NAME,)).fetchone()
    assert pruned == {"pruned_jobs": 4}
    assert "Traceback" not in log_path.read_text()


@pytest.mark.parametrize(("args", "message"), [
    (["--job-retention", "2x"], "error: --job-retention: expected a duration such as 90s, 15m, 1h30m, 14d, got '2x'"),
    (["--job-retention", "-1d"], "error: --job-retention: expected a duration such as 90s, 15m, 1h30m, 14d, "
                                 "got '-1d'"),
    (["--job-keep", "-1"], "error: --job-keep: expected 0..100000 jobs per schedule, got -1"),
    (["--job-keep", "100001"], "error: --job-keep: expected 0..100000 jobs per schedule, got 100001"),
])
def test_bad_retention_values_are_one_line_errors_before_anything_runs(dsn: str, conn: psycopg.Connection[Any],
                                                                       args: list[str], message: str) -> None:
    assert one_line_error(awa("run", "--app", "cli_app:setup", "--dsn", dsn, *args)) == message
    assert conn.execute("SELECT count(*) AS n FROM awa.runtime_instances").fetchone() == {"n": 0}
