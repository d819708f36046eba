"""Read models of health (S42) and of `awa-tui check` (S43)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from awa_tui.engine.core.health_words import HEALTHS as HEALTHS
from awa_tui.engine.core.health_words import UNHEALTHY as UNHEALTHY
from awa_tui.engine.read.fleet import Blocker
from awa_tui.engine.read.page import Attention

# What `awa-tui check` exits with for each (Nagios: 1 warning, 2 critical).
WARNING = ("late",)
CRITICAL = ("broken", "failing", "missed")
# Who pauses a schedule after `pause_after_failures` consecutive failed jobs.
AUTOPAUSE = "awa-autopause"

EXIT_OK, EXIT_WARNING, EXIT_CRITICAL, EXIT_UNKNOWN = 0, 1, 2, 3


def health_rank(health: str | None) -> int:
    """Sort key, worst first: broken, failing, missed, late, then the rest."""
    return UNHEALTHY.index(health) if health in UNHEALTHY else len(UNHEALTHY)


@dataclass(frozen=True)
class HealthPass:
    """One evaluation by the leader: what changed, and what it cost."""

    now: datetime
    transitions: list[Transition]
    fires_counted: int
    seconds: float
    judged: int = 0  # schedules judged: the candidates and the sweep's slice (S42)
    audit_behind: bool = False  # the trail holds more entries than one pass reads: run again at once


@dataclass(frozen=True)
class Transition:
    name: str
    at: datetime
    from_health: str | None
    to_health: str
    reason: str | None


@dataclass(frozen=True)
class ScheduleHealth:
    """One schedule's health as the leader last recorded it."""

    name: str
    owner: str | None
    queue: str
    health: str
    since: datetime | None
    reason: str | None
    consecutive_failures: int
    paused_by: str | None

    @property
    def autopaused(self) -> bool:
        return self.health == "paused" and self.paused_by == AUTOPAUSE


@dataclass(frozen=True)
class UnservedKind:
    """Jobs of a kind no live runtime runs a handler for, waiting past their run time."""

    kind: str
    waiting: int
    queues: tuple[str, ...]


@dataclass(frozen=True)
class ConsoleAttention:
    """What the console's ATTENTION line says on every panel besides the leader lock (S75), read at a refresh."""

    unhealthy: int  # schedules whose recorded health is not ok (S42)
    worst: Attention | None  # the worst of them
    unserved: tuple[UnservedKind, ...] | None  # None: not read with this refresh


@dataclass(frozen=True)
class FleetProblem:
    # no_leader | stalled | several_leaders | stale_health | schema | pass_timed_out | overdue | unserved_kind
    # | fleet_alert (the fleet's open alert)
    # | jobs_waiting, retention_behind (warnings)
    # | alert_delivery (S63)
    code: str
    message: str
    blockers: tuple[Blocker, ...] = ()  # pass_timed_out: the sessions the leader's pass waited on (S59)
    warning: bool = False  # a warning, not critical: a rolling deploy's older runtimes (schema_overlap)


@dataclass(frozen=True)
class CheckReport:
    """`awa-tui check`: the unhealthy schedules, the fleet's problems and the exit code."""

    now: datetime
    status: str  # ok | warning | critical
    exit_code: int
    checked: int  # schedules the selection holds
    unhealthy: list[ScheduleHealth]
    counts: dict[str, int]  # per health, over the selection
    fleet: list[FleetProblem]
    evaluated_at: datetime | None  # the leader's last health evaluation

    def unhealthy_count(self, health: str) -> int:
        return sum(1 for s in self.unhealthy if s.health == health)


@dataclass(frozen=True)
class LoopState:
    """One loop of a runtime process, as `awa-tui check --alive` sees it."""

    name: str
    running: bool  # its thread is alive (a loop never ends before the runtime stops)
    busy_s: float | None  # seconds inside its current step; None while it waits
    since_step_s: float | None  # seconds since its last step ended; None before the first
    bounded: bool  # whether a long step means it is stuck (the worker's runs jobs: not)


@dataclass(frozen=True)
class RuntimeAlive:
    """What a runtime process says of itself at /alive (runtime/alive.py)."""

    instance_id: str
    hostname: str
    pid: int
    state: str  # starting (migrating, first sync) | running | stopping
    loops: list[LoopState]


@dataclass(frozen=True)
class RegisteredRuntime:
    """A runtime with a fresh snapshot (S21), as `awa-tui check --registered` found it."""

    instance_id: str
    hostname: str
    pid: int
    last_seen_at: datetime


@dataclass(frozen=True)
class ProbeReport:
    """`awa-tui check --alive` / `--registered`: this runtime only, never the schedules nor
    the fleet, so one pod's probe never fails because of another's trouble. `problems` are
    one line each; none means ok."""

    status: str  # ok | critical
    exit_code: int
    alive: RuntimeAlive | None
    registered: list[RegisteredRuntime] | None
    problems: list[str]
