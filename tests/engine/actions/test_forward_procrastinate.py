"""Fires forwarded to Procrastinate in the fire's own transaction (docs/forwarding.md): the
real package (bench/.venv-procrastinate, built by bench/venvs.py, the bench's own way: a
failure to build it fails these tests with pip's reason, never skips them), its schema
applied to each test's database and its worker run by its own CLI (procrastinate_tasks.py),
the forward installed by `awa-tui forward procrastinate --apply`, fires injected with `now`."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from engine_helpers import at, force, race, schedule_row

from awa_tui import Client

HERE = Path(__file__).resolve().parent
VENVS = HERE.parents[2] / "bench" / "venvs.py"


@pytest.fixture(scope="session")
def procrastinate_python() -> Path:
    spec = importlib.util.spec_from_file_location("bench_venvs", VENVS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    python: Path = module.procrastinate_venv()
    return python


ProcrastinateCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def procrastinate_cli(procrastinate_python: Path, dsn: str) -> ProcrastinateCli:
    """`procrastinate --app procrastinate_tasks.app ARGS` on the test's database; fails on a non-zero exit."""

    def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "FORWARD_TEST_DSN": dsn, "PYTHONPATH": str(HERE)}
        out = subprocess.run([str(procrastinate_python.with_name("procrastinate")), "--app",
                              "procrastinate_tasks.app", *args], capture_output=True, text=True, env=env,
                             timeout=timeout, stdin=subprocess.DEVNULL)
        assert out.returncode == 0, f"procrastinate {' '.join(args)} failed: {out.stderr[-3000:]}"
        return out

    return run


@pytest.fixture
def procrastinate_db(procrastinate_cli: ProcrastinateCli, conn: psycopg.Connection[Any]) -> ProcrastinateCli:
    """The test's database with Procrastinate's schema (applied by its CLI) and the runs table."""
    procrastinate_cli("schema", "--apply")
    conn.execute("CREATE TABLE forward_runs (procrastinate_job_id bigint NOT NULL, fired_at text, "
                 "kwargs jsonb NOT NULL, ran_at timestamptz NOT NULL DEFAULT clock_timestamp())")
    return procrastinate_cli


BASE = "2025-01-01T00:00:00"
KIND = "report.run"
AWA = [str(Path(sys.executable).with_name("awa-tui"))]


def _awa(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AWA, *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def _install(dsn: str) -> None:
    out = _awa("forward", "procrastinate", "--kind", KIND, "--task", "record_fire", "--queue", "reports",
               "--fire-time-kwarg", "fired_at", "--apply", "--dsn", dsn)
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout == (f"jobs of kind {KIND} now go to Procrastinate task record_fire, "
                          "in the transaction that fires them\n")


def _schedules(client: Client, conn: psycopg.Connection[Any], **more: str) -> None:
    """`tick` (forwarded kind) and `plain` (another kind), every second, last fired at BASE."""
    client.periodic("tick", "* * * * * *", KIND, args={"region": "eu"})
    client.periodic("plain", "* * * * * *", "other.job", args={"region": "us"})
    for name, kind in more.items():
        client.periodic(name, "* * * * * *", kind)
    client.sync()
    force(conn, "UPDATE awa.cron_jobs SET last_enqueued_at = %s, created_at = %s, next_fire_at = NULL",
          (at(BASE), at(BASE)))


def _instant(seconds: int) -> str:
    """The oracle: fire instants of a per-second schedule after BASE, as awa writes them."""
    return (at(BASE) + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _count(conn: psycopg.Connection[Any], query: str) -> int:
    row = conn.execute(query).fetchone()
    assert row is not None
    return int(next(iter(row.values())))


def test_each_fire_runs_once_in_a_real_procrastinate_worker(
    dsn: str, conn: psycopg.Connection[Any], procrastinate_db: Any,
) -> None:
    _install(dsn)
    client = Client(dsn)
    _schedules(client, conn)
    fires = 5
    for s in range(1, fires + 1):
        result = client.evaluate(now=at(BASE) + timedelta(seconds=s, milliseconds=100))
        assert (result.fired, result.errors) == (2, [])
    client.close()

    forwarded = conn.execute(
        "SELECT state, finalized_at IS NOT NULL AS final, metadata FROM awa.jobs WHERE kind = %s ORDER BY id",
        (KIND,)).fetchall()
    assert [(r["state"], r["final"], r["metadata"]["forwarded_to"]) for r in forwarded] == \
        [("completed", True, "procrastinate")] * fires
    assert [r["metadata"]["cron_fire_time"] for r in forwarded] == [_instant(s) for s in range(1, fires + 1)]
    # Kinds not forwarded are untouched: waiting in awa's own queue, no forward mark.
    plain = conn.execute("SELECT state, metadata FROM awa.jobs WHERE kind = 'other.job' ORDER BY id").fetchall()
    assert [(r["state"], "forwarded_to" in r["metadata"]) for r in plain] == [("available", False)] * fires

    deferred = conn.execute("SELECT id, task_name, queue_name, args, status::text FROM procrastinate_jobs "
                            "ORDER BY id").fetchall()
    assert [r["id"] for r in deferred] == [r["metadata"]["procrastinate_job_id"] for r in forwarded]
    assert [(r["task_name"], r["queue_name"], r["args"], r["status"]) for r in deferred] == \
        [("record_fire", "reports", {"region": "eu", "fired_at": _instant(s)}, "todo") for s in range(1, fires + 1)]

    procrastinate_db("worker", "--one-shot", "--queues", "reports")  # returns once every job is done

    runs = conn.execute("SELECT procrastinate_job_id, fired_at, kwargs FROM forward_runs ORDER BY fired_at").fetchall()
    assert [(r["fired_at"], r["kwargs"]) for r in runs] == \
        [(_instant(s), {"region": "eu"}) for s in range(1, fires + 1)]
    assert Counter(r["procrastinate_job_id"] for r in runs) == Counter(r["id"] for r in deferred)  # once each
    assert _count(conn, "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'") == fires


def _injected_failure(conn: psycopg.Connection[Any]) -> None:
    """A fault after the insert, in the fire's transaction: an AFTER trigger of the test's own."""
    conn.execute("""
CREATE FUNCTION fail_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'injected failure after the insert'; END $$;
CREATE TRIGGER fail_after_insert AFTER INSERT ON awa.jobs FOR EACH ROW
WHEN (NEW.kind = 'report.run') EXECUTE FUNCTION fail_after_insert();
""")


def test_a_fire_that_rolls_back_leaves_no_procrastinate_job(
    dsn: str, conn: psycopg.Connection[Any], procrastinate_db: Any,
) -> None:
    _install(dsn)
    _injected_failure(conn)
    client = Client(dsn)
    _schedules(client, conn)
    sequence = "SELECT last_value + is_called::int AS n FROM procrastinate_jobs_id_seq"
    before = _count(conn, sequence)

    result = client.evaluate(now=at(BASE) + timedelta(seconds=1, milliseconds=100))
    assert result.errors == ["schedule 'tick' skipped: the database refused its fire: "
                             "'injected failure after the insert'"]
    # The forward did run inside the fire, twice (Procrastinate's id sequence, which no
    # rollback undoes, moved by two: the chunk of both schedules, then `tick` alone when the
    # evaluator set the refused row apart): deferred outside the fire's transaction, those
    # two jobs would remain.
    assert _count(conn, sequence) == before + 2
    # ... and it rolled back with the compare-and-swap: no job on either side, the fire still due.
    assert _count(conn, "SELECT count(*) FROM procrastinate_jobs") == 0
    assert _count(conn, f"SELECT count(*) FROM awa.jobs WHERE kind = '{KIND}'") == 0
    assert schedule_row(conn, "tick")["last_enqueued_at"] == at(BASE)
    assert _count(conn, "SELECT count(*) FROM awa.jobs WHERE kind = 'other.job'") == 1  # the others fired

    conn.execute("DROP TRIGGER fail_after_insert ON awa.jobs")
    result = client.evaluate(now=at(BASE) + timedelta(seconds=1, milliseconds=200))
    assert ([j.name for j in result.jobs], result.errors) == (["tick"], [])
    client.close()
    procrastinate_db("worker", "--one-shot")
    runs = conn.execute("SELECT fired_at FROM forward_runs").fetchall()
    assert [r["fired_at"] for r in runs] == [_instant(1)]


def test_racing_leaders_forward_each_fire_once(
    dsn: str, conn: psycopg.Connection[Any], procrastinate_db: Any,
) -> None:
    _install(dsn)
    clients = [Client(dsn, operator=f"racer{i}@test") for i in range(2)]
    for client in clients:
        _schedules(client, conn)
    race(clients, [at(BASE) + timedelta(seconds=s, milliseconds=100) for s in range(1, 11)])
    for client in clients:
        client.close()
    args = conn.execute("SELECT args ->> 'fired_at' AS fired FROM procrastinate_jobs ORDER BY id").fetchall()
    assert [r["fired"] for r in args] == [_instant(s) for s in range(1, 11)]  # each once, none lost


def test_a_dropped_procrastinate_schema_holds_that_schedule_only(
    dsn: str, conn: psycopg.Connection[Any], procrastinate_db: Any,
) -> None:
    _install(dsn)
    client = Client(dsn)
    _schedules(client, conn)
    conn.execute("DROP FUNCTION procrastinate_defer_jobs_v1")

    result = client.evaluate(now=at(BASE) + timedelta(seconds=1, milliseconds=100))
    assert result.errors == [
        "schedule 'tick' skipped: the database refused its fire: 'jobs of kind report.run go to Procrastinate, "
        "whose schema is not in this database (no public.procrastinate_defer_jobs_v1)'"]
    assert [j.name for j in result.jobs] == ["plain"]
    assert schedule_row(conn, "tick")["last_enqueued_at"] == at(BASE)  # held, not lost: fires when fixed
    client.close()


def test_removed_forward_leaves_jobs_in_awa(dsn: str, conn: psycopg.Connection[Any], procrastinate_db: Any) -> None:
    _install(dsn)
    out = _awa("forward", "procrastinate", "--kind", KIND, "--remove", "--apply", "--dsn", dsn)
    assert (out.returncode, out.stdout) == (0, f"jobs of kind {KIND} are no longer forwarded to Procrastinate\n")
    client = Client(dsn)
    _schedules(client, conn)
    assert client.evaluate(now=at(BASE) + timedelta(seconds=1, milliseconds=100)).fired == 2
    client.close()
    assert _count(conn, f"SELECT count(*) FROM awa.jobs WHERE kind = '{KIND}' AND state = 'available'") == 1
    assert _count(conn, "SELECT count(*) FROM procrastinate_jobs") == 0
    assert _count(conn, "SELECT count(*) FROM pg_proc WHERE proname LIKE 'forward_procrastinate%'") == 0


def test_install_without_procrastinate_is_refused_in_one_line(dsn: str, conn: psycopg.Connection[Any]) -> None:
    out = _awa("forward", "procrastinate", "--kind", KIND, "--task", "record_fire", "--apply", "--dsn", dsn)
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr == ("error: Procrastinate's schema is not in schema public of this database "
                          "(no procrastinate_defer_jobs_v1): apply it first (procrastinate schema --apply), "
                          "or name its schema with --schema\n")
    assert _count(conn, "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'awa.jobs'::regclass "
                        "AND tgname LIKE 'forward_%'") == 0


def test_the_dry_run_prints_the_sql_and_writes_nothing(dsn: str, conn: psycopg.Connection[Any]) -> None:
    out = _awa("forward", "procrastinate", "--kind", "it's\nodd", "--task", "t", "--dsn", dsn)
    assert out.returncode == 0
    assert "WHEN (NEW.kind = 'it''s\nodd' AND NEW.state = 'available')" in out.stdout
    assert not any(line.startswith("--") and "odd" in line for line in out.stdout.splitlines())
    assert _count(conn, "SELECT count(*) FROM pg_proc WHERE proname LIKE 'forward_procrastinate%'") == 0


def test_install_on_a_database_without_awa_is_refused_in_one_line(empty_dsn: str) -> None:
    out = _awa("forward", "procrastinate", "--kind", KIND, "--task", "record_fire", "--apply", "--dsn", empty_dsn)
    assert (out.returncode, out.stdout, out.stderr) == (1, "", (
        "error: forwarding needs awa-tui's own schema, and this database has no awa schema: "
        "run `awa-tui migrate` on a database of its own first\n"))
