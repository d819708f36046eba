"""/metrics over HTTP from a real runtime (S43): values compared with the database, the
alert rules' metric names all served, the cardinality cap, and bad --metrics-addr."""

from __future__ import annotations

import re
import socket
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cli_helpers import COMMAND, cli_env
from engine_helpers import at, force
from helpers import wait_for
from prometheus_client.parser import text_string_to_metric_families

import awa_tui
from awa_tui.engine.client import Client

ALERTS = Path(__file__).resolve().parents[3] / "docs" / "alerts.yml"
MIGRATIONS = Path(__file__).resolve().parents[3] / "awa_tui" / "engine" / "migrations"


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text) for s in family.samples
    }


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


@pytest.fixture
def runtime(dsn: str, conn: psycopg.Connection[Any]) -> Any:
    """A real runtime (leading, no worker) serving /metrics on a free port, with three
    schedules: one ok (fired at a known instant), one failing, one broken."""
    c = Client(dsn, operator="tester@test")
    c.periodic("yearly", "0 0 1 1 *", "test.job", queue="reports")
    c.periodic("flaky", "0 0 1 1 *", "test.job")
    c.migrate()
    c.sync()
    force(conn, "UPDATE awa.cron_jobs SET last_enqueued_at = '2025-01-01T00:00:00Z', next_fire_at = NULL "
                "WHERE name = 'yearly'")
    # Written by hand (no runtime registers it, so no sync repairs it).
    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind) VALUES ('bad', '99 * * * *', 'test.job')")
    job = c.actions.trigger("flaky")
    conn.execute("UPDATE awa.jobs SET state = 'discarded', finalized_at = now() WHERE id = %s", (job.id,))
    server = c.serve_metrics("127.0.0.1:0")
    c.start(run_worker=False)
    wait_for(lambda: conn.execute("SELECT evaluated_at FROM awa.health_meta").fetchone()["evaluated_at"],  # type: ignore[index]
             timeout=30, what="the leader's first health evaluation")
    yield c, server.bound_port
    c.close()


def test_a_scrape_matches_the_database(runtime: Any, conn: psycopg.Connection[Any]) -> None:
    _, port = runtime
    samples = scrape(port)
    assert value(samples, "awa_up") == 1
    assert value(samples, "awa_leader") == 1
    # The release, read from the migration files and the package, not from the metric code.
    newest = max(int(p.name[1:4]) for p in MIGRATIONS.glob("v[0-9][0-9][0-9]_*.sql"))
    # The protocol is the one this runtime reported to the schema's release policy.
    reported = conn.execute("SELECT leader_protocol FROM awa.runtime_instances").fetchall()
    assert len(reported) == 1
    assert value(samples, "awa_build_info", version=awa_tui.__version__, schema_version=str(newest),
                 protocol=str(reported[0]["leader_protocol"])) == 1
    counts = {r["health"]: r["n"] for r in conn.execute(
        "SELECT coalesce(h.health, 'ok') AS health, count(*) AS n FROM awa.cron_jobs c "
        "LEFT JOIN awa.cron_health h ON h.name = c.name GROUP BY 1").fetchall()}
    assert counts == {"ok": 1, "failing": 1, "broken": 1}
    for health in ("ok", "late", "failing", "missed", "paused", "retired", "broken", "finished"):
        assert value(samples, "awa_schedules", health=health) == counts.get(health, 0)
    assert value(samples, "awa_schedule_health", schedule="flaky", owner="", queue="default", state="failing") == 1
    assert value(samples, "awa_schedule_health", schedule="flaky", owner="", queue="default", state="ok") == 0
    assert value(samples, "awa_schedule_health", schedule="bad", owner="", queue="default", state="broken") == 1
    # The runtime caught up from 2025-01-01 (coalesce: one fire, the latest instant due).
    last = conn.execute("SELECT last_enqueued_at FROM awa.cron_jobs WHERE name = 'yearly'").fetchone()
    assert last is not None and last["last_enqueued_at"] > at("2025-01-01T00:00:00")
    assert value(samples, "awa_schedule_last_fire_timestamp_seconds", schedule="yearly", owner="",
                 queue="reports") == last["last_enqueued_at"].timestamp()
    jobs = conn.execute("SELECT queue, state, count(*) AS n FROM awa.jobs GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
    assert jobs == [{"queue": "default", "state": "discarded", "n": 1},
                    {"queue": "reports", "state": "available", "n": 1}]
    for row in jobs:
        assert value(samples, "awa_jobs", queue=row["queue"], state=row["state"]) == row["n"]
    # The backlog's age: the one waiting job's run time (the catch-up fire, due at once); a
    # queue with nothing due has no series.
    due = conn.execute("SELECT extract(epoch FROM run_at)::float8 AS t FROM awa.jobs "
                       "WHERE queue = 'reports' AND state = 'available'").fetchone()
    assert due is not None
    assert value(samples, "awa_jobs_oldest_due_timestamp_seconds", queue="reports") == due["t"]
    assert ("awa_jobs_oldest_due_timestamp_seconds", (("queue", "default"),)) not in samples
    size = conn.execute("SELECT pg_total_relation_size('awa.jobs')::float8 AS b").fetchone()
    assert size is not None and value(samples, "awa_jobs_table_bytes") == size["b"]
    fires = conn.execute("SELECT owner, queue, verdict, fires FROM awa.fire_stats ORDER BY queue").fetchall()
    assert fires == [{"owner": "", "queue": "default", "verdict": "manual", "fires": 1},
                     {"owner": "", "queue": "reports", "verdict": "late", "fires": 1}]
    for row in fires:
        assert value(samples, "awa_schedule_fires_total", owner="", queue=row["queue"],
                     verdict=row["verdict"]) == row["fires"]
    evaluated = conn.execute("SELECT extract(epoch FROM evaluated_at)::float8 AS t FROM awa.health_meta").fetchone()
    assert evaluated is not None
    assert value(samples, "awa_health_evaluated_timestamp_seconds") == evaluated["t"]
    assert value(samples, "awa_schedule_series_dropped") == 0
    assert ("awa_evaluator_pass_seconds_count", ()) in samples
    assert value(samples, "awa_evaluator_pass_seconds_count") >= 1


def test_every_metric_the_alert_rules_use_is_served(runtime: Any, conn: psycopg.Connection[Any]) -> None:
    _, port = runtime
    # A fire with a lateness, so the per-queue histogram has a series.
    conn.execute("INSERT INTO awa.jobs (kind, queue, metadata) VALUES ('test.job', 'reports', "
                 "jsonb_build_object('cron_name', 'yearly', 'cron_fire_time', (now() - interval '2 s')::text))")
    wait_for(lambda: ("awa_fire_lateness_seconds_count", (("queue", "reports"),)) in scrape(port),
             timeout=30, what="the leader to count the fire")
    wait_for(lambda: ("awa_retention_round_timestamp_seconds", ()) in scrape(port),
             timeout=30, what="the leader's first retention round")
    served = {name for name, _ in scrape(port)}
    used = set(re.findall(r"\bawa_[a-z_]+", ALERTS.read_text()))
    assert used == {"awa_schedule_health", "awa_schedules", "awa_leader", "awa_up",
                    "awa_health_evaluated_timestamp_seconds", "awa_fire_lateness_seconds_bucket",
                    "awa_jobs_oldest_due_timestamp_seconds", "awa_jobs_table_bytes",
                    "awa_retention_lap_started_timestamp_seconds", "awa_retention_round_timestamp_seconds"}
    assert used <= served, used - served


def test_the_series_cap_bounds_per_schedule_series(dsn: str, conn: psycopg.Connection[Any]) -> None:
    c = Client(dsn)
    for i in range(5):
        c.periodic(f"s{i}", "0 0 1 1 *", "test.job")
    c.sync()
    conn.execute("UPDATE awa.cron_jobs SET cron_expr = '99 * * * *' WHERE name = 's3'")
    c.runtime.evaluate_health()
    server = c.serve_metrics("127.0.0.1:0", schedule_series=2)
    try:
        samples = scrape(server.bound_port)
    finally:
        c.close()
    names = sorted({dict(labels)["schedule"] for name, labels in samples if name == "awa_schedule_health"})
    assert names == ["s0", "s3"]  # the unhealthy one first, then by name
    assert value(samples, "awa_schedule_series_dropped") == 3
    assert value(samples, "awa_schedules", health="ok") == 4
    assert value(samples, "awa_schedules", health="broken") == 1


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, env=cli_env(), timeout=60,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("addr", ["9464", "localhost", "host:port", "127.0.0.1:70000", ":9464", "[zz]:9464"])
def test_a_malformed_metrics_addr_fails_the_start_with_one_line(dsn: str, addr: str) -> None:
    result = run_cli("run", "--demo", "--dsn", dsn, "--metrics-addr", addr)
    assert result.returncode == 1
    why = "not an IPv6 address:" if addr.startswith("[") else "expected HOST:PORT such as 127.0.0.1:9464, got"
    assert result.stderr.splitlines() == [f"error: --metrics-addr: {why} {addr!r}"]


def test_a_taken_metrics_addr_fails_the_start_with_one_line(dsn: str, conn: psycopg.Connection[Any]) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        result = run_cli("run", "--demo", "--dsn", dsn, "--metrics-addr", f"127.0.0.1:{port}")
    finally:
        taken.close()
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"error: --metrics-addr: cannot listen on 127.0.0.1:{port}: Address already in use")
    assert "Traceback" not in result.stderr
    # Nothing ran: no runtime snapshot was written.
    assert conn.execute("SELECT count(*) AS n FROM awa.runtime_instances").fetchone() == {"n": 0}


def test_metrics_addr_on_the_console_needs_lead() -> None:
    result = run_cli("--metrics-addr", "127.0.0.1:9464", "--dsn", "postgresql://x@127.0.0.1:1/x")
    assert result.returncode == 1
    assert result.stderr == "error: --metrics-addr serves the in-process engine's metrics: add --lead\n"


def test_the_console_leader_serves_metrics_and_a_taken_addr_fails_its_start(dsn: str,
                                                                            conn: psycopg.Connection[Any]) -> None:
    from awa_tui.engine.core.errors import AwaError
    from awa_tui.tui.launch import build_config

    config = build_config(dsn=dsn, lead=True, app_ref=None, demo=True, read_only=False, operator="tester@test",
                          refresh=2.0, say=lambda _: None, metrics_addr="127.0.0.1:0")
    try:
        assert config.engine is not None and config.engine.runtime.metrics is not None
        port = config.engine.runtime.metrics.bound_port
        wait_for(lambda: value(scrape(port), "awa_leader") == 1, timeout=30, what="the console's engine to lead")
        with pytest.raises(AwaError) as exc:
            build_config(dsn=dsn, lead=True, app_ref=None, demo=True, read_only=False, operator="tester@test",
                         refresh=2.0, say=lambda _: None, metrics_addr=f"127.0.0.1:{port}")
        assert str(exc.value) == f"--metrics-addr: cannot listen on 127.0.0.1:{port}: Address already in use"
    finally:
        if config.engine is not None:
            config.engine.close()
        config.client.close()


def test_any_runtime_serves_the_leaders_values(runtime: Any, dsn: str) -> None:
    """A second process that does not lead serves the same per-schedule values: they are
    the leader's, read from the database."""
    _, port = runtime
    per_schedule = ("awa_schedule_health", "awa_schedule_last_fire_timestamp_seconds", "awa_schedules",
                    "awa_schedule_fires_total", "awa_health_evaluated_timestamp_seconds")

    def values(samples: dict[Any, float]) -> dict[Any, float]:
        return {k: v for k, v in samples.items() if k[0] in per_schedule}

    other = Client(dsn)
    try:
        other_port = other.serve_metrics("127.0.0.1:0").bound_port
        # The two scrapes agree unless the leader's duty ran between them: scrape again then.
        leader, follower = wait_for(lambda: (pair := (scrape(port), scrape(other_port)))
                                    and values(pair[0]) == values(pair[1]) and pair,
                                    timeout=30, what="two scrapes between the same two passes")
    finally:
        other.close()
    assert (value(leader, "awa_leader"), value(follower, "awa_leader")) == (1, 0)
    assert {k[0] for k in values(leader)} == set(per_schedule)


def test_job_durations_and_failures_per_kind_and_queue(dsn: str, conn: psycopg.Connection[Any]) -> None:
    """Each attempt this runtime ran is counted by kind, queue and how it ended."""
    from awa_tui import Job

    client = Client(dsn, operator="tester@test")

    def sometimes(job: Job) -> None:
        if job.args["n"] == 2:
            raise RuntimeError("no")

    client.register_handler("mail.send", sometimes)
    try:
        server = client.serve_metrics("127.0.0.1:0")
        for n in (1, 2, 3):
            client.enqueue("mail.send", {"n": n}, queue="mail")
        assert sorted(state for _, state in client.work_once()) == ["completed", "completed", "retryable"]
        samples = scrape(server.bound_port)
        count = "awa_job_duration_seconds_count"
        assert value(samples, count, kind="mail.send", queue="mail", state="completed") == 2
        assert value(samples, count, kind="mail.send", queue="mail", state="retryable") == 1
        assert value(samples, "awa_job_duration_seconds_sum", kind="mail.send", queue="mail", state="completed") >= 0
    finally:
        client.close()
    assert client.runtime.on_job_timed == []
