"""Named calendars as `calendar list` and `calendar show` hand them out (S56)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime


@dataclass(frozen=True)
class CalendarSummary:
    """One calendar in `calendar list`: how much it holds and how many schedules name it."""

    name: str
    ranges: int  # dates and ranges stored
    days: int  # days they cover
    first: date | None
    last: date | None
    updated_at: datetime
    used_by: int
    fault: str | None = None  # a hand-written value the engine cannot read


@dataclass(frozen=True)
class CalendarInfo:
    """One calendar in full: its inclusive date ranges and the schedules naming it."""

    name: str
    ranges: list[tuple[date, date]]
    days: int
    created_at: datetime
    updated_at: datetime
    used_by: list[str]
    fault: str | None = None
