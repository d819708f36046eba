"""Graceful shutdown: claiming stops at once; running jobs get the grace; what is still
running after it is released to run again at once; claimed-but-unstarted jobs go back
unspent; a second signal ends the grace; the log says what happened to each job."""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from datetime import timedelta
from typing import Any

import pytest
from engine_helpers import seed_jobs

from awa_tui import Client, Job

# This file's jobs: waiting rows of one kind, inserted by hand (engine_helpers.seed_jobs).
_enqueue = functools.partial(seed_jobs, kind="work")




def _row(conn: Any, job_id: int) -> dict[str, Any]:
    return conn.execute("SELECT state, attempt, errors, run_at <= now() AS due, claimed_by IS NULL AS unclaimed "
                        "FROM awa.jobs WHERE id = %s", (job_id,)).fetchone()


def _started(client: Client, started: threading.Event) -> None:
    client.start(lead=False)
    assert started.wait(30), "the job never started"


def test_a_job_finishing_within_the_grace_completes_and_nothing_more_is_claimed(
        dsn: str, conn: Any, caplog: pytest.LogCaptureFixture) -> None:
    client = Client(dsn, operator="t@test", shutdown_grace=timedelta(seconds=60))
    started, finish = threading.Event(), threading.Event()

    @client.handler("work")
    def work(job: Job) -> None:
        started.set()
        finish.wait(60)

    (first,) = _enqueue(conn)
    _started(client, started)
    closer = threading.Thread(target=client.close)
    with caplog.at_level(logging.INFO, logger="awa_tui.worker"):
        closer.start()
        worker = client.runtime.worker
        while not worker.stopping:  # the close has begun: no more claims from here
            worker.wake.wait(0.01)
        (late,) = _enqueue(conn)
        finish.set()
        closer.join(60)
    assert not closer.is_alive()
    assert _row(conn, first)["state"] == "completed"
    assert (_row(conn, late)["state"], _row(conn, late)["attempt"]) == ("available", 0)
    assert f"job {first} (work) ended during shutdown: completed" in caplog.text


def test_a_job_still_running_after_the_grace_is_released_to_run_again(
        dsn: str, conn: Any, caplog: pytest.LogCaptureFixture) -> None:
    client = Client(dsn, operator="t@test", shutdown_grace=timedelta(seconds=0.3))
    started = threading.Event()
    cancelled = threading.Event()

    @client.handler("work")
    async def work(job: Job) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    (job_id,) = _enqueue(conn)
    _started(client, started)
    with caplog.at_level(logging.INFO, logger="awa_tui.worker"):
        client.close()
    row = _row(conn, job_id)
    assert (row["state"], row["attempt"], row["due"]) == ("retryable", 1, True)
    assert [(e["reason"], e["error"]) for e in row["errors"]] == [
        ("interrupted", "RuntimeError: interrupted: the runtime shut down (the shutdown grace ended)")]
    assert cancelled.wait(10)  # the async handler was cancelled, not left behind
    assert (f"job {job_id} (work) still running when the shutdown grace ended: released (retryable, runs again "
            "at once)") in caplog.text


def test_a_second_signal_ends_the_grace_at_once(dsn: str, conn: Any) -> None:
    client = Client(dsn, operator="t@test", shutdown_grace=timedelta(minutes=30))
    started, finish = threading.Event(), threading.Event()

    @client.handler("work")
    def work(job: Job) -> None:
        started.set()
        finish.wait(60)

    (job_id,) = _enqueue(conn)
    _started(client, started)
    closer = threading.Thread(target=client.close)
    closer.start()
    client.runtime.force_stop.set()  # what run_until_stopped does on the second signal
    closer.join(30)
    finish.set()
    assert not closer.is_alive()
    row = _row(conn, job_id)
    assert row["state"] == "retryable"
    assert row["errors"][0]["error"] == "RuntimeError: interrupted: the runtime shut down (a second signal came)"


def test_claimed_jobs_not_yet_started_go_back_without_spending_an_attempt(dsn: str, conn: Any) -> None:
    """One thread, two jobs claimed by work_once: the second waits for the thread. A shutdown
    with no grace interrupts the first and gives the second back, its attempt unspent."""
    client = Client(dsn, operator="t@test", concurrency=1)
    started, finish = threading.Event(), threading.Event()

    def work(job: Job) -> None:
        started.set()
        finish.wait(60)

    client.register_handler("work", work)
    first, second = _enqueue(conn, 2)
    runner = threading.Thread(target=client.work_once)
    try:
        runner.start()
        assert started.wait(30)
        client.runtime.worker.shutdown(0.0, threading.Event())
        runner.join(30)
        assert not runner.is_alive()
        assert _row(conn, first)["state"] == "retryable"
        row = _row(conn, second)
        assert (row["state"], row["attempt"], row["unclaimed"], row["errors"]) == ("available", 0, True, [])
    finally:
        finish.set()
        client.close()
