"""`check` names waiting jobs of a kind no live runtime runs a handler for (a schedule
dropped from code keeps firing into it, or a handler was never deployed)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from helpers import wait_for

from awa_tui import Client
from awa_tui.engine.runtime.duties import UNSERVED_INTERVAL_S, LeaderDuties


def _waiting(conn: Any, kind: str, queue: str, age: str, count: int = 1) -> None:
    conn.execute("INSERT INTO awa.jobs (kind, queue, run_at) SELECT %s, %s, now() - %s::interval "
                 "FROM generate_series(1, %s)", (kind, queue, age, count))


def _unserved(client: Client) -> list[str]:
    return [p.message for p in client.reads.check().fleet if p.code == "unserved_kind"]


def test_waiting_jobs_of_a_kind_no_live_runtime_serves_are_named(dsn: str, conn: Any) -> None:
    worker = Client(dsn, operator="w@test")
    worker.register_handler("served", lambda job: None)
    observer = Client(dsn, operator="o@test")
    try:
        worker.start(lead=False)
        wait_for(lambda: conn.execute("SELECT handled_kinds FROM awa.runtime_instances").fetchone(),
                 what="the worker's snapshot")
        assert conn.execute("SELECT handled_kinds FROM awa.runtime_instances").fetchone() == {
            "handled_kinds": ["served"]}
        _waiting(conn, "dropped.report", "reports", "2 minutes", 75)
        _waiting(conn, "just.enqueued", "default", "5 seconds")  # within the minute's grace
        assert _unserved(observer) == [
            "75 job(s) of kind dropped.report wait in reports: no live runtime runs a handler for it"]
    finally:
        worker.close()
    # With no live worker at all there is nothing to judge by (a fleet that runs jobs elsewhere).
    assert _unserved(observer) == []
    observer.close()


def test_the_leader_logs_an_unserved_kind_once_and_when_it_ends(
    dsn: str, conn: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Once a minute the leader looks for unserved kinds: a kind is logged as a warning when
    its jobs start waiting unserved, not again while they do, and once when that ends."""
    worker = Client(dsn, operator="w@test")
    worker.register_handler("served", lambda job: None)
    leader = Client(dsn, operator="l@test")
    clock = [1000.0]
    duties = LeaderDuties(leader.runtime, clock=lambda: clock[0])

    def lines() -> list[tuple[int, str]]:
        return [(r.levelno, r.getMessage()) for r in caplog.records if "kind dropped.report" in r.getMessage()]

    try:
        worker.start(lead=False)
        wait_for(lambda: conn.execute("SELECT handled_kinds FROM awa.runtime_instances").fetchone(),
                 what="the worker's snapshot")
        _waiting(conn, "dropped.report", "reports", "2 minutes", 75)
        with caplog.at_level(logging.INFO, logger="awa_tui"):
            duties.run_services()
            assert lines() == [(logging.WARNING, "75 job(s) of kind dropped.report wait in reports and no live "
                                "runtime runs a handler for it: deploy one, or retire the schedule that fires it")]
            clock[0] += UNSERVED_INTERVAL_S
            duties.run_services()  # still unserved: nothing more
            assert len(lines()) == 1
            conn.execute("DELETE FROM awa.jobs WHERE kind = 'dropped.report'")
            clock[0] += UNSERVED_INTERVAL_S
            duties.run_services()
            assert lines()[1:] == [(logging.INFO, "jobs of kind dropped.report no longer wait unserved")]
    finally:
        worker.close()
        leader.close()
