"""S18 queue pause at dispatch and S19 the worker: claim, complete, retry, discard."""

from __future__ import annotations

import functools
import threading
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from engine_helpers import at, job_states, schedule_row, seed_jobs

from awa_tui import Client, Conflict, NotFound
from awa_tui.engine.jobs.context import Job
from awa_tui.engine.jobs.handlers import backoff
from awa_tui.engine.read.models import QueueDrained

# This file's jobs: waiting rows of one kind, inserted by hand (engine_helpers.seed_jobs).
_enqueue = functools.partial(seed_jobs, kind="test.job")
_states = job_states






# --- queue pause (S18) ---------------------------------------------------------------------


def test_fires_keep_inserting_into_a_paused_queue_that_dispatches_nothing(
    client: Client, conn: Any, register: Any
) -> None:
    handled: list[int] = []
    client.register_handler("test.job", lambda job: handled.append(job.id))
    register("q", "* * * * *", last="2025-01-01T00:00:00", queue="reports")
    paused = client.actions.queue_pause("reports", operator="ops@host")
    assert (paused.paused, paused.paused_by) == (True, "ops@host")
    for minute in (1, 2, 3):
        client.evaluate(now=at(f"2025-01-01T00:0{minute}:00"))
    assert schedule_row(conn, "q")["last_enqueued_at"] == at("2025-01-01T00:03:00")
    assert _states(conn) == {"available": 3}
    assert client.work_once() == []
    assert handled == []
    views = client.reads.list_schedules()
    assert [(v.name, v.queue_paused, v.queue_paused_by) for v in views] == [("q", True, "ops@host")]
    assert client.reads.get_schedule("q").queue_paused is True
    client.actions.queue_resume("reports", operator="ops@host")
    assert [state for _, state in client.work_once()] == ["completed"] * 3
    assert _states(conn) == {"completed": 3}
    assert client.reads.list_schedules()[0].queue_paused is False


def test_queue_pause_leaves_other_queues_dispatching(client: Client, conn: Any) -> None:
    client.register_handler("test.job", lambda job: None)
    _enqueue(conn, 2, queue="stopped")
    _enqueue(conn, 2, queue="flowing")
    client.actions.queue_pause("stopped")
    assert sorted(job.queue for job, _ in client.work_once()) == ["flowing", "flowing"]
    assert client.work_once() == []


def test_cron_pause_and_queue_pause_are_independent(client: Client, conn: Any, register: Any) -> None:
    register("c", "* * * * *", last="2025-01-01T00:00:00", queue="q")
    client.actions.queue_pause("q")
    client.actions.pause("c")
    client.actions.queue_resume("q")
    assert schedule_row(conn, "c")["paused_by"] == "tester@test"
    assert client.evaluate(now=at("2025-01-01T00:05:00")).jobs == []


def test_queue_actions_on_unknown_queue_and_wrong_state(client: Client, conn: Any) -> None:
    with pytest.raises(NotFound, match="unknown queue 'nowhere'"):
        client.actions.queue_pause("nowhere")
    _enqueue(conn, 1, queue="q")
    with pytest.raises(Conflict, match="'q' is not paused"):
        client.actions.queue_resume("q")
    client.actions.queue_pause("q", operator="a@b")
    with pytest.raises(Conflict, match=r"'q' is already paused \(by a@b\)"):
        client.actions.queue_pause("q")


def test_queue_drain_cancels_waiting_jobs_only(client: Client, conn: Any) -> None:
    _enqueue(conn, 3, queue="q")
    _enqueue(conn, 1, queue="other")
    conn.execute("UPDATE awa.jobs SET state = 'running' WHERE id = (SELECT min(id) FROM awa.jobs)")
    conn.execute("UPDATE awa.jobs SET state = 'retryable' WHERE id = (SELECT min(id) + 1 FROM awa.jobs)")
    assert client.actions.queue_drain("q") == QueueDrained(queue="q", cancelled=2)
    rows = conn.execute("SELECT queue, state FROM awa.jobs ORDER BY id").fetchall()
    assert [(r["queue"], r["state"]) for r in rows] == [
        ("q", "running"), ("q", "cancelled"), ("q", "cancelled"), ("other", "available"),
    ]


# --- the worker (S19) ------------------------------------------------------------------------


def test_worker_completes_jobs_with_the_registered_handler(client: Client, conn: Any) -> None:
    seen: list[tuple[str, dict[str, Any], int]] = []
    client.register_handler("test.job", lambda job: seen.append((job.kind, job.args, job.attempt)))
    _enqueue(conn, 2)
    _enqueue(conn, 1, kind="nobody.handles.this")
    outcomes = client.work_once()
    assert [state for _, state in outcomes] == ["completed", "completed"]
    assert sorted(seen, key=str) == [("test.job", {"n": 1}, 1), ("test.job", {"n": 2}, 1)]  # run at once
    rows = conn.execute("SELECT kind, state, attempt, finalized_at IS NOT NULL AS done FROM awa.jobs ORDER BY id")
    assert [tuple(r.values()) for r in rows] == [
        ("test.job", "completed", 1, True), ("test.job", "completed", 1, True),
        ("nobody.handles.this", "available", 0, False),
    ]


def test_worker_claims_by_priority_then_age(client: Client, conn: Any) -> None:
    client.register_handler("test.job", lambda job: None)
    conn.execute(
        "INSERT INTO awa.jobs (kind, args, priority) VALUES "
        "('test.job', '{\"n\": 1}', 4), ('test.job', '{\"n\": 2}', 1), ('test.job', '{\"n\": 3}', 2)"
    )
    assert [job.args["n"] for job, _ in client.work_once(limit=2)] == [2, 3]  # the best two, in claim order
    assert [job.args["n"] for job, _ in client.work_once()] == [1]


def test_failure_retries_with_backoff_until_max_attempts_then_discards(client: Client, conn: Any) -> None:
    attempts: list[int] = []

    def always_fails(job: Job) -> None:
        attempts.append(job.attempt)
        raise RuntimeError(f"boom {job.attempt}")

    client.register_handler("test.job", always_fails)
    _enqueue(conn, 1, max_attempts=3)
    for attempt in (1, 2):
        assert [state for _, state in client.work_once()] == ["retryable"]
        row = conn.execute("SELECT * FROM awa.jobs").fetchone()
        assert (row["state"], row["attempt"], row["finalized_at"]) == ("retryable", attempt, None)
        assert backoff(attempt) <= row["run_at"] - row["attempted_at"] < backoff(attempt) + timedelta(seconds=1)
        assert client.work_once() == []  # not before its backoff has passed
        conn.execute("UPDATE awa.jobs SET run_at = now() - interval '1 second'")  # time passes
    assert [state for _, state in client.work_once()] == ["discarded"]
    row = conn.execute("SELECT * FROM awa.jobs").fetchone()
    assert (row["state"], row["attempt"]) == ("discarded", 3)
    assert row["finalized_at"] is not None
    # Each entry also keeps timing, runtime and traceback (tests/engine/ledger/test_verdicts.py).
    assert [{k: e[k] for k in ("attempt", "error")} for e in row["errors"]] == [
        {"attempt": 1, "error": "RuntimeError: boom 1"},
        {"attempt": 2, "error": "RuntimeError: boom 2"},
        {"attempt": 3, "error": "RuntimeError: boom 3"},
    ]
    conn.execute("UPDATE awa.jobs SET run_at = now() - interval '1 hour'")
    assert client.work_once() == []
    assert attempts == [1, 2, 3]


def test_backoff_grows_exponentially_and_is_capped() -> None:
    assert [backoff(a).total_seconds() for a in (1, 2, 3, 10, 12, 25)] == [2, 4, 8, 1024, 3600, 3600]


def test_two_workers_never_claim_the_same_job(dsn: str, conn: Any) -> None:
    _enqueue(conn, 400)
    handled: Counter[int] = Counter()
    lock = threading.Lock()
    barrier = threading.Barrier(2)

    def handle(job: Job) -> None:
        with lock:
            handled[job.id] += 1

    def work() -> None:
        client = Client(dsn, operator="w@test", worker_batch=7)
        client.register_handler("test.job", handle)
        barrier.wait()
        while client.work_once():
            pass
        client.close()

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(handled) == 400
    assert set(handled.values()) == {1}
    assert _states(conn) == {"completed": 400}


def test_claim_skips_rows_locked_by_another_transaction(client: Client, conn: Any, dsn: str) -> None:
    import psycopg

    client.register_handler("test.job", lambda job: None)
    _enqueue(conn, 2)
    with psycopg.connect(dsn) as holder:
        holder.execute("SELECT id FROM awa.jobs WHERE id = (SELECT min(id) FROM awa.jobs) FOR UPDATE")
        claimed = client.work_once()  # returns at once: the locked job is skipped, not waited for
        assert [job.args["n"] for job, _ in claimed] == [2]
    assert [job.args["n"] for job, _ in client.work_once()] == [1]
