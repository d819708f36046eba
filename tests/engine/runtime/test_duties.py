"""The leader's pass (engine/runtime/duties.py): evaluation every pass, housekeeping and
reconciliation each at its own interval, on an injected monotonic clock."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import pytest

from awa_tui.engine.core.errors import Conflict
from awa_tui.engine.firing.evaluator import PassResult
from awa_tui.engine.runtime.duties import (
    HOUSEKEEPING_INTERVAL_S,
    PAUSE_END_INTERVAL_S,
    RECONCILE_INTERVAL_S,
    Duty,
    LeaderDuties,
)


class Recorder:
    """A LeaderHost that does the client's real work and notes what ran."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls: list[str] = []

    def evaluate(self, now: datetime | None = None) -> PassResult:
        self.calls.append("evaluate")
        return self.client.evaluate(now)

    def rescue_orphaned_jobs(self) -> list[dict[str, Any]]:
        self.calls.append("rescue")
        return self.client.runtime.rescue_orphaned_jobs()

    def prune_runtimes(self) -> int:
        self.calls.append("prune")
        return self.client.runtime.prune_runtimes()

    def prune_finished_jobs(self) -> Any:
        self.calls.append("prune jobs")
        return self.client.runtime.prune_finished_jobs()

    def reconcile(self, now: datetime | None = None, *, wait: bool = True) -> list[dict[str, Any]]:
        self.calls.append(f"reconcile(wait={wait})")
        return self.client.runtime.reconcile(now, wait=wait)

    def evaluate_health(self, now: datetime | None = None) -> Any:
        self.calls.append("health")
        return self.client.runtime.evaluate_health(now)

    def end_pauses(self, now: datetime | None = None) -> list[tuple[str, datetime]]:
        self.calls.append("pause ends")
        return self.client.runtime.end_pauses(now)  # type: ignore[no-any-return]

    def unserved_kinds(self, now: datetime | None = None) -> Any:
        self.calls.append("unserved")
        return self.client.runtime.unserved_kinds(now)


def test_each_duty_runs_at_its_own_interval(client: Any) -> None:
    assert (HOUSEKEEPING_INTERVAL_S, RECONCILE_INTERVAL_S, PAUSE_END_INTERVAL_S) == (10.0, 5.0, 1.0)
    clock = [100.0]
    host = Recorder(client)
    duties = LeaderDuties(host, clock=lambda: clock[0])
    seen = {}
    for t in (100.0, 104.9, 105.0, 109.9, 110.0):
        clock[0] = t
        host.calls.clear()
        duties.run_pass()
        seen[t] = list(host.calls)
    # Health (10 s, engine/health/rules.py) runs with housekeeping; pause ends (S65) every second;
    # the look for unserved kinds once a minute.
    everything = ["evaluate", "rescue", "prune", "prune jobs", "reconcile(wait=False)", "health"]
    assert seen == {
        100.0: ["evaluate", "pause ends", *everything[1:], "unserved"],
        104.9: ["evaluate", "pause ends"],
        105.0: ["evaluate", "reconcile(wait=False)"],
        109.9: ["evaluate", "pause ends"],
        110.0: everything,
    }


def test_a_failed_service_is_logged_and_waits_its_interval(caplog: pytest.LogCaptureFixture) -> None:
    clock = [50.0]
    runs: list[float] = []

    def step() -> bool:
        runs.append(clock[0])
        raise Conflict("the database said no\nsecond line")

    duty = Duty("housekeeping", 10.0, step)
    caplog.set_level(logging.WARNING, logger="awa_tui")
    for t in (50.0, 55.0, 60.0):
        clock[0] = t
        duty.run_if_due(lambda: clock[0])
    assert runs == [50.0, 60.0]
    assert [r.getMessage() for r in caplog.records] == ["housekeeping failed: the database said no second line"] * 2


def test_a_service_that_could_not_work_runs_again_at_the_next_pass() -> None:
    clock = [0.0]
    runs: list[float] = []
    busy = [True, False, False]

    def step() -> bool:
        runs.append(clock[0])
        return busy.pop(0)

    duty = Duty("reconciliation", 5.0, step)
    for t in (1.0, 2.0, 3.0, 6.9, 7.0):
        clock[0] = t
        duty.run_if_due(lambda: clock[0])
    assert runs == [1.0, 2.0, 7.0]
