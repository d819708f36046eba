"""Read models and operation results the engine hands to the console and the CLI.

Frozen dataclasses, one per shape: a reader sees every field here instead of in a
docstring, and a consumer cannot change what another one reads. Field names are the
column names (and so the CLI's `--json` keys); times are DB time, timezone-aware.

Nested payloads whose shape is the reconciler's own vocabulary (blockers, plan inserts,
updates, conflicts) stay JSON-like dicts: they are shown and emitted as they are, never
branched on by key beyond `code`, `name`, `message`, `changes`.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

# One audit record for every reader; imported from here too, beside the other read models.
from awa_tui.engine.ledger.models import AuditEntry

# --- schedules ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CronDefinition:
    """The columns of awa.cron_jobs that awa-tui's schema and upstream Awa's share, with the
    same types (upstream/models.UpstreamSchedule); one that diverges moves out of here."""

    name: str
    cron_expr: str
    timezone: str
    kind: str
    queue: str
    priority: int
    max_attempts: int
    missed_fire_policy: str
    last_enqueued_at: datetime | None


@dataclass(frozen=True)
class _ScheduleColumns(CronDefinition):
    """The columns of awa.cron_jobs every schedule read model carries (views.SCHEDULE_COLUMNS)."""

    next_fire_at: datetime | None
    created_at: datetime | None
    updated_at: datetime | None
    paused_at: datetime | None
    paused_by: str | None
    owner: str | None
    retired_at: datetime | None
    retired_by: str | None
    fault: str | None  # why the row is BROKEN (S15), or None
    _: KW_ONLY  # with defaults: models built by hand (upstream mode) need not name them
    # What fires (v009): overlap policy, bounds, scheduled fires so far, when it finished.
    overlap: str = "allow"
    start_at: datetime | None = None
    end_at: datetime | None = None
    max_fires: int | None = None
    fires_count: int = 0
    finished_at: datetime | None = None
    # Expectations (S41): seconds and counts as declared, None = not declared.
    max_lateness: int | None = field(default=None, kw_only=True)
    expect_success_within: int | None = field(default=None, kw_only=True)
    max_consecutive_failures: int | None = field(default=None, kw_only=True)
    pause_after_failures: int | None = field(default=None, kw_only=True)
    cron_written: str | None = None  # the expression as written when it uses H (cron_expr: resolved)
    jitter_ms: int = 0
    # While overridden by an operator: the code's values of the overridden columns.
    overridden: dict[str, Any] | None = None


@dataclass(frozen=True)
class ScheduleRow(_ScheduleColumns):
    """One schedule as `cron list` shows it: its state and its queue's pause (S18)."""

    queue_paused: bool
    queue_paused_by: str | None
    state: str  # active | paused | retired | finished


@dataclass(frozen=True)
class ScheduleInfo(_ScheduleColumns):
    """One schedule in full (`get_schedule`): its definition's payload too."""

    args: Any  # the stored JSON document (its text when Python cannot hold it)
    metadata: Any
    tags: list[str] | None
    queue_paused: bool
    queue_paused_by: str | None
    state: str


@dataclass(frozen=True)
class SchedulePageRow(ScheduleRow):
    """A row of the console's schedules panel: the next fire and the last fire's job."""

    queue_paused_at: datetime | None
    last_job_state: str | None
    lateness: timedelta | None  # the last fire's job created_at - its fire time
    next_fire: datetime | None
    next_fire_due: bool
    # The leader's last health evaluation (S42): word, since when, why.
    health: str | None = field(default=None, kw_only=True)
    health_since: datetime | None = field(default=None, kw_only=True)
    health_reason: str | None = field(default=None, kw_only=True)
    # The ledger's columns (issue 13), read with the page (views.SCHEDULE_PAGE_SQL):
    last_result: str = "none"  # its latest job (manual too): ok, failed, running, waiting, cancelled, none
    last_error: str | None = None  # that job's latest error, when it failed
    fails_24h: int = 0  # its jobs created in the last 24 h whose latest attempt failed
    # Its last 20 due instants, oldest first, each its job's state when it fired, else its
    # verdict (ledger/models.instant_outcome, ledger/strips.py); none when BROKEN.
    outcomes: tuple[str, ...] = ()


# Anything an operator action on a schedule can be chosen from (a panel row, the detail).
AnySchedule = ScheduleRow | ScheduleInfo


@dataclass(frozen=True)
class Attention:
    """One schedule's recorded health (S42): the worst one heads the console's ATTENTION line."""

    name: str
    health: str
    since: datetime | None
    reason: str | None


@dataclass(frozen=True)
class SchedulePage:
    """One filtered, sorted page of schedules, with counts, at `now`."""

    now: datetime
    rows: list[SchedulePageRow]
    total: int
    paused: int
    retired: int
    matched: int
    # S42: unhealthy schedules by health (all of them, not just the page), and the worst.
    unhealthy: dict[str, int] = field(default_factory=dict)
    attention: Attention | None = None


@dataclass(frozen=True)
class NextFire:
    """One upcoming fire, in UTC and in the schedule's zone; `dst` is gap | fold | None."""

    utc: datetime
    local: datetime
    timezone: str
    dst: str | None


@dataclass(frozen=True)
class Fire:
    """A job written for a schedule (`recent_fires`)."""

    id: int
    state: str
    attempt: int
    created_at: datetime | None
    fire_time: str | None  # the metadata's text as stored (a hand-written one may be no instant)
    manual: bool
    lateness: timedelta | None


@dataclass(frozen=True)
class ScheduleDetail:
    """Everything the console's detail view shows about one schedule."""

    now: datetime
    schedule: ScheduleInfo
    next: list[NextFire]
    recent: list[Fire]
    audit: list[AuditEntry]
    health: Attention | None = None  # S42: as the leader last recorded it


# --- queues and runtimes -----------------------------------------------------------------


@dataclass(frozen=True)
class QueueRow:
    queue: str
    paused: bool
    paused_at: datetime | None
    paused_by: str | None
    available: int
    running: int
    schedules: int


@dataclass(frozen=True)
class PassSummary:
    """One evaluator pass of a runtime, as its snapshot carries it (newest first)."""

    at: datetime  # the pass's `now`
    duration_ms: float  # wall time of the pass, in this runtime's process
    due: int  # schedules the pass examined: due at `at`, or with no next fire stored yet (hinted set-based, S51)
    fired: int  # jobs written
    errors: int  # schedules skipped with an error (S15)


@dataclass(frozen=True)
class RuntimeRow:
    """A runtime's snapshot; `role` is the leader lock's verdict, `is_leader` the snapshot's."""

    instance_id: UUID
    hostname: str
    pid: int
    version: str
    protocol_version: int
    started_at: datetime | None
    last_seen_at: datetime | None
    snapshot_interval: timedelta | None
    is_leader: bool
    health: Any
    stopped_at: datetime | None
    owner: str | None
    authoritative: bool
    manifest_hash: str | None
    fresh: bool
    role: str  # leader | stalled | follower
    lease_expires_at: datetime | None
    passes: tuple[PassSummary, ...] = ()  # its last evaluator passes, newest first (leaders only)


# --- owners (S22-S34) --------------------------------------------------------------------


@dataclass(frozen=True)
class OwnerCounts:
    inserts: int
    updates: int
    retirements: int


@dataclass(frozen=True)
class OwnerSummary:
    """One owner as the owners panel and `owner list` show it."""

    owner: str
    fresh_runtimes: int
    manifest_hashes: list[str]
    certificate_hash: str | None
    certified_at: datetime | None
    certified: bool
    schedules_owned: int
    schedules_retired: int
    agreement_since: datetime | None
    grace_required_s: float
    grace_remaining_s: float | None
    pending: OwnerCounts
    blockers: list[dict[str, Any]]  # {code, message, blocks, ...}


@dataclass(frozen=True)
class Certificate:
    hash: str | None
    size: int | None
    certified_at: datetime | None
    current: bool


@dataclass(frozen=True)
class OwnedSchedules:
    active: int
    retired: int


@dataclass(frozen=True)
class Agreement:
    hash: str | None
    since: datetime | None
    recorded_since: datetime | None
    evidence_window_s: float
    grace_required_s: float
    grace_remaining_s: float | None


@dataclass(frozen=True)
class OwnerPlan:
    """What reconciliation would do now for one owner (S34); see reconcile.plan."""

    owner: str
    now: datetime
    fresh_declarations: int
    manifest_hash: str | None
    manifest_hashes: list[str]
    certificate: Certificate
    schedules: OwnedSchedules
    inserts: list[dict[str, Any]]  # {name, definition}
    updates: list[dict[str, Any]]  # {name, changes: {column: {from, to}}}
    retirements: list[str]
    conflicts: list[dict[str, Any]]  # {name, kind, owner, message}
    will_insert: bool
    will_update: bool
    will_retire: bool
    agreement: Agreement
    blockers: list[dict[str, Any]]


def owner_summary(row: dict[str, Any]) -> OwnerSummary:
    return OwnerSummary(**{**row, "pending": OwnerCounts(**row["pending"])})


def owner_plan(row: dict[str, Any]) -> OwnerPlan:
    return OwnerPlan(**{
        **row,
        "certificate": Certificate(**row["certificate"]),
        "schedules": OwnedSchedules(**row["schedules"]),
        "agreement": Agreement(**row["agreement"]),
    })


# --- operation results -------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduleState:
    """A schedule row as an operator action left it (or, for remove, as it was)."""

    name: str
    cron_expr: str
    timezone: str
    kind: str
    queue: str
    args: Any
    priority: int
    max_attempts: int
    tags: list[str] | None
    metadata: Any
    missed_fire_policy: str
    last_enqueued_at: datetime | None
    paused_at: datetime | None
    paused_by: str | None
    owner: str | None
    retired_at: datetime | None
    retired_by: str | None
    overlap: str = field(default="allow", kw_only=True)
    start_at: datetime | None = field(default=None, kw_only=True)
    end_at: datetime | None = field(default=None, kw_only=True)
    max_fires: int | None = field(default=None, kw_only=True)
    finished_at: datetime | None = field(default=None, kw_only=True)
    max_lateness: int | None = field(default=None, kw_only=True)
    expect_success_within: int | None = field(default=None, kw_only=True)
    max_consecutive_failures: int | None = field(default=None, kw_only=True)
    pause_after_failures: int | None = field(default=None, kw_only=True)
    cron_written: str | None = None  # issue 16 (see _ScheduleColumns)
    jitter_ms: int = 0
    overridden: dict[str, Any] | None = None


@dataclass(frozen=True)
class TriggeredJob:
    id: int
    kind: str
    queue: str
    state: str
    metadata: Any
    created_at: datetime


@dataclass(frozen=True)
class QueueState:
    queue: str
    paused: bool
    paused_at: datetime | None
    paused_by: str | None


@dataclass(frozen=True)
class QueueDrained:
    queue: str
    cancelled: int


@dataclass(frozen=True)
class OwnerChange:
    """retire_owner / restore_owner: the names changed now."""

    owner: str
    at: datetime
    names: list[str]
    count: int
