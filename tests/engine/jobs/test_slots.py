"""Concurrency per process and per queue: only what a free slot starts now is claimed, a
queue with a cap of its own never takes more slots, and a slow queue delays no other."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from engine_helpers import job_states, seed_jobs
from helpers import wait_for

from awa_tui import Client, Job, ValidationError
from awa_tui.engine.jobs.slots import Slots

_enqueue = seed_jobs
_states = job_states






def test_only_what_free_slots_start_is_claimed(dsn: str, conn: Any) -> None:
    client = Client(dsn, operator="t@test", concurrency=2)
    release = threading.Event()
    client.register_handler("slow", lambda job: release.wait(60))
    _enqueue(conn, 5, kind="slow")
    try:
        client.start(lead=False)
        wait_for(lambda: _states(conn, "default").get("running") == 2, what="two jobs running")
        worker = client.runtime.worker
        worker.step()  # another round while both slots are busy claims nothing
        assert _states(conn, "default") == {"running": 2, "available": 3}
        release.set()
        wait_for(lambda: _states(conn, "default") == {"completed": 5}, timeout=30, what="all five done")
    finally:
        release.set()
        client.close()


def test_a_slow_queue_with_a_cap_leaves_the_others_their_slots(dsn: str, conn: Any) -> None:
    """The developer's case: a 10 s report held jobs of two other queues back. With the
    reports queue capped at 1 of 3 slots, the other queues' jobs all finish while reports
    are still running, and never more than one report runs."""
    client = Client(dsn, operator="t@test", concurrency=3, queues={"reports": 1, "billing": 2, "default": 2})
    release = threading.Event()
    peak: list[int] = []
    running = {"n": 0}
    lock = threading.Lock()

    async def report(job: Job) -> None:
        import asyncio

        with lock:
            running["n"] += 1
            peak.append(running["n"])
        while not release.is_set():
            await asyncio.sleep(0.01)
        with lock:
            running["n"] -= 1

    client.register_handler("report", report)
    client.register_handler("fast", lambda job: None)
    _enqueue(conn, 3, kind="report", queue="reports")
    _enqueue(conn, 10, kind="fast", queue="billing")
    _enqueue(conn, 10, kind="fast", queue="default")
    try:
        client.start(lead=False)
        wait_for(lambda: _states(conn, "billing") == {"completed": 10} and _states(conn, "default") == {
            "completed": 10}, timeout=30, what="the other queues drained while reports run")
        assert _states(conn, "reports") == {"running": 1, "available": 2}
        release.set()
        wait_for(lambda: _states(conn, "reports") == {"completed": 3}, timeout=30, what="the reports done")
        assert max(peak) == 1
    finally:
        release.set()
        client.close()


def test_named_queues_only(client: Client, conn: Any, dsn: str) -> None:
    only = Client(dsn, operator="t@test", queues=["billing"])
    only.register_handler("fast", lambda job: None)
    _enqueue(conn, 2, kind="fast", queue="billing")
    _enqueue(conn, 2, kind="fast", queue="default")
    try:
        assert sorted(job.queue for job, _ in only.work_once()) == ["billing", "billing"]
        assert only.work_once() == []
    finally:
        only.close()


@pytest.mark.parametrize(("concurrency", "queues", "error"), [
    (0, None, "concurrency: a whole number from 1 to 1000, got 0"),
    (4, ["a=5"], r"queues: a's limit must be from 1 to the concurrency \(4\), got 5"),
    (4, ["a=x"], "queues: a's limit must be a whole number, got 'x'"),
    (4, [" "], "queues: a queue name is empty"),
    (4, [], "queues: name at least one queue, or none for all"),
])
def test_slots_are_checked(concurrency: int, queues: list[str] | None, error: str) -> None:
    with pytest.raises(ValidationError, match=error):
        Slots.parse(concurrency, queues)


def test_queues_parse_from_the_command_line_form() -> None:
    assert Slots.parse(8, ["reports=2", "default"]) == Slots(8, ("reports", "default"), {"reports": 2})
