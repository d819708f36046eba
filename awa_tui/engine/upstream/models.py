"""Typed read models and outcomes of upstream mode (frozen dataclasses, UTC instants).

Upstream mode operates a database whose `awa` schema was created by upstream Awa (the
awa-pg package), not by awa-tui: its own leader fires the schedules and its own workers
run the jobs; awa-tui reads its tables and writes only what those processes honour.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from awa_tui.engine.migrations.detect import SchemaInfo as SchemaInfo
from awa_tui.engine.migrations.detect import SchemaKind as SchemaKind
from awa_tui.engine.read.fleet import QueueRow, RuntimeRow
from awa_tui.engine.read.models import CronDefinition, Fire, ScheduleInfo, ScheduleRow
from awa_tui.engine.read.results import QueueState, ScheduleState, TriggeredJob


@dataclass(frozen=True)
class UpstreamCapabilities:
    """What this upstream schema version supports (checked from its columns and functions)."""

    schedule_pause: bool  # awa.cron_jobs.paused_at (upstream migration v026)
    trigger: bool  # awa.insert_job_compat(), the function upstream's own trigger writes through
    queue_pause: bool  # awa.queue_meta.paused


@dataclass(frozen=True)
class UpstreamSchedule(CronDefinition):
    """One row of upstream's awa.cron_jobs, with its next fire by awa-tui's cron arithmetic."""

    paused_at: datetime | None
    paused_by: str | None
    created_at: datetime
    updated_at: datetime
    queue_paused: bool
    next_fire: datetime | None  # even while paused: when it would fire if resumed
    next_fire_mark: str | None  # "gap" | "fold" when DST moved or de-duplicated it
    problem: str | None  # why next_fire is None (an expression awa-tui cannot evaluate)
    tags: tuple[str, ...] = ()
    queue_paused_at: datetime | None = None  # the queue's pause (queue_meta), when queue_paused
    queue_paused_by: str | None = None

    @property
    def state(self) -> Literal["active", "paused"]:
        return "paused" if self.paused_at is not None else "active"


@dataclass(frozen=True)
class UpstreamFire:
    """A job written for a schedule: by upstream's leader (fire_time set) or a trigger."""

    job_id: int
    state: str
    attempt: int
    queue: str
    created_at: datetime
    finalized_at: datetime | None
    fire_time: datetime | None  # metadata.cron_fire_time; None for a manual trigger
    manual: bool  # metadata.triggered_manually


@dataclass(frozen=True)
class UpcomingFire:
    at: datetime  # UTC instant
    local: datetime  # the same instant in the schedule's zone
    mark: str | None  # "gap" | "fold"


@dataclass(frozen=True)
class UpstreamScheduleDetail:
    schedule: UpstreamSchedule
    args: object
    tags: tuple[str, ...]
    metadata: object
    upcoming: tuple[UpcomingFire, ...]
    recent: tuple[UpstreamFire, ...]


@dataclass(frozen=True)
class UpstreamRuntime:
    """One row of upstream's awa.runtime_instances (its runtimes' snapshots)."""

    instance_id: str
    hostname: str | None
    pid: int
    version: str
    started_at: datetime
    last_seen_at: datetime
    snapshot_interval_ms: int
    healthy: bool
    leader: bool
    shutting_down: bool
    storage_capability: str | None
    queues: tuple[str, ...]
    stale: bool  # upstream's own rule: unseen for max(3 x interval, 30 s)


@dataclass(frozen=True)
class UpstreamQueue:
    """A queue known from upstream's queue_meta, schedules, jobs or runtime snapshots."""

    queue: str
    paused: bool
    paused_at: datetime | None
    paused_by: str | None
    available: int
    scheduled: int  # scheduled + retryable: waiting for their run_at
    running: int
    failed: int
    completed: int  # terminal completed rows upstream still keeps
    schedules: int


@dataclass(frozen=True)
class ActionOutcome:
    """What an operator action did, and whether awa-tui's audit trail recorded it."""

    action: str
    target: str
    summary: str  # one line
    audited: bool
    audit_id: int | None = None
    job_id: int | None = None
    job: TriggeredJob | None = None  # the job a trigger wrote, as it wrote it


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: datetime
    operator: str
    action: str
    target: str
    before: object
    after: object
    detail: object


# --- upstream rows as awa-tui's own read models --------------------------------------------------
# What the console and the CLI read is awa-tui's own read model (engine/read/models.py); these
# subclasses only add what upstream mode says besides, so `--json` keeps the keys scripts read
# in upstream mode (next_fire_mark, problem, audited...). kw_only: the base models end in defaults.


@dataclass(frozen=True, kw_only=True)
class UpstreamScheduleRow(ScheduleRow):
    next_fire_mark: str | None  # "gap" | "fold" when DST moved or de-duplicated the next fire
    problem: str | None  # why next_fire_at is None (an expression awa-tui cannot evaluate)


@dataclass(frozen=True, kw_only=True)
class UpstreamScheduleInfo(ScheduleInfo):
    next_fire_mark: str | None
    problem: str | None


@dataclass(frozen=True, kw_only=True)
class UpstreamFireRow(Fire):
    finalized_at: datetime | None


@dataclass(frozen=True, kw_only=True)
class UpstreamQueueRow(QueueRow):
    scheduled: int  # scheduled + retryable: waiting for their run_at
    failed: int
    completed: int  # terminal completed rows upstream still keeps


@dataclass(frozen=True, kw_only=True)
class UpstreamRuntimeRow(RuntimeRow):
    shutting_down: bool
    storage_capability: str | None
    queues: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class UpstreamScheduleState(ScheduleState):
    """A schedule after pause / resume, with its `cron list` columns."""

    state: str
    queue_paused: bool
    next_fire_at: datetime | None
    next_fire_mark: str | None
    created_at: datetime | None
    updated_at: datetime | None
    problem: str | None
    audited: bool  # whether awa-tui's audit trail (`db init-audit`) recorded the action
    audit_id: int | None


@dataclass(frozen=True, kw_only=True)
class UpstreamTriggeredJob(TriggeredJob):
    name: str
    audited: bool  # whether awa-tui's audit trail (`db init-audit`) recorded the action
    audit_id: int | None


@dataclass(frozen=True, kw_only=True)
class UpstreamQueueState(QueueState):
    audited: bool  # whether awa-tui's audit trail (`db init-audit`) recorded the action
    audit_id: int | None
