"""What the leader does: evaluate every second, and the small services that are due,
each with its own interval (monotonic seconds). A running runtime calls them from two
threads (engine/runtime/loops.py): the evaluator's fires only, and the services run on a
thread of their own, so a slow service (health over a large jobs table, a prune round)
never makes a fire late. `run_pass` does both in turn, for tests and embedders.
Evaluation's failure ends the pass (the loop backs off); a service's failure is logged.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from awa_tui.engine.core.errors import AwaError
from awa_tui.engine.core.limits import HEALTH_INTERVAL_S
from awa_tui.engine.firing.evaluator import PassResult
from awa_tui.engine.health.models import HealthPass, UnservedKind
from awa_tui.engine.ownership import reconcile
from awa_tui.printable import printable, printable_logger

log = printable_logger("awa_tui")

# Owners are reconciled at this cadence, not every pass: the evidence windows it works
# with are at least 30 s long.
RECONCILE_INTERVAL_S = 5.0
# House is kept at this cadence: jobs stranded by dead workers go back to their queue,
# snapshot rows of runtimes long gone are pruned.
HOUSEKEEPING_INTERVAL_S = 10.0
# Retention's share of one housekeeping round (on the duties thread, beside the passes):
# at most this many batches (one short transaction each) and this long; the rest
# waits for the next round.
PRUNE_BATCHES_PER_ROUND = 20
PRUNE_BUDGET_S = 0.2
# Pauses with an end are ended at this cadence (S65): one indexed statement a round, never
# in the fire statement, so a pause ends within about a second of its time.
PAUSE_END_INTERVAL_S = 1.0
# Kinds nobody serves are looked for at this cadence (one read of the waiting jobs): a
# schedule dropped from code, or a handler never deployed, is logged within a minute or two.
UNSERVED_INTERVAL_S = 60.0


class LeaderHost(Protocol):
    """What the duties need of the client they work for."""

    def evaluate(self, now: datetime | None = None) -> PassResult: ...

    def rescue_orphaned_jobs(self) -> list[dict[str, Any]]: ...

    def prune_runtimes(self) -> int: ...

    def prune_finished_jobs(self) -> Any: ...

    def reconcile(self, now: datetime | None = None, *, wait: bool = True) -> list[dict[str, Any]]: ...

    def evaluate_health(self, now: datetime | None = None) -> HealthPass: ...

    def end_pauses(self, now: datetime | None = None) -> list[tuple[str, datetime]]: ...

    def unserved_kinds(self, now: datetime | None = None) -> list[UnservedKind]: ...


@dataclass
class Duty:
    """One service and its interval. `step` returns True to run again at the next pass
    (it could not do its work now, e.g. a lock was busy)."""

    name: str  # as logged: "<name> failed: ..."
    interval_s: float
    step: Callable[[], bool]
    next_at: float = 0.0  # monotonic; 0 = at the next pass

    def run_if_due(self, clock: Callable[[], float]) -> None:
        if clock() < self.next_at:
            return
        self.next_at = clock() + self.interval_s
        try:
            again = self.step()
        except AwaError as exc:
            log.warning("%s failed: %s", self.name, exc)
            return
        if again:
            self.next_at = 0.0


class LeaderDuties:
    """The leader's pass: evaluation every time, then housekeeping and reconciliation when due."""

    def __init__(self, host: LeaderHost, clock: Callable[[], float] = time.monotonic) -> None:
        self.host = host
        self.clock = clock
        self.services = [
            # First: a pause that ended is resumed before health judges the schedule.
            Duty("pause ends", PAUSE_END_INTERVAL_S, self._end_pauses),
            Duty("housekeeping", HOUSEKEEPING_INTERVAL_S, self._keep_house),
            Duty("reconciliation", RECONCILE_INTERVAL_S, self._reconcile),
            Duty("health", HEALTH_INTERVAL_S, self._health),
            Duty("unserved kinds", UNSERVED_INTERVAL_S, self._unserved),
        ]
        self.unserved: set[str] = set()  # kinds logged as unserved, until they are served again

    def run_pass(self) -> None:
        self.host.evaluate()
        self.run_services()

    def run_services(self) -> None:
        """The services that are due (the duties thread of a running runtime)."""
        for service in self.services:
            service.run_if_due(self.clock)

    def _keep_house(self) -> bool:
        self.host.rescue_orphaned_jobs()
        self.host.prune_runtimes()
        self.host.prune_finished_jobs()
        return False

    def _reconcile(self) -> bool:
        busy = False
        for result in self.host.reconcile(wait=False):
            if result["skipped"]:
                busy = True  # the protocol lock was busy: try again next pass
            elif result["inserted"] or result["updated"] or result["retired"]:
                log.info("reconciled %s", reconcile.describe(result))
        return busy

    def _end_pauses(self) -> bool:
        # One line a round, a few names: a fleet-wide maintenance window ends all at once.
        ended = self.host.end_pauses()
        if ended:
            names = ", ".join(printable(name) for name, _ in ended[:5]) + (", ..." if len(ended) > 5 else "")
            log.info("resumed %d schedule(s) whose pause reached its end: %s", len(ended), names)
        return False

    def _unserved(self) -> bool:
        # Once per kind when its jobs start waiting unserved, once when that ends: not every
        # round, so a kind nobody will ever serve does not fill the log.
        found = {u.kind: u for u in self.host.unserved_kinds()}
        for kind in sorted(found.keys() - self.unserved):
            u = found[kind]
            log.warning("%d job(s) of kind %s wait in %s and no live runtime runs a handler for it: deploy one, "
                        "or retire the schedule that fires it", u.waiting, printable(kind),
                        ", ".join(printable(q) for q in u.queues))
        for kind in sorted(self.unserved - found.keys()):
            log.info("jobs of kind %s no longer wait unserved", printable(kind))
        self.unserved = set(found)
        return False

    def _health(self) -> bool:
        # One line per pass, counts only: a leader outage can turn 100k schedules late at
        # once, and `awa-tui check` names them.
        judged = self.host.evaluate_health()
        changed = Counter(t.to_health for t in judged.transitions)
        if changed:
            log.info("health: %d changed (%s)", sum(changed.values()),
                     ", ".join(f"{health} {n}" for health, n in sorted(changed.items())))
        return judged.audit_behind  # a bulk change's audit entries: the next slice at the next pass
