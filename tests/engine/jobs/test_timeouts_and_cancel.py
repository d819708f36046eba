"""Timeouts (an async handler cancelled at its deadline, a sync one told and recorded timed
out, its slot kept until its thread returns) and an operator's cancel of a running job."""

from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any

import pytest
from engine_helpers import seed_jobs

from awa_tui import Client, Job, ValidationError

# This file's jobs: waiting rows of one kind, inserted by hand (engine_helpers.seed_jobs).
_enqueue = functools.partial(seed_jobs, kind="slow")




def _job(conn: Any, job_id: int) -> dict[str, Any]:
    return conn.execute("SELECT state, attempt, errors FROM awa.jobs WHERE id = %s", (job_id,)).fetchone()


def test_an_async_handler_is_cancelled_at_its_timeout_and_the_attempt_says_why(client: Client, conn: Any) -> None:
    cancelled = threading.Event()

    @client.handler("slow", timeout=0.3)
    async def slow(job: Job) -> None:
        try:
            await asyncio.Event().wait()  # never set: only the timeout ends it
        except asyncio.CancelledError:
            cancelled.set()
            raise

    (job_id,) = _enqueue(conn)
    assert [state for _, state in client.work_once()] == ["retryable"]
    assert cancelled.is_set()  # the handler itself saw the cancellation
    row = _job(conn, job_id)
    assert (row["state"], row["attempt"]) == ("retryable", 1)
    assert [(e["reason"], e["error"]) for e in row["errors"]] == [("timed_out", "JobTimedOut: timed out after 0.3 s")]


def test_a_sync_handler_past_its_timeout_is_told_and_its_slot_stays_taken_until_it_returns(
        dsn: str, conn: Any) -> None:
    """A thread cannot be killed: at the deadline the attempt is recorded timed out and the
    job's `cancelled` turns true; the slot is free again only when the thread returns."""
    client = Client(dsn, operator="t@test", concurrency=1)
    release = threading.Event()
    saw_cancel: list[bool] = []

    def stubborn(job: Job) -> None:
        release.wait(60)
        saw_cancel.append(job.cancelled)

    client.register_handler("slow", stubborn, timeout=0.3)
    try:
        (first,) = _enqueue(conn)
        assert [state for _, state in client.work_once()] == ["retryable"]  # recorded at the deadline
        assert _job(conn, first)["errors"][0]["reason"] == "timed_out"
        worker = client.runtime.worker
        assert list(worker.running) == [first]  # the stubborn thread still holds the only slot
        (second,) = _enqueue(conn)
        worker.step()
        assert _job(conn, second)["state"] == "available"  # no free slot: not claimed
        release.set()
        worker.running[first].future.result(timeout=30)
        worker.step()  # the slot is free again: the second job is claimed into it
        assert saw_cancel[0] is True
        assert _job(conn, second)["state"] in ("running", "completed")
    finally:
        release.set()
        client.close()


def test_an_operator_cancels_a_running_async_job(client: Client, conn: Any) -> None:
    started = threading.Event()

    @client.handler("slow")
    async def slow(job: Job) -> None:
        started.set()
        await asyncio.Event().wait()

    (job_id,) = _enqueue(conn)
    outcomes: list[Any] = []
    runner = threading.Thread(target=lambda: outcomes.extend(client.work_once()))
    runner.start()
    assert started.wait(30)
    change = client.actions.cancel_job(job_id, operator="ops@test")
    assert (change.id, change.state) == (job_id, "running")  # asked; its runtime stops it
    runner.join(30)
    assert not runner.is_alive()
    assert [state for _, state in outcomes] == ["cancelled"]
    row = _job(conn, job_id)
    assert row["state"] == "cancelled"
    assert [(e["reason"], e["error"]) for e in row["errors"]] == [("cancelled", "cancelled by an operator")]
    audit = conn.execute("SELECT action, after FROM awa.audit_log WHERE action = 'job_cancel'").fetchall()
    assert audit == [{"action": "job_cancel", "after": {"state": "running", "cancel": "asked of its runtime"}}]


def test_a_sync_handler_polls_the_cancel_flag(client: Client, conn: Any) -> None:
    started = threading.Event()

    def polite(job: Job) -> None:
        started.set()
        while not job.cancel_event.wait(0.05):
            pass
        job.raise_if_cancelled()

    client.register_handler("slow", polite)
    (job_id,) = _enqueue(conn)
    outcomes: list[Any] = []
    runner = threading.Thread(target=lambda: outcomes.extend(client.work_once()))
    runner.start()
    assert started.wait(30)
    client.actions.cancel_job(job_id)
    runner.join(30)
    assert [state for _, state in outcomes] == ["cancelled"]
    assert _job(conn, job_id)["state"] == "cancelled"


def test_a_cancelled_job_whose_runtime_died_is_rescued_as_cancelled(client: Client, conn: Any) -> None:
    (job_id,) = _enqueue(conn)
    conn.execute("UPDATE awa.jobs SET state = 'running', attempt = 1, claimed_by = gen_random_uuid(), "
                 "cancel_requested_at = now() WHERE id = %s", (job_id,))
    assert client.runtime.rescue_orphaned_jobs() == [{"id": job_id, "state": "cancelled"}]


def test_timeouts_are_checked(client: Client) -> None:
    with pytest.raises(ValidationError, match=r"timeout: must be more than 0 and at most 7 days, got 0 s"):
        client.register_handler("slow", lambda job: None, timeout=0)
