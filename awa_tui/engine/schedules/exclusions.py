"""Dates a schedule does not fire on (S56): its own date rules and named calendars.

A schedule stores its rules canonically (`exclude_dates`: sorted `[start, end]` ISO date
pairs, a single date being a one-day range; `exclude_calendars`: sorted calendar names),
both NULL when empty, so sync compares them as it compares any definition column. Dates
are days in the schedule's own zone: an instant is excluded when its local date is.

Pure Python, no database: registration, the evaluator, previews and the ledger all judge
an instant here, through `Exclusions.rule_for`.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, tzinfo
from typing import Any

from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.core.errors import short_repr as _short

# A sane range: a date outside it is a typo (20266-12-25, 0026-12-25), never a holiday.
MIN_DATE = date(1970, 1, 1)
MAX_DATE = date(2199, 12, 31)
MAX_RULES = 1000  # date rules on one schedule (a calendar is the place for more)
MAX_CALENDARS = 20  # calendars one schedule names
MAX_CALENDAR_RANGES = 10000  # ranges in one calendar
CALENDAR_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

DateRange = tuple[date, date]


def check_day(value: object, what: str = "exclude") -> date:
    """A plain date (not a datetime) within the sane range."""
    if isinstance(value, datetime) or not isinstance(value, date):
        raise ValidationError(f"{what}: expected a date or a (start, end) pair of dates, got {_short(value)}")
    if not MIN_DATE <= value <= MAX_DATE:
        raise ValidationError(
            f"{what}: {value.isoformat()} is outside {MIN_DATE.isoformat()}..{MAX_DATE.isoformat()}")
    return value


def check_range(start: object, end: object, what: str = "exclude") -> DateRange:
    first, last = check_day(start, what), check_day(end, what)
    if last < first:
        raise ValidationError(f"{what}: range {first.isoformat()}..{last.isoformat()} ends before it starts")
    return first, last


def exclude_dates_of(exclude: object, what: str = "exclude",
                     limit: int | None = MAX_RULES) -> tuple[tuple[str, str], ...] | None:
    """`periodic(exclude=...)` (or a calendar's dates): dates and inclusive (start, end)
    pairs, validated, as the canonical stored form (None when empty)."""
    if exclude is None:
        return None
    if isinstance(exclude, (str, bytes, date)) or not isinstance(exclude, Iterable):
        raise ValidationError(f"{what}: expected a list of dates and (start, end) pairs, got {_short(exclude)}")
    ranges: set[DateRange] = set()
    cap = MAX_CALENDAR_RANGES if limit is None else limit
    for item in exclude:
        if isinstance(item, (tuple, list)):
            if len(item) != 2:
                raise ValidationError(f"{what}: a range is a (start, end) pair of dates, got {_short(item)}")
            ranges.add(check_range(item[0], item[1], what))
        else:
            day = check_day(item, what)
            ranges.add((day, day))
        if len(ranges) > cap:
            hint = " (use a calendar for more)" if limit is not None else ""
            raise ValidationError(f"{what}: at most {cap} dates and ranges{hint}")
    return tuple((a.isoformat(), b.isoformat()) for a, b in sorted(ranges)) or None


def calendars_of(calendar: object) -> tuple[str, ...] | None:
    """`periodic(calendar=...)`: one name or several, validated, sorted (None when none)."""
    if calendar is None:
        return None
    names = [calendar] if isinstance(calendar, str) else calendar
    if not isinstance(names, (list, tuple, set, frozenset)):
        raise ValidationError(f"calendar: expected a calendar name or a list of names, got {_short(calendar)}")
    out = tuple(sorted({check_calendar_name(n) for n in names}))
    if len(out) > MAX_CALENDARS:
        raise ValidationError(f"calendar: at most {MAX_CALENDARS} calendars, got {len(out)}")
    return out or None


def check_calendar_name(name: object, what: str = "calendar") -> str:
    if not isinstance(name, str) or not CALENDAR_NAME.fullmatch(name):
        raise ValidationError(
            f"{what}: a calendar name is 1..64 letters, digits, '.', '_' or '-' (starting with a letter "
            f"or digit), got {_short(name)}")
    return name


def parse_stored_dates(value: object) -> tuple[tuple[date, date, str], ...]:
    """The stored `exclude_dates` (JSON as read back, or the canonical tuples) as ranges
    with the rule's text; raises a one-line ValidationError for a hand-written bad value."""
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise ValidationError(f"exclude: expected a list of [start, end] date pairs, got {_short(value)}")
    out = []
    for item in value:
        if not isinstance(item, (list, tuple)) or len(item) != 2 or not all(isinstance(x, str) for x in item):
            raise ValidationError(f"exclude: expected a [start, end] pair of ISO dates, got {_short(item)}")
        try:
            first, last = date.fromisoformat(item[0]), date.fromisoformat(item[1])
        except ValueError:
            raise ValidationError(f"exclude: not an ISO date pair: {_short(item)}") from None
        first, last = check_range(first, last)
        out.append((first, last, first.isoformat() if first == last else f"{first.isoformat()}..{last.isoformat()}"))
    return tuple(out)


def parse_stored_calendars(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise ValidationError(f"calendar: expected a list of calendar names, got {_short(value)}")
    return tuple(check_calendar_name(n) for n in value)


class DaySet:
    """A calendar's dates as disjoint, merged ranges: membership by bisection."""

    __slots__ = ("ends", "starts")

    def __init__(self, ranges: Iterable[DateRange]) -> None:
        merged: list[list[int]] = []
        for first, last in sorted((a.toordinal(), b.toordinal()) for a, b in ranges):
            if merged and first <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], last)
            else:
                merged.append([first, last])
        self.starts = [a for a, _ in merged]
        self.ends = [b for _, b in merged]

    def __contains__(self, day: date) -> bool:
        n = day.toordinal()
        i = bisect_right(self.starts, n) - 1
        return i >= 0 and n <= self.ends[i]


@dataclass(frozen=True)
class Exclusions:
    """What one schedule excludes, ready to judge instants (dates first, then calendars)."""

    dates: tuple[tuple[date, date, str], ...]
    calendars: tuple[tuple[str, DaySet], ...]

    def rule_for(self, instant: datetime, zone: tzinfo) -> str | None:
        """The rule excluding `instant` (its date in `zone`): the date or range as written,
        or 'calendar NAME'; None when it fires."""
        day = instant.astimezone(zone).date()
        for first, last, text in self.dates:
            if first <= day <= last:
                return text
        for name, days in self.calendars:
            if day in days:
                return f"calendar {name}"
        return None


def has_exclusions(row: Mapping[str, Any]) -> bool:
    return row.get("exclude_dates") is not None or row.get("exclude_calendars") is not None


def exclusions_of(row: Mapping[str, Any], calendars: Mapping[str, DaySet],
                  broken: Mapping[str, str] | None = None) -> Exclusions | None:
    """A stored row's exclusions against the calendars known now; None when it has none.
    Raises a one-line ValidationError for a bad value or an unknown calendar (S15)."""
    if not has_exclusions(row):
        return None
    dates = parse_stored_dates(row.get("exclude_dates"))
    names = parse_stored_calendars(row.get("exclude_calendars"))
    for n in names:
        if broken and n in broken:
            raise ValidationError(broken[n])
    missing = [n for n in names if n not in calendars]
    if missing:
        raise ValidationError(f"calendar: unknown calendar {', '.join(repr(n) for n in missing)}")
    return Exclusions(dates, tuple((n, calendars[n]) for n in names))


def describe(dates: Sequence[Sequence[str]] | None, calendars: Sequence[str] | None) -> str:
    """The rules in operator words, e.g. '2026-12-25, 2026-12-20..2027-01-03, calendar holidays'."""
    parts = [a if a == b else f"{a}..{b}" for a, b in (dates or ())]
    parts += [f"calendar {n}" for n in (calendars or ())]
    return ", ".join(parts)
