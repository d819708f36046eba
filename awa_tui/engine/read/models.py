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
# 41 (issue 18).
if TYPE_CHECKING:
    from awa_tui.engine.ledger.models import AuditEntry as AuditEntry
    from awa_tui.engine.read.fleet import Blocker as Blocker
    from awa_tui.engine.read.fleet import PassSummary as PassSummary
    from awa_tui.engine.read.fleet import QueueRow as QueueRow
    from awa_tui.engine.read.fleet import RuntimeRow as RuntimeRow
    from awa_tui.engine.read.owners import Agreement as Agreement
    from awa_tui.engine.read.owners import Certificate as Certificate
    from awa_tui.engine.read.owners import OwnedSchedules as OwnedSchedules
    from awa_tui.engine.read.owners import OwnerCounts as OwnerCounts
    from awa_tui.engine.read.owners import OwnerPlan as OwnerPlan
    from awa_tui.engine.read.owners import OwnerSummary as OwnerSummary
    from awa_tui.engine.read.owners import owner_plan as owner_plan
    from awa_tui.engine.read.owners import owner_summary as owner_summary
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
    "SchedulePageRow": "awa_tui.engine.read.page",
    "Attention": "awa_tui.engine.read.page",
    "SchedulePage": "awa_tui.engine.read.page",
    "ScheduleDetail": "awa_tui.engine.read.page",
    "QueueRow": "awa_tui.engine.read.fleet",
    "PassSummary": "awa_tui.engine.read.fleet",
    "Blocker": "awa_tui.engine.read.fleet",
    "RuntimeRow": "awa_tui.engine.read.fleet",
    "OwnerCounts": "awa_tui.engine.read.owners",
    "OwnerSummary": "awa_tui.engine.read.owners",
    "Certificate": "awa_tui.engine.read.owners",
    "OwnedSchedules": "awa_tui.engine.read.owners",
    "Agreement": "awa_tui.engine.read.owners",
    "OwnerPlan": "awa_tui.engine.read.owners",
    "owner_summary": "awa_tui.engine.read.owners",
    "owner_plan": "awa_tui.engine.read.owners",
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
