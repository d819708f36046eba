"""What operator actions return (pause, trigger, queue and owner actions); named from
awa_tui/engine/read/models.py too."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


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
    cron_written: str | None = None  # S48 (see _ScheduleColumns)
    jitter_ms: int = 0
    overridden: dict[str, Any] | None = None
    # S56: dates ([start, end] ISO days in the zone) and calendars it never fires on.
    exclude_dates: list[list[str]] | None = None
    exclude_calendars: list[str] | None = None
    # S65: the pause's end and reason, when set.
    paused_until: datetime | None = None
    pause_reason: str | None = None
    catchup_window: int | None = None  # S66: seconds


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
