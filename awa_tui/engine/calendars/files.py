"""A calendar's dates from a file (S56): an iCalendar `.ics` or a plain list.

- iCalendar, read by the `icalendar` package, its repeating events expanded by
  `recurring-ical-events`: RRULE, RDATE, EXDATE, changed occurrences (RECURRENCE-ID) and
  DURATION are honoured; CANCELLED events and occurrences are skipped. An all-day event
  covers DTSTART up to, not including, DTEND (no DTEND: one day); a timed event covers
  the days from its start to just before its end (an event ending at 00:00 does not take
  the next day), in `zone` when given, else in its own zone (its TZID, the calendar's
  X-WR-TIMEZONE, else UTC for a `Z` time, else the wall time as written). A rule with
  neither COUNT nor UNTIL names days without end: it is expanded up to `until`, and
  refused without one.
- A plain list: one ISO date (`2026-12-25`) or inclusive range (`2026-12-20..2027-01-03`)
  per line; blank lines and `#` comments are ignored.

Every refusal is one line naming the line it is about, and quotes no file content but
a date-shaped offending token. `read_text` reads regular files only, at most the cap.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.core.errors import short_repr as _short
from awa_tui.engine.schedules.exclusions import MAX_CALENDAR_RANGES, DateRange, check_day, check_range

MAX_FILE_BYTES = 4 * 1024 * 1024  # a year of every day for decades is far less
# Occurrences one file may expand to: twice the ranges a calendar may hold (days repeat
# across events); expanding them takes a few seconds at most.
MAX_OCCURRENCES = 2 * MAX_CALENDAR_RANGES
# A calendar names days: a rule repeating within a day only repeats days, slowly.
SUB_DAILY = frozenset({"SECONDLY", "MINUTELY", "HOURLY"})
FIRST_DAY, END_DAY = date(1970, 1, 1), date(2200, 1, 1)  # the days an exclusion may name
_TOKEN = re.compile(r"[0-9TZ:.\-]{1,24}")  # a date-shaped token: quoted in a refusal
_CONTENT_LINE = re.compile(r"[^;:\s]+[;:]")  # NAME;PARAM...:VALUE or NAME:VALUE
ONE_MICROSECOND = timedelta(microseconds=1)


def _token(text: str) -> str:
    """': 'TOKEN'' when `text` is date-shaped, else '': other file content is never echoed."""
    text = text.strip()
    return f": {_short(text)}" if _TOKEN.fullmatch(text) else ""


def read_text(path: Path, label: str) -> str:
    """The UTF-8 text of a regular file of at most MAX_FILE_BYTES; reads at most one byte
    more. A FIFO, a device or a directory is refused without reading (opened non-blocking,
    so a FIFO without a writer cannot hang)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise ValidationError(f"{label}: cannot read the file: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file")
            raise ValidationError(f"{label}: not a regular file ({kind})")
        chunks: list[bytes] = []
        left = MAX_FILE_BYTES + 1
        while left > 0:
            try:
                chunk = os.read(fd, min(left, 1 << 20))
            except OSError as exc:
                raise ValidationError(f"{label}: cannot read the file: {exc.strerror or exc}") from None
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > MAX_FILE_BYTES:
        raise ValidationError(f"{label}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{label}: not UTF-8 text (byte {exc.start})") from None


def parse_dates(text: str, source: str = "file", *, zone: tzinfo | None = None,
                until: date | None = None) -> list[DateRange]:
    """The ranges `text` names, sorted and without duplicates; iCalendar when it begins
    with BEGIN:VCALENDAR, else a plain list."""
    if until is not None:
        check_day(until, "--until")
    if text.lstrip("\ufeff \t\r\n").upper().startswith("BEGIN:VCALENDAR"):
        ranges = _parse_ics(text.lstrip("\ufeff"), source, zone, until)
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
        raise ValidationError(f"{where}: not an ISO date (YYYY-MM-DD){_token(text)}") from None


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


# -- iCalendar -------------------------------------------------------------------------------


@dataclass
class _EventLines:
    """Where one VEVENT is in the file: its BEGIN line and each property's first line."""

    begin: int
    properties: dict[str, int] = field(default_factory=dict)


def _locate(text: str, source: str) -> list[_EventLines]:
    """One linear pass over the physical lines: where each VEVENT and its properties are
    (for the refusals), and the first line that is no content line at all. icalendar
    parses; this only finds line numbers, and nests nothing."""
    events: list[_EventLines] = []
    depth = 0  # components open inside the current VEVENT (VALARM ...)
    current: _EventLines | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if not line or line[0] in " \t":
            continue  # a continuation line (folding), or blank
        if not _CONTENT_LINE.match(line):
            raise ValidationError(f"{source} line {number}: not an iCalendar content line (NAME:VALUE)")
        upper = line.rstrip().upper()
        if upper == "BEGIN:VEVENT" and current is None:
            current = _EventLines(number)
            events.append(current)
        elif current is not None and upper.startswith("BEGIN:"):
            depth += 1
        elif current is not None and upper.startswith("END:"):
            if depth:
                depth -= 1
            elif upper == "END:VEVENT":
                current = None
        elif current is not None and not depth:
            name = re.split(r"[;:]", line, maxsplit=1)[0].upper()
            current.properties.setdefault(name, number)
    if current is not None:
        raise ValidationError(f"{source} line {current.begin}: BEGIN:VEVENT without END:VEVENT")
    return events


def _calendar(text: str, source: str) -> Any:
    from icalendar import Calendar

    try:
        return Calendar.from_ical(text)
    except ValueError:
        # icalendar's message quotes the content: say what is wrong in our words.
        raise ValidationError(
            f"{source}: not a valid iCalendar file (one VCALENDAR, each BEGIN with its END)") from None


def _check_event(event: Any, lines: _EventLines, source: str, until: date | None) -> None:
    """Refuse, naming its line, what the expansion could not honour."""
    from icalendar.prop import vDDDTypes

    def where(name: str) -> str:
        return f"{source} line {lines.properties.get(name, lines.begin)}"

    for name, _message in getattr(event, "errors", ()):
        raw = event.get(name)
        value = str(raw) if isinstance(raw, str) else ""  # icalendar keeps an unreadable value as text
        raise ValidationError(f"{where(name)}: {name} is not a valid iCalendar value{_token(value)}")
    start = event.get("DTSTART")
    if start is None:
        raise ValidationError(f"{source} line {lines.begin}: event without DTSTART")
    if not isinstance(start, vDDDTypes) or not isinstance(start.dt, date):
        raise ValidationError(f"{where('DTSTART')}: DTSTART is not a date or date-time")
    end = event.get("DTEND")
    if end is not None:
        if not isinstance(end, vDDDTypes) or not isinstance(end.dt, date):
            raise ValidationError(f"{where('DTEND')}: DTEND is not a date or date-time")
        if isinstance(start.dt, datetime) != isinstance(end.dt, datetime):
            raise ValidationError(f"{where('DTEND')}: DTEND is a {_kind(end.dt)}, DTSTART a {_kind(start.dt)}")
        first, last = _comparable(start.dt, end.dt)
        whole_day = not isinstance(start.dt, datetime)
        if (last <= first) if whole_day else (last < first):
            raise ValidationError(f"{where('DTEND')}: DTEND {_iso(end.dt)} is "
                                  f"{'not after' if whole_day else 'before'} DTSTART {_iso(start.dt)}")
    check_day(start.dt.date() if isinstance(start.dt, datetime) else start.dt, where("DTSTART"))
    duration = event.get("DURATION")
    if duration is not None and isinstance(getattr(duration, "dt", None), timedelta) and duration.dt < timedelta(0):
        raise ValidationError(f"{where('DURATION')}: DURATION is negative")
    rules = event.get("RRULE")
    for rule in rules if isinstance(rules, list) else [rules] if rules is not None else []:
        frequency = str((rule.get("FREQ") or [""])[0]).upper()
        if frequency in SUB_DAILY:
            raise ValidationError(f"{where('RRULE')}: the event repeats {frequency.lower()}; a calendar names "
                                  "days: repeat it daily at most")
        if any(int(n) > MAX_OCCURRENCES for n in rule.get("COUNT", [])):
            raise ValidationError(f"{where('RRULE')}: COUNT above {MAX_OCCURRENCES}")
        if "COUNT" not in rule and "UNTIL" not in rule and until is None:
            raise ValidationError(f"{where('RRULE')}: the event repeats without end (no COUNT or UNTIL): "
                                  "give --until DATE to say up to which day it is expanded")


def _kind(value: date) -> str:
    return "date-time" if isinstance(value, datetime) else "date"


def _iso(value: date) -> str:
    return value.isoformat() if not isinstance(value, datetime) else value.strftime("%Y-%m-%dT%H:%M:%S")


def _comparable(start: date, end: date) -> tuple[date, date]:
    """Both as they can be compared: a floating time next to a zoned one by wall time."""
    if isinstance(start, datetime) and isinstance(end, datetime) and (start.tzinfo is None) != (end.tzinfo is None):
        return start.replace(tzinfo=None), end.replace(tzinfo=None)
    return start, end


def _days(start: date, end: date | None, zone: tzinfo | None) -> tuple[date, date]:
    """The first and last day an occurrence covers (DTEND exclusive)."""
    if not isinstance(start, datetime):
        last = end - timedelta(days=1) if end is not None and end > start else start
        return start, last
    if zone is not None and start.tzinfo is not None:
        start = start.astimezone(zone)
        end = end.astimezone(zone) if isinstance(end, datetime) and end.tzinfo is not None else end
    if isinstance(end, datetime):
        start, end = _comparable(start, end)
    last_instant = end - ONE_MICROSECOND if isinstance(end, datetime) and end > start else start
    first = start.date() if isinstance(start, datetime) else start
    last = last_instant.date() if isinstance(last_instant, datetime) else last_instant
    return first, last


def _parse_ics(text: str, source: str, zone: tzinfo | None, until: date | None) -> list[DateRange]:
    import recurring_ical_events  # type: ignore[import-untyped]  # ships no type information

    located = _locate(text, source)
    calendar = _calendar(text, source)
    events = list(calendar.walk("VEVENT"))
    if len(events) != len(located):  # e.g. a VEVENT icalendar did not place in the calendar
        raise ValidationError(f"{source}: {len(located)} events in the file, {len(events)} readable")
    for event, lines in zip(events, located, strict=True):
        _check_event(event, lines, source, until)
    by_uid = {str(e.get("UID")): lines for e, lines in zip(events, located, strict=True) if e.get("UID")}
    stop = min(END_DAY, until + timedelta(days=1)) if until is not None else END_DAY
    first_year = min((_start_day(e) for e in events), default=stop).year
    query = recurring_ical_events.of(calendar)
    out: list[DateRange] = []
    seen: set[tuple[str, str]] = set()
    try:
        # One year at a time (a query over the whole span expands it whole, and the
        # library's own `after` pages by the quarter hour), so the cap stops it early.
        for year in range(first_year, stop.year + 1):
            for occurrence in query.between(date(year, 1, 1), min(date(year + 1, 1, 1), stop)):
                start = occurrence.get("DTSTART").dt
                key = (str(occurrence.get("UID")), str(start))
                if key in seen or (start.date() if isinstance(start, datetime) else start) >= stop:
                    continue  # an occurrence spanning two years, or one past --until
                seen.add(key)
                if len(seen) > MAX_OCCURRENCES:
                    raise ValidationError(f"{source}: more than {MAX_OCCURRENCES} event occurrences up to "
                                          f"{(stop - timedelta(days=1)).isoformat()}")
                out.extend(_occurrence(occurrence, start, by_uid, located, zone, source))
    except ValidationError:
        raise
    except Exception as exc:  # the library's own refusal (a rule it cannot expand)
        raise ValidationError(f"{source}: a repeating event cannot be expanded ({type(exc).__name__})") from None
    return out


def _start_day(event: Any) -> date:
    start = event.get("DTSTART").dt
    return start.date() if isinstance(start, datetime) else start


def _occurrence(occurrence: Any, start: date, by_uid: dict[str, _EventLines], located: list[_EventLines],
                zone: tzinfo | None, source: str) -> list[DateRange]:
    """The days of one occurrence (none when it is cancelled)."""
    if str(occurrence.get("STATUS", "")).upper() == "CANCELLED":
        return []
    lines = by_uid.get(str(occurrence.get("UID")), located[0] if located else _EventLines(1))
    end_prop = occurrence.get("DTEND")
    first, last = _days(start, end_prop.dt if end_prop is not None else None, zone)
    return [check_range(first, last, f"{source} line {lines.properties.get('DTSTART', lines.begin)}")]
