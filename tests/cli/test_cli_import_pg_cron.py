"""`awa-tui import pg-cron` and `awa-tui run --sql-jobs` (S68), the real executable against
a real pg_cron (the `pg_cron` fixture: Debian's postgresql-15-cron on a server of our own)."""

from __future__ import annotations

import json
import signal
import subprocess
from datetime import UTC
from pathlib import Path
from typing import Any

import psycopg
from cli_helpers import COMMAND, awa, cli_env, one_line_error, table
from helpers import wait_for
from psycopg.rows import dict_row

from awa_tui import Client


def _conn(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True, row_factory=dict_row)  # type: ignore[arg-type]


def _with_password(dsn: str) -> str:
    # Trust authentication ignores it: the DSN works, and its password must never be shown.
    return f"{dsn} password=s3cret-Pw"


def _made(awa_dsn: str) -> list[dict[str, Any]]:
    with _conn(awa_dsn) as conn:
        return conn.execute("SELECT name, paused_at IS NOT NULL AS paused FROM awa.cron_jobs ORDER BY name").fetchall()


def test_dry_run_shows_the_plan_and_its_refusals_and_writes_nothing(pg_cron: tuple[str, str]) -> None:
    source, awa_dsn = pg_cron
    with _conn(source) as conn:
        conn.execute("SELECT cron.schedule('report', '0 6 * * 1', %s)", ("SELECT 'a\x1b[31mred'",))
        boot = conn.execute("SELECT cron.schedule('boot', '@reboot', 'SELECT 2') AS id").fetchone()
    assert boot is not None
    result = awa("import", "pg-cron", "--from", _with_password(source), "--dsn", awa_dsn, "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "s3cret" not in result.stdout + result.stderr
    rows = [{k: r[k] for k in ("NAME", "CRON", "ZONE", "ACTIVE", "ACTION")} for r in table(result.stdout)]
    assert rows == [{"NAME": "report", "CRON": "0 6 * * 1", "ZONE": "UTC", "ACTIVE": "yes", "ACTION": "create"},
                    {"NAME": "boot", "CRON": "-", "ZONE": "UTC", "ACTIVE": "yes", "ACTION": "refused"}]
    assert result.stderr == (f"job {boot['id']} (boot) cannot be carried over: schedule '@reboot': @reboot runs "
                             "at server start: awa has no start-up fires\n")
    as_json = awa("import", "pg-cron", "--from", _with_password(source), "--dsn", awa_dsn, "--dry-run", "--json")
    assert as_json.returncode == 0 and as_json.stderr == ""
    plan = json.loads(as_json.stdout)
    assert "s3cret" not in as_json.stdout and plan["owner"] == "pg_cron"
    assert [(j["name"], j["action"], j["command"]) for j in plan["jobs"]] == [
        ("report", "create", "SELECT 'a\x1b[31mred'"), ("boot", "refused", "SELECT 2")]
    assert _made(awa_dsn) == []


def test_a_refused_job_stops_the_import_unless_the_rest_are_asked_for(pg_cron: tuple[str, str]) -> None:
    source, awa_dsn = pg_cron
    with _conn(source) as conn:
        conn.execute("SELECT cron.schedule('report', '0 6 * * 1', 'SELECT 1')")
        conn.execute("SELECT cron.schedule('boot', '@reboot', 'SELECT 2')")
        conn.execute("SELECT cron.alter_job(cron.schedule('dormant', '0 7 * * 1', 'SELECT 3'), active := false)")
    refused = awa("import", "pg-cron", "--from", _with_password(source), "--dsn", awa_dsn)
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[-1] == (
        "error: 1 of 3 pg_cron jobs cannot be carried over (the plan says why); nothing was written: "
        "pass --skip-refused to import the rest")
    assert _made(awa_dsn) == []
    with _conn(source) as conn:  # a run pg_cron's worker logged (as data: its next Monday is far)
        conn.execute("INSERT INTO cron.job_run_details (jobid, database, username, command, status, return_message,"
                     " start_time, end_time) SELECT jobid, database, username, command, 'failed', 'ERROR:  boom',"
                     " '2026-01-05 06:00:00.02+00', '2026-01-05 06:00:00.03+00' FROM cron.job WHERE jobname = 'report'")
    done = awa("import", "pg-cron", "--from", source, "--dsn", awa_dsn, "--skip-refused", "--history")
    assert done.returncode == 0, done.stderr
    assert "created report (paused: pg_cron still runs it)" in done.stdout.splitlines()
    assert "created dormant (paused: inactive in pg_cron)" in done.stdout.splitlines()
    assert "carried 1 pg_cron runs over as finished jobs" in done.stdout.splitlines()
    assert done.stderr.splitlines()[-1] == "left in pg_cron: boot"
    assert _made(awa_dsn) == [{"name": "dormant", "paused": True}, {"name": "report", "paused": True}]
    listed = awa("jobs", "list", "--schedule", "report", "--dsn", awa_dsn, "--json")
    assert listed.returncode == 0, listed.stderr
    assert [(j["state"], j["fire_time"], j["last_error"], j["duration_s"]) for j in json.loads(listed.stdout)] == [
        ("discarded", "2026-01-05T06:00:00+00:00", "ERROR:  boom", 0.01)]
    with _conn(source) as conn:
        conn.execute("DELETE FROM cron.job_run_details")


def test_a_source_that_cannot_be_reached_is_one_line_without_the_password(pg_cron: tuple[str, str]) -> None:
    _, awa_dsn = pg_cron
    line = one_line_error(awa("import", "pg-cron", "--from",
                              "postgresql://someone:s3cret-Pw@127.0.0.1:1/nowhere", "--dsn", awa_dsn))
    assert line.startswith("error: --from someone@127.0.0.1:1/nowhere: cannot connect: ")
    assert "s3cret" not in line
    # A database without pg_cron: one line saying what to check.
    assert one_line_error(awa("import", "pg-cron", "--from", awa_dsn, "--dsn", awa_dsn)) == (
        "error: --from: no cron.job table there: is pg_cron installed in this database (its cron.database_name)?")


def test_run_options_of_sql_jobs_are_refused_in_one_line() -> None:
    assert one_line_error(awa("run", "--dsn", "postgresql://x@127.0.0.1:1/x")) == (
        "error: nothing to run: pass --demo, --app module:attribute or --sql-jobs")
    assert one_line_error(awa("run", "--demo", "--sql-timeout", "5", "--dsn", "postgresql://x@127.0.0.1:1/x")) == (
        "error: --sql-timeout applies only with --sql-jobs")
    assert one_line_error(awa("run", "--sql-jobs", "--sql-timeout", "0", "--dsn", "postgresql://x@127.0.0.1:1/x")) == (
        "error: --sql-timeout: more than 0 and at most 86400 seconds, got 0")


def test_run_with_sql_jobs_runs_an_imported_jobs_sql(pg_cron: tuple[str, str], tmp_path: Path) -> None:
    source, awa_dsn = pg_cron
    db = source.rsplit("dbname=", 1)[1]
    with _conn(source) as conn:
        conn.execute("DROP TABLE IF EXISTS cli_ran")
        conn.execute("CREATE TABLE cli_ran (who text)")
    with Client(awa_dsn, operator="tester@test") as client:
        job_id = client.enqueue("awa.sql", {"command": "INSERT INTO cli_ran VALUES (current_user)", "database": db,
                                            "role": "postgres"}, max_attempts=1)
    log_path = tmp_path / "run.log"
    with open(log_path, "w") as log, _conn(awa_dsn) as conn:
        process = subprocess.Popen([*COMMAND, "run", "--sql-jobs", "--no-migrate", "--dsn", awa_dsn], stdout=log,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=cli_env())
        try:
            wait_for(lambda: conn.execute("SELECT state FROM awa.jobs WHERE id = %s", (job_id,)).fetchone()["state"]
                     == "completed", 30, what="the SQL job to complete")
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=20) == 0, log_path.read_text()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    with _conn(source) as conn:
        assert conn.execute("SELECT who FROM cli_ran").fetchall() == [{"who": "postgres"}]
        conn.execute("DROP TABLE cli_ran")
    assert "0 schedules registered" in log_path.read_text()


def test_names_from_pg_cron_reach_the_terminal_escaped_and_the_switch_is_planned(pg_cron: tuple[str, str]) -> None:
    source, awa_dsn = pg_cron
    with _conn(source) as conn:
        conn.execute("SELECT cron.schedule('report', '0 6 * * 1', 'SELECT 1')")
        evil = conn.execute("SELECT cron.schedule(%s, '0 7 * * *', 'SELECT 2') AS id", ("ev\x1b[2Jil",)).fetchone()
    assert evil is not None
    result = awa("import", "pg-cron", "--from", source, "--dsn", awa_dsn, "--dry-run", "--unschedule")
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout + result.stderr
    assert [(r["NAME"], r["ACTION"]) for r in table(result.stdout)] == [("report", "switch"),
                                                                         ("ev\\x1b[2Jil", "refused")]
    assert result.stderr == (f"job {evil['id']} (ev\\x1b[2Jil) cannot be carried over: name: must not contain "
                             "control characters: 'ev\\x1b[2Jil'\n")
    assert _made(awa_dsn) == []


def test_unschedule_switches_a_job_over_and_says_from_when(pg_cron: tuple[str, str]) -> None:
    source, awa_dsn = pg_cron
    with _conn(source) as conn:
        row = conn.execute("SELECT cron.schedule('new-year', '0 0 1 1 *', 'SELECT 1') AS id,"
                           " date_trunc('year', now() AT TIME ZONE 'UTC') + interval '1 year' AS next").fetchone()
    assert row is not None
    at = row["next"].replace(tzinfo=UTC)  # the next 1 January, 00:00 UTC
    done = awa("import", "pg-cron", "--from", source, "--dsn", awa_dsn, "--unschedule")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines()[-2:] == [
        "created new-year", f"switched new-year: awa runs it from {at.isoformat()}, pg_cron job {row['id']} is "
        "deactivated"]
    with _conn(source) as conn:
        assert conn.execute("SELECT active FROM cron.job").fetchall() == [{"active": False}]
    assert _made(awa_dsn) == [{"name": "new-year", "paused": False}]


def test_the_consoles_sql_timeout_is_refused_alone_or_out_of_range() -> None:
    alone = awa("--sql-timeout", "30")
    assert (alone.returncode, alone.stderr) == (1, "error: --sql-timeout applies only with --sql-jobs\n")
    far = awa("--lead", "--sql-jobs", "--sql-timeout", "0")
    assert (far.returncode, far.stderr) == (1, "error: --sql-timeout: more than 0 and at most 86400 seconds, got 0\n")

