"""Read models and operation results the engine hands to the console and the CLI.

Frozen dataclasses, one per shape: a reader sees every field here instead of in a
docstring, and a consumer cannot change what another one reads. Field names are the
column names (and so the CLI's `--json` keys); times are DB time, timezone-aware.

Nested payloads whose shape is the reconciler's own vocabulary (blockers, plan inserts,
updates, conflicts) stay JSON-like dicts: they are shown and emitted as they are, never
branched on by key beyond `code`, `name`, `message`, `changes`.
"""

from __future__ import annotations

import importlib
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

# The schedule read models are defined here; the others live in page.py,
# fleet.py, owners.py, results.py (beside it) and ledger/models.py, and are named
# from here too. Each of those modules loads when one of its names is first asked for:
# building a frozen dataclass costs ~1 ms on a slow core, and `cron show` needs 4 of the
# 41.
if TYPE_CHECKING:
    from awa_tui.engine.calendars.models import CalendarInfo as CalendarInfo
    from awa_tui.engine.calendars.models import CalendarSummary as CalendarSummary
    from awa_tui.engine.ledger.models import AuditEntry as AuditEntry
    from awa_tui.engine.ownership.plans import Agreement as Agreement
    from awa_tui.engine.ownership.plans import Certificate as Certificate
    from awa_tui.engine.ownership.plans import OwnedSchedules as OwnedSchedules
    from awa_tui.engine.ownership.plans import OwnerCounts as OwnerCounts
    from awa_tui.engine.ownership.plans import OwnerPlan as OwnerPlan
    from awa_tui.engine.ownership.plans import OwnerSummary as OwnerSummary
    from awa_tui.engine.ownership.plans import owner_plan as owner_plan
    from awa_tui.engine.ownership.plans import owner_summary as owner_summary
    from awa_tui.engine.read.fleet import Blocker as Blocker
    from awa_tui.engine.read.fleet import PassSummary as PassSummary
    from awa_tui.engine.read.fleet import QueueRow as QueueRow
    from awa_tui.engine.read.fleet import RuntimeEvent as RuntimeEvent
    from awa_tui.engine.read.fleet import RuntimeEvents as RuntimeEvents
    from awa_tui.engine.read.fleet import RuntimeRow as RuntimeRow
    from awa_tui.engine.read.page import Attention as Attention
    from awa_tui.engine.read.page import ScheduleDetail as ScheduleDetail
    from awa_tui.engine.read.page import SchedulePage as SchedulePage
    from awa_tui.engine.read.page import SchedulePageRow as SchedulePageRow
    from awa_tui.engine.read.results import OwnerChange as OwnerChange
    from awa_tui.engine.read.results import QueueDrained as QueueDrained
    from awa_tui.engine.read.results import QueueState as QueueState
    from awa_tui.engine.read.results import ScheduleState as ScheduleState
    from awa_tui.engine.read.results import TriggeredJob as TriggeredJob

_ELSEWHERE = {
    "AuditEntry": "awa_tui.engine.ledger.models",
    "CalendarInfo": "awa_tui.engine.calendars.models",
    "CalendarSummary": "awa_tui.engine.calendars.models",
    "SchedulePageRow": "awa_tui.engine.read.page",
    "Attention": "awa_tui.engine.read.page",
    "SchedulePage": "awa_tui.engine.read.page",
    "ScheduleDetail": "awa_tui.engine.read.page",
    "QueueRow": "awa_tui.engine.read.fleet",
    "PassSummary": "awa_tui.engine.read.fleet",
    "Blocker": "awa_tui.engine.read.fleet",
    "RuntimeRow": "awa_tui.engine.read.fleet",
    "RuntimeEvent": "awa_tui.engine.read.fleet",
    "RuntimeEvents": "awa_tui.engine.read.fleet",
    "OwnerCounts": "awa_tui.engine.ownership.plans",
    "OwnerSummary": "awa_tui.engine.ownership.plans",
    "Certificate": "awa_tui.engine.ownership.plans",
    "OwnedSchedules": "awa_tui.engine.ownership.plans",
    "Agreement": "awa_tui.engine.ownership.plans",
    "OwnerPlan": "awa_tui.engine.ownership.plans",
    "owner_summary": "awa_tui.engine.ownership.plans",
    "owner_plan": "awa_tui.engine.ownership.plans",
    "ScheduleState": "awa_tui.engine.read.results",
    "TriggeredJob": "awa_tui.engine.read.results",
    "QueueState": "awa_tui.engine.read.results",
    "QueueDrained": "awa_tui.engine.read.results",
    "OwnerChange": "awa_tui.engine.read.results",
}


def __getattr__(name: str) -> Any:
    module = _ELSEWHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # asked once
    return value


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
    # S56: dates ([start, end] ISO days in the zone) and calendars it never fires on.
    exclude_dates: list[list[str]] | None = None
    exclude_calendars: list[str] | None = None
    # S64: "code" (declared in code: sync or a manifest) or "api" (made at run time).
    origin: str = "code"
    # S65: when the pause ends by itself (the leader resumes it) and why it was paused.
    paused_until: datetime | None = None
    pause_reason: str | None = None
    # S66: how old, in seconds, a due instant may be when it fires; None = no bound.
    catchup_window: int | None = None


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


# Anything an operator action on a schedule can be chosen from (a panel row, the detail).
AnySchedule = ScheduleRow | ScheduleInfo


@dataclass(frozen=True)
class NextFire:
    """One upcoming fire, in UTC and in the schedule's zone; `dst` is gap | fold | None;
    `excluded`, when set, marks an instant the schedule's exclusions skip (S56)."""

    utc: datetime
    local: datetime
    timezone: str
    dst: str | None
    excluded: str | None = None  # S56: the rule that keeps this instant from firing, e.g. "calendar holidays"


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
    # The overlap policy replace: the jobs this fire cancelled, the job whose fire cancelled it.
    replaced: tuple[int, ...] = ()
    replaced_by: int | None = None


@dataclass(frozen=True)
class AuditRecord:
    """One audit entry in full (the console's audit detail): the action, BEFORE and AFTER
    whole, and the database session that wrote it, as the audit trigger recorded it.
    `session_recorded` is False where the trail keeps no session (upstream Awa mode)."""

    id: int
    at: datetime
    operator: str
    action: str
    target: str
    before: Any
    after: Any
    detail: Any
    db_user: str | None
    client_addr: str | None  # None over a Unix socket
    application_name: str | None
    backend_pid: int | None
    session_recorded: bool = True


def overdue_s(state: str, at: datetime | None, due: bool, now: datetime) -> float | None:
    """How long an active schedule's due fire (`at`, `due`: not a fault's) has waited past its
    instant at `now` (the database clock of the read), once that is OVERDUE: a fleet that
    stopped firing; None otherwise. The console, `cron list` and its `--json` say the same."""
    from awa_tui.engine.core.limits import OVERDUE_AFTER_S

    if not due or state != "active" or at is None:
        return None
    waited = (now - at).total_seconds()
    return waited if waited >= OVERDUE_AFTER_S else None
