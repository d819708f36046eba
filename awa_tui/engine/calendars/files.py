"""A calendar's dates from a file (S56): an iCalendar `.ics` or a plain list.

- iCalendar: each VEVENT's DTSTART and DTEND. An all-day event (`DTSTART;VALUE=DATE:
  20261225`) covers DTSTART up to, not including, DTEND (RFC 5545; no DTEND: one day); a
  timed event covers the days its date part names. Folded lines are unfolded first.
- A plain list: one ISO date (`2026-12-25`) or inclusive range (`2026-12-20..2027-01-03`)
  per line; blank lines and `#` comments are ignored.

Standard library only. Every refusal is one line naming the line it is about.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from awa_tui.engine.errors import ValidationError
from awa_tui.engine.errors import short_repr as _short
from awa_tui.engine.schedules.exclusions import MAX_CALENDAR_RANGES, DateRange, check_range

_ICS_DATE = re.compile(r"(\d{4})(\d{2})(\d{2})(?:T\d{6}Z?)?")


def parse_dates(text: str, source: str = "file") -> list[DateRange]:
    """The ranges `text` names, sorted and without duplicates; iCalendar when it begins
    with BEGIN:VCALENDAR, else a plain list."""
    if text.lstrip("\ufeff \t\r\n").upper().startswith("BEGIN:VCALENDAR"):
        ranges = _parse_ics(text, source)
    else:
        ranges = _parse_list(text, source)
    out = sorted(set(ranges))
    if len(out) > MAX_CALENDAR_RANGES:
        raise ValidationError(f"{source}: at most {MAX_CALENDAR_RANGES} dates and ranges, got {len(out)}")
    return out


def _day(text: str, where: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise ValidationError(f"{where}: not an ISO date (YYYY-MM-DD): {_short(text.strip())}") from None


def _parse_list(text: str, source: str) -> list[DateRange]:
    out: list[DateRange] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{source} line {number}"
        if ".." in line:
            first, _, last = line.partition("..")
            out.append(check_range(_day(first, where), _day(last, where), where))
        else:
            day = _day(line, where)
            out.append(check_range(day, day, where))
    return out


def _unfold(text: str) -> list[tuple[int, str]]:
    """Content lines with their first physical line number (RFC 5545 folding: a line
    beginning with a space or tab continues the previous one)."""
    lines: list[tuple[int, str]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        if raw[:1] in (" ", "\t") and lines:
            lines[-1] = (lines[-1][0], lines[-1][1] + raw[1:])
        else:
            lines.append((number, raw))
    return lines


def _ics_value(line: str, number: int, source: str) -> tuple[date, bool]:
    """(the date a DTSTART/DTEND line names, whether it is a whole day)."""
    _, sep, value = line.partition(":")
    where = f"{source} line {number}"
    if not sep:
        raise ValidationError(f"{where}: expected NAME:VALUE, got {_short(line)}")
    match = _ICS_DATE.fullmatch(value.strip())
    if match is None:
        raise ValidationError(f"{where}: not an iCalendar date or date-time: {_short(value.strip())}")
    try:
        day = date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        raise ValidationError(f"{where}: not a calendar date: {_short(value.strip())}") from None
    return day, "T" not in value


def _parse_ics(text: str, source: str) -> list[DateRange]:
    out: list[DateRange] = []
    in_event = False
    start: tuple[date, bool, int] | None = None
    end: tuple[date, bool, int] | None = None
    began = 0
    for number, line in _unfold(text):
        key = line.split(":", 1)[0].split(";", 1)[0].strip().upper()
        if key == "BEGIN" and line.strip().upper() == "BEGIN:VEVENT":
            if in_event:
                raise ValidationError(f"{source} line {number}: BEGIN:VEVENT inside another event")
            in_event, start, end, began = True, None, None, number
        elif key == "END" and line.strip().upper() == "END:VEVENT":
            if not in_event:
                raise ValidationError(f"{source} line {number}: END:VEVENT without BEGIN:VEVENT")
            if start is None:
                raise ValidationError(f"{source} line {began}: event without DTSTART")
            out.append(_event_range(start, end, source))
            in_event = False
        elif in_event and key == "DTSTART":
            start = (*_ics_value(line, number, source), number)
        elif in_event and key == "DTEND":
            end = (*_ics_value(line, number, source), number)
    if in_event:
        raise ValidationError(f"{source} line {began}: BEGIN:VEVENT without END:VEVENT")
    return out


def _event_range(start: tuple[date, bool, int], end: tuple[date, bool, int] | None, source: str) -> DateRange:
    first, whole_day, line = start
    where = f"{source} line {line}"
    if end is None:
        return check_range(first, first, where)
    last, end_whole_day, end_line = end
    if end_whole_day and whole_day:
        if last <= first:
            raise ValidationError(f"{source} line {end_line}: DTEND {last.isoformat()} is not after "
                                  f"DTSTART {first.isoformat()}")
        last -= timedelta(days=1)  # an all-day DTEND is exclusive
    elif last < first:
        raise ValidationError(f"{source} line {end_line}: DTEND {last.isoformat()} is before "
                              f"DTSTART {first.isoformat()}")
    return check_range(first, last, where)
