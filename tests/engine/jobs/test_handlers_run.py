"""Handlers of both kinds run (an async one is awaited on the worker's own event loop, a sync
one on its threads), and a job is completed only when its handler finished without error."""

from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any

import psycopg
import pytest
from engine_helpers import job_states, seed_jobs

from awa_tui import Client, Job, ValidationError

# This file's jobs: waiting rows of one kind, inserted by hand (engine_helpers.seed_jobs).
_enqueue = functools.partial(seed_jobs, kind="beat")
_states = job_states






def test_an_async_handler_writes_a_row_for_every_job_it_completes(client: Client, conn: Any, dsn: str) -> None:
    """The developer's heartbeat: an `async def` handler writing with an async driver. Each
    completed job has its row (before, 15 jobs 'completed' and 0 rows: never awaited)."""
    conn.execute("CREATE TABLE beats (n int PRIMARY KEY)")

    @client.handler("beat")
    async def beat(job: Job) -> None:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as aconn:
            await aconn.execute("INSERT INTO beats VALUES (%s)", (job.args["n"],))

    _enqueue(conn, 15)
    outcomes = client.work_once(limit=20)
    assert sorted(job.args["n"] for job, state in outcomes if state == "completed") == list(range(1, 16))
    assert [r["n"] for r in conn.execute("SELECT n FROM beats ORDER BY n")] == list(range(1, 16))
    assert _states(conn) == {"completed": 15}


def test_an_async_handler_that_raises_is_retried_not_completed(client: Client, conn: Any) -> None:
    @client.handler("beat")
    async def beat(job: Job) -> None:
        await asyncio.sleep(0)
        raise RuntimeError("the service said no")

    _enqueue(conn, 1)
    assert [state for _, state in client.work_once()] == ["retryable"]
    row = conn.execute("SELECT errors FROM awa.jobs").fetchone()
    assert [e["error"] for e in row["errors"]] == ["RuntimeError: the service said no"]


def test_async_jobs_run_together_on_one_loop_that_the_worker_owns(client: Client, conn: Any) -> None:
    """Two async jobs that each wait for the other finish only if they run at once; both run
    on one event loop, not on the caller's thread."""
    arrived: dict[int, asyncio.Event] = {}
    loops: set[int] = set()
    threads: set[str] = set()

    @client.handler("beat")
    async def beat(job: Job) -> None:
        loops.add(id(asyncio.get_running_loop()))
        threads.add(threading.current_thread().name)
        mine = arrived.setdefault(job.args["n"], asyncio.Event())
        mine.set()
        other = arrived.setdefault(3 - job.args["n"], asyncio.Event())
        await asyncio.wait_for(other.wait(), timeout=30)

    _enqueue(conn, 2)
    assert [state for _, state in client.work_once()] == ["completed", "completed"]
    assert len(loops) == 1 and threads == {"awa-jobs-loop"}


def test_a_sync_callable_returning_a_coroutine_is_awaited(client: Client, conn: Any) -> None:
    """A partial of an async function, and a plain function returning a coroutine: both run."""
    done: list[str] = []

    async def record(tag: str, job: Job) -> None:
        await asyncio.sleep(0)
        done.append(f"{tag}{job.args['n']}")

    client.register_handler("partial", functools.partial(record, "p"))
    client.register_handler("wrapped", lambda job: record("w", job))
    _enqueue(conn, 1, kind="partial")
    _enqueue(conn, 1, kind="wrapped")
    assert sorted(state for _, state in client.work_once()) == ["completed", "completed"]
    assert sorted(done) == ["p1", "w1"]
    assert client.handlers["partial"].is_async is True
    assert client.handlers["wrapped"].is_async is False


def test_sync_handlers_run_on_worker_threads_and_complete(client: Client, conn: Any) -> None:
    names: list[str] = []
    client.register_handler("beat", lambda job: names.append(threading.current_thread().name))
    _enqueue(conn, 3)
    assert [state for _, state in client.work_once()] == ["completed"] * 3
    assert len(names) == 3 and all(n.startswith("awa-job") for n in names)


def test_a_handler_that_is_not_callable_is_refused(client: Client) -> None:
    with pytest.raises(ValidationError, match="handler: must be a function taking the job"):
        client.register_handler("beat", "not a function")  # type: ignore[arg-type]


def test_an_outcome_whose_write_failed_is_written_by_the_next_round(client: Client, conn: Any) -> None:
    """The first write of a completion fails (a trigger raises once): the job is not left
    `running` for ever; the next round writes the outcome, and the handler ran once."""
    from awa_tui import AwaError

    conn.execute("CREATE SEQUENCE fail_once")
    conn.execute("""
        CREATE FUNCTION fail_once() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF nextval('fail_once') = 1 THEN RAISE EXCEPTION 'injected: the outcome write fails'; END IF;
            RETURN NEW;
        END $$""")
    conn.execute("CREATE TRIGGER fail_once BEFORE UPDATE ON awa.jobs FOR EACH ROW "
                 "WHEN (NEW.state = 'completed') EXECUTE FUNCTION fail_once()")
    ran: list[int] = []
    client.register_handler("beat", lambda job: ran.append(job.id))
    _enqueue(conn, 1)
    worker = client.runtime.worker
    worker.step()  # claims and starts it
    (attempt,) = worker.running.values()
    attempt.future.result(timeout=30)
    with pytest.raises(AwaError, match="injected: the outcome write fails"):
        worker.step()
    assert _states(conn) == {"running": 1} and list(worker.running) == [attempt.job.id]  # kept, not lost
    worker.step()
    assert _states(conn) == {"completed": 1} and worker.running == {} and ran == [attempt.job.id]
    assert conn.execute("SELECT last_value FROM fail_once").fetchone()["last_value"] == 2  # the fault happened once
