"""Read models of the console's schedules panel and detail view (a page of schedules with
its counts, one schedule in full); named from awa_tui/engine/read/models.py too."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from awa_tui.engine.read.models import ScheduleRow

if TYPE_CHECKING:
    from awa_tui.engine.ledger.models import AuditEntry
    from awa_tui.engine.read.models import Fire, NextFire, ScheduleInfo
    from awa_tui.filters import Filter


@dataclass(frozen=True)
class PageQuery:
    """What the schedules panel asks for, as `ConsoleBackend.schedule_page` takes it: one
    value carried from the client to the SQL, so its fields are stated once below the API."""

    filter_text: str | None
    sort: str
    descending: bool
    limit: int
    now: datetime | None
    where: Filter | None
    counts: bool
    from_end: bool = False  # the last `limit` rows of the order (the console's G), in that order


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
    # The ledger's columns (S39), read with the page (views.SCHEDULE_PAGE_SQL):
    last_result: str = "none"  # its latest job (manual too): ok, failed, running, waiting, cancelled, none
    last_error: str | None = None  # that job's latest error, when it failed
    fails_24h: int = 0  # its jobs created in the last 24 h whose latest attempt failed
    # Its last 20 due instants, oldest first, each its job's state when it fired, else its
    # verdict (ledger/models.instant_outcome, ledger/strips.py); none when BROKEN.
    outcomes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Attention:
    """One schedule's recorded health (S42): the worst one heads the console's ATTENTION line."""

    name: str
    health: str
    since: datetime | None
    reason: str | None


@dataclass(frozen=True)
class SchedulePage:
    """One filtered, sorted page of schedules, with counts, at `now`. The counts are None
    when the page was asked for without them (the console's first page: at 1M rows they are
    a scan of the table, most of the fetch)."""

    now: datetime
    rows: list[SchedulePageRow]
    total: int | None
    paused: int | None
    retired: int | None
    matched: int | None
    # S42: unhealthy schedules by health (all of them, not just the page), and the worst.
    unhealthy: dict[str, int] = field(default_factory=dict)
    attention: Attention | None = None
    # Active schedules whose due fire is OVERDUE (views.OVERDUE_AFTER_S past its instant, by
    # database time): what a stalled fleet leaves behind, whoever judges health.
    overdue: int | None = None
    from_end: bool = False  # the last rows of the order (the end of the list), not the first


@dataclass(frozen=True)
class ScheduleDetail:
    """Everything the console's detail view shows about one schedule."""

    now: datetime
    schedule: ScheduleInfo
    next: list[NextFire]
    recent: list[Fire]
    audit: list[AuditEntry]
    health: Attention | None = None  # S42: as the leader last recorded it
