"""CLI parity: `cron resume --dry-run`, `run` as an authoritative owner, options before the
subcommand, and the running embedded Postgres as the fallback database (S38, S37, S16)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cli_helpers import COMMAND, awa, awa_json, cli_env, one_line_error
from helpers import wait_for

from awa_tui import Client, embedded
from awa_tui.engine import migrations

# --- cron resume --dry-run ------------------------------------------------------------------


def _jan1(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=UTC)


def _state(conn: psycopg.Connection[Any], name: str) -> tuple[Any, ...]:
    row = conn.execute(
        "SELECT xmin::text AS xmin, paused_at, paused_by, last_enqueued_at, next_fire_at FROM awa.cron_jobs "
        "WHERE name = %s", (name,)).fetchone()
    counts = conn.execute(
        "SELECT (SELECT count(*) FROM awa.audit_log) AS audit, (SELECT count(*) FROM awa.jobs) AS jobs").fetchone()
    assert row is not None and counts is not None
    return (*row.values(), counts["audit"], counts["jobs"])


@pytest.fixture
def yearly(client: Client, conn: psycopg.Connection[Any]) -> int:
    """Two paused yearly schedules (Jan 1, 00:00 UTC) last fired three New Years ago; returns
    the database's current year. Missed since then: Jan 1 of each of the last three years."""
    client.periodic("replay", "0 0 1 1 *", "k", missed_fire_policy="catch_up")
    client.periodic("latest", "0 0 1 1 *", "k", missed_fire_policy="coalesce")
    client.sync()
    row = conn.execute("SELECT extract(year FROM now() AT TIME ZONE 'UTC')::int AS y").fetchone()
    assert row is not None
    year = int(row["y"])
    conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = %s", (_jan1(year - 3),))
    client.actions.pause("replay", operator="alice@ops")
    client.actions.pause("latest", operator="alice@ops")
    return year


def test_resume_dry_run_prints_the_preview_and_writes_nothing(dsn: str, conn: Any, yearly: int) -> None:
    y = yearly
    before = _state(conn, "replay")
    text = awa("cron", "resume", "replay", "--dry-run", "--dsn", dsn)
    assert (text.returncode, text.stderr) == (0, "")
    assert text.stdout.splitlines() == [
        f"replay: catch_up: resuming fires 3 missed instants now ({y - 2}-01-01T00:00:00Z .. {y}-01-01T00:00:00Z)",
        "dry run: nothing changed, the schedule is still paused",
    ]
    data = awa_json("cron", "resume", "replay", "--dry-run", "--dsn", dsn)
    assert {k: v for k, v in data.items() if k not in ("now", "explanation")} == {
        "name": "replay", "policy": "catch_up", "count": 3,
        "first": f"{y - 2}-01-01T00:00:00+00:00", "last": f"{y}-01-01T00:00:00+00:00", "coalesced_instant": None,
        "instants": [f"{y - 2}-01-01T00:00:00+00:00", f"{y - 1}-01-01T00:00:00+00:00", f"{y}-01-01T00:00:00+00:00"],
        "more": False, "next_fire": f"{y + 1}-01-01T00:00:00+00:00",
    }
    assert _state(conn, "replay") == before  # same row version, still paused, no audit row, no job

    coalesced = awa_json("cron", "resume", "latest", "--dry-run", "--dsn", dsn)
    assert (coalesced["policy"], coalesced["count"], coalesced["coalesced_instant"], coalesced["instants"]) == (
        "coalesce", 1, f"{y}-01-01T00:00:00+00:00", [f"{y}-01-01T00:00:00+00:00"])


def test_resume_dry_run_errors_are_one_line(dsn: str, client: Client, yearly: int) -> None:
    client.actions.resume("latest", operator="alice@ops")
    assert one_line_error(awa("cron", "resume", "latest", "--dry-run", "--dsn", dsn)) == (
        "error: schedule 'latest' is not paused")
    assert one_line_error(awa("cron", "resume", "nope", "--dry-run", "--dsn", dsn)) == (
        "error: unknown schedule 'nope'")


# --- run as an authoritative owner ------------------------------------------------------------


def test_run_as_authoritative_owner(dsn: str, conn: psycopg.Connection[Any], tmp_path: Path) -> None:
    log_path = tmp_path / "run.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [*COMMAND, "run", "--app", "cli_app:setup", "--owner", "billing", "--authoritative",
             "--retire-grace", "2m", "--dsn", dsn],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=cli_env(),
        )
        try:
            snapshot = wait_for(
                lambda: conn.execute("SELECT owner, authoritative, retire_grace, manifest_hash "
                                     "FROM awa.runtime_instances").fetchone(),
                timeout=20, what="the runtime's snapshot")
            assert (snapshot["owner"], snapshot["authoritative"], snapshot["retire_grace"]) == (
                "billing", True, timedelta(minutes=2))
            assert snapshot["manifest_hash"] is not None  # an authoritative runtime publishes its manifest
            row = conn.execute("SELECT owner FROM awa.cron_jobs WHERE name = 'cli.tick'").fetchone()
            assert row == {"owner": "billing"}
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=20) == 0, log_path.read_text()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert "Traceback" not in log_path.read_text()


def test_run_ownership_options_are_checked_first(dsn: str, conn: psycopg.Connection[Any]) -> None:
    run = ("run", "--app", "cli_app:setup", "--dsn", dsn)
    cases = {
        ("--authoritative",):
            "error: --authoritative needs --owner OWNER: the owner whose complete manifest this runtime declares",
        ("--owner", "billing", "--retire-grace", "10m"):
            "error: --retire-grace applies only with --authoritative (only an authoritative owner retires schedules)",
        ("--owner", "billing", "--authoritative", "--retire-grace", "soon"):
            "error: --retire-grace: expected a duration such as 30s, 10m, 2h or a number of seconds, got 'soon'",
        ("--owner", "billing", "--authoritative", "--retire-grace", "-5"):
            "error: --retire-grace: expected a duration such as 30s, 10m, 2h or a number of seconds, got '-5'",
        ("--owner", "", "--authoritative"):
            "error: owner: must be 1..200 characters without control characters, got ''",
    }
    for extra, expected in cases.items():
        assert one_line_error(awa(*run, *extra)) == expected
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone() == {"n": 0}  # nothing synced


# --- options before the subcommand -----------------------------------------------------------


def test_dsn_json_and_operator_before_the_subcommand(dsn: str, client: Client, conn: Any, tmp_path: Path) -> None:
    client.periodic("nightly", "30 2 * * *", "k")
    client.sync()
    client.runtime.snapshot()
    path = tmp_path / "dsn"
    path.write_text(dsn)
    path.chmod(0o600)
    after = awa_json("runtime", "list", "--dsn", dsn)
    assert len(after) == 1
    for before in (["--dsn", dsn], ["--dsn-file", str(path)]):
        result = awa(*before, "--json", "runtime", "list")
        assert (result.returncode, result.stderr) == (0, "")
        assert json.loads(result.stdout) == after
        mixed = awa(*before, "cron", "list", "--json")
        assert (mixed.returncode, mixed.stderr) == (0, "")
        assert [r["name"] for r in json.loads(mixed.stdout)] == ["nightly"]

    paused = awa("--dsn", dsn, "--operator", "alice@ops", "cron", "pause", "nightly")
    assert (paused.returncode, paused.stdout.strip(), paused.stderr) == (0, "paused nightly", "")
    resumed = awa("--operator", "bob@ops", "--json", "cron", "resume", "nightly", "--dsn", dsn)
    assert resumed.returncode == 0 and json.loads(resumed.stdout)["name"] == "nightly"
    audit = conn.execute("SELECT operator, action FROM awa.audit_log ORDER BY id").fetchall()
    assert [(a["operator"], a["action"]) for a in audit] == [("alice@ops", "pause"), ("bob@ops", "resume")]


def test_options_before_and_after_that_disagree_are_refused(dsn: str) -> None:
    other = dsn.replace("dbname=", "dbname=other_")
    assert one_line_error(awa("--dsn", dsn, "cron", "list", "--dsn", other)) == (
        "error: --dsn/--dsn-file given both before and after the subcommand, with different values: give it once")
    assert one_line_error(awa("--operator", "a@x", "cron", "pause", "n", "--operator", "b@x", "--dsn", dsn)) == (
        "error: --operator given both before and after the subcommand, with different labels: give it once")
    assert one_line_error(awa("--dsn", dsn, "db", "stop")) == (
        "error: --dsn/--dsn-file: `db stop` does not use a database URL")
    same = awa("--dsn", dsn, "cron", "list", "--dsn", dsn, "--json")
    assert (same.returncode, same.stdout.strip(), same.stderr) == (0, "[]", "")


# --- the running embedded Postgres as the fallback ------------------------------------------


@pytest.fixture
def home() -> Iterator[Path]:
    """A private embedded home (short: the socket path must stay under 108 bytes), stopped
    and removed at the end: the user's real one is never touched."""
    path = Path(tempfile.mkdtemp(prefix="awa-m-", dir="/tmp"))
    yield path
    embedded.stop(path)
    shutil.rmtree(path, ignore_errors=True)


def test_commands_use_the_embedded_postgres_only_while_it_runs(home: Path) -> None:
    env = cli_env(AWA_EMBEDDED_HOME=str(home))
    no_db = "error: no database configured: pass --dsn or set AWA_DATABASE_URL (or DATABASE_URL, PG* variables)"
    assert one_line_error(awa("cron", "list", env=env)) == no_db
    assert not (home / "data").exists()  # nothing was started by the failed command

    server = embedded.ensure_running(home)
    migrations.migrate(server.dsn())
    reuse = f"host={home}/run port=5432 user=postgres dbname=awa"
    listed = awa("cron", "list", "--json", env=env)
    assert (listed.returncode, listed.stdout.strip()) == (0, "[]"), listed.stderr
    assert listed.stderr.splitlines() == [f"no database configured: using the running embedded Postgres: {reuse}"]

    status = awa("db", "status", env=env)
    assert status.returncode == 0, status.stderr
    assert status.stdout.splitlines()[-1] == (
        f"reuse it: --dsn '{reuse}' (commands with no database configured use it while it runs)")
    assert json.loads(awa("db", "status", "--json", env=env).stdout)["dsn"] == reuse
    with psycopg.connect(reuse) as direct:  # the printed DSN works as given, with no password
        assert direct.execute("SELECT current_user").fetchone() == ("postgres",)

    assert embedded.stop(home) is True
    # Stopped, not absent: the line says so and how to start it again.
    assert one_line_error(awa("cron", "list", env=env)) == (
        f"error: no database configured, and the embedded Postgres at {home} is stopped: start it with "
        "`awa-tui db start`, or pass --dsn (or set AWA_DATABASE_URL)")


def test_db_start_starts_migrates_and_names_the_dsn(home: Path) -> None:
    env = cli_env(AWA_EMBEDDED_HOME=str(home))
    started = awa("db", "start", "--json", env=env, timeout=120)
    assert started.returncode == 0, started.stderr
    reuse = f"host={home}/run port=5432 user=postgres dbname=awa"
    versions = [m.version for m in migrations.available()]
    assert json.loads(started.stdout) == {"home": str(home), "dsn": reuse, "applied": versions}
    again = awa("db", "start", env=env)
    assert again.stdout.splitlines() == [
        f"embedded Postgres running at {home}",
        f"reuse it: --dsn '{reuse}' (commands with no database configured use it while it runs)",
    ]
    assert awa("runtime", "list", "--json", env=env).stdout.strip() == "[]"
