"""README's headless runtime path (`awa-tui run`): fires, then stops cleanly on SIGTERM."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cli_helpers import COMMAND, HERE, awa, cli_env, one_line_error
from helpers import wait_for


def _jobs_of(conn: psycopg.Connection[Any], name: str) -> list[dict[str, Any]]:
    return conn.execute(
        "SELECT state, metadata FROM awa.jobs WHERE metadata ->> 'cron_name' = %s ORDER BY id", (name,)
    ).fetchall()


def _demo_count() -> int:
    """How many schedules the demo set declares (registered here without a database)."""
    from awa_tui import Client
    from awa_tui.demo import setup

    client = Client("postgresql://nobody@127.0.0.1:1/none", operator="test")
    setup(client)
    return len(client.schedules)


@pytest.mark.parametrize(
    ("source", "schedule"),
    [(["--app", "cli_app:setup"], "cli.tick"), (["--demo"], "demo.heartbeat")],
)
def test_run_fires_then_stops_cleanly_on_sigterm(
    dsn: str, conn: psycopg.Connection[Any], tmp_path: Path, source: list[str], schedule: str
) -> None:
    # A row written by hand with a bad zone: logged once per pass, never stopping the rest (S15).
    conn.execute(
        "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind) VALUES ('bad-row', '* * * * *', 'Mars/X', 'k')"
    )
    log_path = tmp_path / "run.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [*COMMAND, "run", *source, "--dsn", dsn], stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=cli_env(),
        )
        try:
            wait_for(lambda: _jobs_of(conn, schedule), timeout=20, what=f"a fire of {schedule} in awa.jobs")
            # Its worker runs the handler too.
            wait_for(lambda: any(j["state"] == "completed" for j in _jobs_of(conn, schedule)), timeout=10,
                     what="the fired job to complete")
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=20) == 0, log_path.read_text()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    output = log_path.read_text()
    # The only tracebacks are those of job failures, logged with the job (the demo's flaky one).
    lines = output.splitlines()
    traced = [lines[i - 1] for i, line in enumerate(lines) if line.startswith("Traceback")]
    assert all(" WARNING awa_tui.worker: job " in line and "(demo.flaky)" in line for line in traced), output
    assert "stopped cleanly (leader lock released)" in output
    # The registry was built with the collector off, then frozen (engine/runtime/heap.py).
    registered = re.search(r"(\d+) schedules registered \((\d+) objects frozen\)", output)
    assert registered is not None, output
    assert int(registered[1]) == (1 if source[0] == "--app" else _demo_count())
    assert int(registered[2]) > 0
    reports = [line for line in output.splitlines() if "schedule 'bad-row' skipped" in line]
    stamps = [line.split(" ")[1] for line in reports]  # one report per pass, not two
    assert reports and len(stamps) == len(set(stamps)), reports
    snapshots = conn.execute("SELECT * FROM awa.runtime_instances").fetchall()
    assert len(snapshots) == 1
    assert (snapshots[0]["health"], snapshots[0]["is_leader"], snapshots[0]["pid"]) == ("stopped", False, process.pid)
    assert snapshots[0]["stopped_at"] is not None
    locks = conn.execute(
        "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    ).fetchone()
    assert locks == {"n": 0}
    sessions = conn.execute(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    ).fetchone()
    assert sessions == {"n": 0}
    metadata = _jobs_of(conn, schedule)[0]["metadata"]
    assert metadata["cron_name"] == schedule and metadata["cron_fire_time"].endswith("Z")


def test_run_imports_the_app_from_the_current_directory(dsn: str) -> None:
    env = cli_env()
    env.pop("PYTHONPATH")
    result = subprocess.run(
        [*COMMAND, "run", "--app", "cli_app:invalid_setup", "--dsn", dsn], capture_output=True, text=True,
        env=env, cwd=HERE, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert one_line_error(result) == (
        "error: cron_expr: 'every day at noon' has 4 fields; expected 5 (min hour dom month dow) "
        "or 6 (sec min hour dom month dow)"
    )


@pytest.mark.parametrize(
    ("app_ref", "message"),
    [
        ("cli_app:broken_setup", "error: --app cli_app:broken_setup: setup failed: RuntimeError: the app's own bug"),
        ("cli_app:missing", "error: --app: 'cli_app' has no attribute 'missing'"),
        ("no_such_module:setup", "error: --app: cannot import 'no_such_module': No module named 'no_such_module'"),
        ("cli_app", "error: --app: expected module:attribute, got 'cli_app'"),
    ],
)
def test_run_with_a_bad_app_is_one_line(dsn: str, conn: psycopg.Connection[Any], app_ref: str, message: str) -> None:
    assert one_line_error(awa("run", "--app", app_ref, "--dsn", dsn)) == message
    assert conn.execute("SELECT count(*) AS n FROM awa.runtime_instances").fetchone() == {"n": 0}


def test_run_against_an_unreachable_database_ends_with_one_error_line() -> None:
    result = awa("run", "--app", "cli_app:setup", "--dsn", "postgresql://nobody:secret@127.0.0.1:1/x")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()  # `run` logs to stderr; the error is its last line, and the only one
    assert [line for line in lines if line.startswith("error: ")] == lines[-1:]
    assert lines[-1].startswith("error: cannot connect to nobody@127.0.0.1:1/x: ")
    assert "secret" not in result.stderr


@pytest.mark.parametrize(("args", "error"), [
    (["--concurrency", "0"], "error: concurrency: a whole number from 1 to 1000, got 0"),
    (["--queues", "reports=20", "--concurrency", "4"],
     "error: queues: reports's limit must be from 1 to the concurrency (4), got 20"),
    (["--shutdown-grace", "-1"], "error: --shutdown-grace: from 0 to 3600 seconds, got -1"),
    (["--log-level", "loud"], "error: --log-level: debug, info, warning or error, got 'loud'"),
    (["--fleet-alert-grace", "2s"], "error: --fleet-alert-grace: from 4 s to a day, got 2 s"),
    (["--fleet-stall-after", "2d"], "error: --fleet-stall-after: from 1 s to a day, got 172800 s"),
    (["--fleet-stall-after", "soon"],
     "error: --fleet-stall-after: expected a duration such as 30s, 10m, 2h or a number of seconds, got 'soon'"),
])
def test_run_refuses_bad_worker_options_in_one_line(args: list[str], error: str) -> None:
    """Refused before any database is touched (none is reachable here)."""
    assert one_line_error(awa("run", "--demo", "--dsn", "postgresql://nobody@127.0.0.1:1/none", *args)) == error


def test_sigterm_gives_the_grace_and_a_second_one_releases_the_running_job(
        dsn: str, conn: psycopg.Connection[Any], tmp_path: Path) -> None:
    """A real `awa-tui run` with a job whose handler never returns: the first SIGTERM stops
    claiming and waits out the grace (an hour here), the second releases the job at once and
    the process exits cleanly, saying what happened to the job."""
    job_id = conn.execute("INSERT INTO awa.jobs (kind) VALUES ('cli.block') RETURNING id").fetchone()["id"]  # type: ignore[index]
    log_path = tmp_path / "run.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [*COMMAND, "run", "--app", "cli_app:blocking_setup", "--dsn", dsn, "--shutdown-grace", "3600"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=cli_env(),
        )
        try:
            wait_for(lambda: conn.execute("SELECT state FROM awa.jobs WHERE id = %s", (job_id,)).fetchone()
                     == {"state": "running"}, timeout=30, what="the job running")
            process.send_signal(signal.SIGTERM)
            wait_for(lambda: "waiting up to 3600 s" in log_path.read_text(), timeout=20, what="the grace begun")
            assert process.poll() is None  # still giving the job its grace
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0, log_path.read_text()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    output = log_path.read_text()
    assert f"job {job_id} (cli.block) still running when a second signal came: released (retryable" in output
    row = conn.execute("SELECT state, errors FROM awa.jobs WHERE id = %s", (job_id,)).fetchone()
    assert row is not None and row["state"] == "retryable"
    assert row["errors"][-1]["reason"] == "interrupted"


def test_run_hands_the_fleet_thresholds_to_the_runtime() -> None:
    """--fleet-alert-grace and --fleet-stall-after become the Client's thresholds (S70); unset,
    the defaults stay."""
    from datetime import timedelta

    from awa_tui.bootstrap import build_client
    from awa_tui.cli.core import _fleet_thresholds
    from awa_tui.engine.core.limits import DEFAULT_FLEET_GRACE, DEFAULT_FLEET_STALL_AFTER

    given = _fleet_thresholds("90s", "2m")
    assert given == {"fleet_alert_grace": timedelta(seconds=90), "fleet_stall_after": timedelta(seconds=120)}
    client = build_client("postgresql://nobody@127.0.0.1:1/none", None, True, "test", **given)
    assert (client.fleet_alert_grace, client.fleet_stall_after) == (timedelta(seconds=90), timedelta(seconds=120))
    unset = build_client("postgresql://nobody@127.0.0.1:1/none", None, True, "test", **_fleet_thresholds(None, None))
    assert (unset.fleet_alert_grace, unset.fleet_stall_after) == (DEFAULT_FLEET_GRACE, DEFAULT_FLEET_STALL_AFTER)
