"""Pause storm (S11, S16, S20): operators toggle pause/resume of 50 schedules every few
milliseconds while a leader fires them every second. A paused schedule never fires (a test
trigger records any fire on a paused row version), catch_up replays every fire a pause held
back, nothing is doubled, and every action has its audit entry. A negative control runs the
same storm with the pause guard removed from the leader and must see it caught."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import wait_for

from awa_tui import Client
from awa_tui.engine.core.errors import AwaError

from . import harness
from .app import FAULT_ENV, NO_PAUSE_GUARD

# Real processes for tens of seconds: `-m "not slow"` leaves them out of a quick local run.
pytestmark = pytest.mark.slow

SCHEDULES = 50
STORM_S = 10.0
OPERATORS = 4
MIN_EACH = 200  # pause actions, and resume actions, the storm must have done
MIN_HELD = 20  # pauses that spanned a due instant (a fire the guard had to hold back)
CONTROL_S = 4.0

# Pauses that held a fire back: a pause whose resume came in a later second than it.
HELD_SQL = """
SELECT count(*) AS n FROM (
    SELECT action, at, lead(action) OVER w AS next_action, lead(at) OVER w AS next_at
    FROM awa.audit_log WHERE id > %s AND action IN ('pause', 'resume')
    WINDOW w AS (PARTITION BY target ORDER BY id)
) t
WHERE action = 'pause' AND next_action = 'resume' AND date_trunc('second', next_at) > date_trunc('second', at)
"""


class Operator(threading.Thread):
    """Toggles its own share of the schedules as fast as an operator script could."""

    def __init__(self, dsn: str, names: list[str], deadline: float, seed: int) -> None:
        super().__init__(daemon=True)
        self.client = Client(dsn, operator=f"storm-{seed}")
        self.names = names
        self.deadline = deadline
        self.rng = random.Random(seed)
        self.paused: set[str] = set()
        self.actions = 0
        self.errors: list[str] = []

    def run(self) -> None:
        try:
            while time.monotonic() < self.deadline:
                name = self.rng.choice(self.names)
                try:
                    if name in self.paused:
                        self.client.actions.resume(name)
                        self.paused.discard(name)
                    else:
                        self.client.actions.pause(name)
                        self.paused.add(name)
                    self.actions += 1
                except AwaError as exc:
                    self.errors.append(str(exc))
                harness.pause(self.rng.uniform(0.0, 0.004))  # every few milliseconds
            for name in sorted(self.paused):
                self.client.actions.resume(name)
                self.actions += 1
        finally:
            self.client.close()


@dataclass
class StormOutcome:
    actions: int
    pauses: int
    resumes: int
    held: int  # pauses that spanned a due instant
    audit_rows: int
    errors: list[str]
    violations: list[str]
    check: harness.FireCheck
    statuses: dict[int, int]
    problems: list[str]
    logs: str


def run_pause_storm(dsn: str, log_dir: Path, seconds: float, env: dict[str, str] | None = None) -> StormOutcome:
    """One leader (with `env`), OPERATORS threads toggling pause/resume for `seconds`;
    everything the checks need, read back from the database."""
    conn = harness.connect(dsn)
    harness.install_guards(conn)
    with harness.fleet(dsn, log_dir, count=SCHEDULES) as f:
        f.spawn(env=env)
        harness.settle(conn, f.names)
        audit_from = harness.last_audit_id(conn)
        deadline = time.monotonic() + seconds
        operators = [Operator(dsn, f.names[i::OPERATORS], deadline, i) for i in range(OPERATORS)]
        for op in operators:
            op.start()
        for op in operators:
            op.join(seconds + 60)
            assert not op.is_alive()
        end = harness.db_now(conn)
        wait_for(lambda: harness.caught_up(conn, f.names, end), 60, what="every schedule caught up")
        statuses = f.stop_all()
        problems = f.problems()
        logs = f.logs()
    counts = {r["action"]: r["n"] for r in conn.execute(
        "SELECT action, count(*) AS n FROM awa.audit_log WHERE id > %s GROUP BY action", (audit_from,)).fetchall()}
    held = conn.execute(HELD_SQL, (audit_from,)).fetchone()
    assert held is not None
    return StormOutcome(
        actions=sum(op.actions for op in operators), pauses=counts.get("pause", 0), resumes=counts.get("resume", 0),
        held=held["n"], audit_rows=sum(counts.values()), errors=[e for op in operators for e in op.errors],
        violations=harness.guard_violations(conn), check=harness.check_fires(conn, f.names, f.expr, end),
        statuses=statuses, problems=problems, logs=logs)


def test_pause_storm(dsn: str, log_dir: Path, scale: int, summary: harness.Summary) -> None:
    started = time.monotonic()
    out = run_pause_storm(dsn, log_dir, STORM_S * scale)
    summary.runs = out.actions
    summary.count(out.check)
    summary.seconds = time.monotonic() - started
    summary.notes = (f"{out.pauses} pauses, {out.resumes} resumes in {STORM_S * scale:.0f}s, {out.held} held a "
                     f"fire back; fires on paused rows: {len(out.violations)}")
    summary.extra = {"pauses": out.pauses, "resumes": out.resumes, "held": out.held,
                     "violations": len(out.violations)}
    assert not out.violations, "\n".join(out.violations[:10])
    assert not out.errors, out.errors[:10]
    assert out.audit_rows == out.actions, "an action without its audit entry (or one too many)"
    assert out.pauses >= MIN_EACH and out.resumes >= MIN_EACH, f"too quiet a storm: {out.pauses}/{out.resumes}"
    assert out.held >= MIN_HELD, f"only {out.held} pauses spanned a due instant: the guard was barely tested"
    assert out.check.ok, out.check.describe()
    assert set(out.statuses.values()) == {0}, f"unclean stop: {out.statuses}\n{out.logs}"
    assert not out.problems, "\n".join(out.problems)


def test_pause_storm_control_without_the_pause_guard_is_caught(
    dsn: str, log_dir: Path, summary: harness.Summary
) -> None:
    """Negative control: the same storm against a leader whose fire statement lacks the
    pause guard (AWA_REL_FAULT, read by the test app only). The guard table must record
    fires on paused rows, made by the leader's sessions (`rel-<pid>`): the fault happened and
    was seen. (The test app refuses to start if it cannot remove the guard.)"""
    out = run_pause_storm(dsn, log_dir, CONTROL_S, env={FAULT_ENV: NO_PAUSE_GUARD})
    paused = [v for v in out.violations if " fired while paused " in v]
    summary.runs = out.actions
    summary.notes = (f"negative control, no pause guard: {len(paused)} fires on paused rows recorded "
                     f"(expected >= 1), {out.held} pauses held a fire back")
    assert paused, f"the control storm recorded no fire on a paused row ({out.held} pauses held a fire back)"
    assert all("by 'rel-" in v for v in paused), paused[:5]
    assert out.held > 0
