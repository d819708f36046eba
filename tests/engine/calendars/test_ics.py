"""S56: calendar files. iCalendar files written by the `icalendar` package itself and by
the `holidays` package are read back to exactly the days they mean (repeating events,
exceptions, durations, zones, cancellations); bad files get one line naming the line and
quoting no content; only regular files are read, and no more than the cap.

Expected days are written by hand, or are the `holidays` package's own dates.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import holidays
import pytest
from holidays.ical import ICalExporter
from icalendar import Calendar, Event

from awa_tui.engine.calendars.files import MAX_FILE_BYTES, parse_dates, read_text
from awa_tui.engine.core.errors import ValidationError

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def _calendar(*events: Event, **properties: str) -> str:
    cal = Calendar()
    cal.add("prodid", "-//awa-tui tests//EN")
    cal.add("version", "2.0")
    for name, value in properties.items():
        cal.add(name.replace("_", "-"), value)
    for number, event in enumerate(events):
        if "UID" not in event:
            event.add("uid", f"event-{number}@test")
        cal.add_component(event)
    return cal.to_ical().decode()


def _event(start: date | datetime, end: date | datetime | None = None, **properties: object) -> Event:
    event = Event()
    event.add("summary", "holiday")
    event.add("dtstart", start)
    if end is not None:
        event.add("dtend", end)
    for name, value in properties.items():
        event.add(name, value)
    return event


def _days(ranges: list[tuple[date, date]]) -> list[date]:
    return [first + timedelta(days=d) for first, last in ranges for d in range((last - first).days + 1)]


@pytest.mark.parametrize("country", ["US", "DE"])
def test_public_holidays_exported_by_the_holidays_package_round_trip_exactly(country: str) -> None:
    known = holidays.country_holidays(country, years=[2026, 2027, 2028])
    text = ICalExporter(known).generate()  # CRLF, folded lines, DURATION:P1D all-day events
    assert "\r\n" in text and "DURATION:P1D" in text
    ranges = parse_dates(text, "holidays.ics")
    assert _days(ranges) == sorted(known)
    assert all(first == last for first, last in ranges)


def test_a_yearly_rule_over_three_years_with_one_exception() -> None:
    # New Year's Day 2026, 2027, 2028 by COUNT=3, 2027 excluded by EXDATE; and the 4th of
    # July until 2028 by UNTIL.
    text = _calendar(
        _event(date(2026, 1, 1), date(2026, 1, 2), rrule={"freq": "yearly", "count": 3}, exdate=date(2027, 1, 1)),
        _event(date(2026, 7, 4), rrule={"freq": "yearly", "until": date(2028, 7, 4)}),
    )
    assert _days(parse_dates(text, "f.ics")) == [
        date(2026, 1, 1), date(2026, 7, 4), date(2027, 7, 4), date(2028, 1, 1), date(2028, 7, 4)]


def test_rdate_duration_and_a_changed_occurrence() -> None:
    # A two-day all-day event by DURATION, repeated once more by RDATE; a weekly timed event
    # (Mondays 10:00 Berlin, 3 times) whose second occurrence was moved to Wednesday.
    moved = _event(datetime(2026, 3, 11, 10, tzinfo=BERLIN), datetime(2026, 3, 11, 11, tzinfo=BERLIN))
    moved.add("recurrence-id", datetime(2026, 3, 9, 10, tzinfo=BERLIN))
    weekly = _event(datetime(2026, 3, 2, 10, tzinfo=BERLIN), datetime(2026, 3, 2, 11, tzinfo=BERLIN),
                    rrule={"freq": "weekly", "count": 3})
    cal = Calendar.from_ical(_calendar(
        _event(date(2026, 5, 1), duration=timedelta(days=2), rdate=date(2026, 6, 1)), weekly))
    moved.add("uid", "event-1@test")  # the same series as the weekly event
    cal.add_component(moved)
    ranges = parse_dates(cal.to_ical().decode(), "f.ics")
    assert ranges == [(date(2026, 3, 2), date(2026, 3, 2)), (date(2026, 3, 11), date(2026, 3, 11)),
                      (date(2026, 3, 16), date(2026, 3, 16)), (date(2026, 5, 1), date(2026, 5, 2)),
                      (date(2026, 6, 1), date(2026, 6, 2))]


def test_a_timed_event_ending_at_midnight_does_not_take_the_next_day() -> None:
    text = _calendar(_event(datetime(2026, 12, 24, 18), datetime(2026, 12, 25, 0)),  # floating: as written
                     _event(datetime(2026, 12, 31, 22, tzinfo=NEW_YORK), datetime(2027, 1, 1, 2, tzinfo=NEW_YORK)))
    assert parse_dates(text, "f.ics") == [(date(2026, 12, 24), date(2026, 12, 24)),
                                          (date(2026, 12, 31), date(2027, 1, 1))]


def test_utc_times_are_dates_in_the_zone_the_calendar_states() -> None:
    # Christmas Day in Berlin exported in UTC: 24 Dec 23:00Z .. 25 Dec 23:00Z.
    christmas = _event(datetime(2026, 12, 24, 23, tzinfo=UTC), datetime(2026, 12, 25, 23, tzinfo=UTC))
    assert parse_dates(_calendar(christmas), "f.ics") == [(date(2026, 12, 24), date(2026, 12, 25))]  # UTC days
    assert parse_dates(_calendar(christmas), "f.ics", zone=BERLIN) == [(date(2026, 12, 25), date(2026, 12, 25))]
    # The calendar may say its zone itself (X-WR-TIMEZONE, as Google exports).
    stated = _calendar(christmas, x_wr_timezone="Europe/Berlin")
    assert parse_dates(stated, "f.ics") == [(date(2026, 12, 25), date(2026, 12, 25))]
    # A TZID event keeps its own wall dates unless --zone asks for another zone.
    tzid = _calendar(_event(datetime(2026, 12, 25, 20, tzinfo=NEW_YORK), datetime(2026, 12, 25, 21, tzinfo=NEW_YORK)))
    assert parse_dates(tzid, "f.ics") == [(date(2026, 12, 25), date(2026, 12, 25))]
    assert parse_dates(tzid, "f.ics", zone=BERLIN) == [(date(2026, 12, 26), date(2026, 12, 26))]


def test_cancelled_events_and_occurrences_are_skipped() -> None:
    cancelled = _event(date(2026, 8, 3), status="CANCELLED")
    series = _event(date(2026, 9, 1), rrule={"freq": "daily", "count": 3})
    one_off = _event(date(2026, 9, 2))
    one_off.add("recurrence-id", date(2026, 9, 2))
    one_off.add("status", "CANCELLED")
    one_off.add("uid", "event-1@test")
    cal = Calendar.from_ical(_calendar(cancelled, series))
    cal.add_component(one_off)
    assert parse_dates(cal.to_ical().decode(), "f.ics") == [(date(2026, 9, 1), date(2026, 9, 1)),
                                                            (date(2026, 9, 3), date(2026, 9, 3))]


def test_a_rule_without_end_needs_until() -> None:
    text = _calendar(_event(date(2026, 1, 1), rrule={"freq": "yearly"}))
    with pytest.raises(ValidationError) as refused:
        parse_dates(text, "f.ics")
    assert str(refused.value) == ("f.ics line 8: the event repeats without end (no COUNT or UNTIL): give --until "
                                  "DATE to say up to which day it is expanded")
    assert _days(parse_dates(text, "f.ics", until=date(2028, 12, 31))) == [
        date(2026, 1, 1), date(2027, 1, 1), date(2028, 1, 1)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:2026XX\nEND:VEVENT\nEND:VCALENDAR\n",
         "f.ics line 3: DTSTART is not a valid iCalendar value"),  # not date-shaped: not quoted
        ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:20261225\nDTEND;VALUE=DATE:20261225\nEND:VEVENT\n"
         "END:VCALENDAR\n", "f.ics line 4: DTEND 2026-12-25 is not after DTSTART 2026-12-25"),
        ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nSUMMARY:x\nEND:VEVENT\nEND:VCALENDAR\n",
         "f.ics line 2: event without DTSTART"),
        ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:20261225\nEND:VCALENDAR\n",
         "f.ics line 2: BEGIN:VEVENT without END:VEVENT"),
        ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20261225T000000Z\nRRULE:FREQ=HOURLY;COUNT=48\nEND:VEVENT\n"
         "END:VCALENDAR\n", "f.ics line 4: the event repeats hourly; a calendar names days: repeat it daily at most"),
        ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:20261225\nRRULE:FREQ=DAILY;COUNT=100000\nEND:VEVENT\n"
         "END:VCALENDAR\n", "f.ics line 4: COUNT above 20000"),
        ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:19700101\nRRULE:FREQ=DAILY;UNTIL=21991231\nEND:VEVENT\n"
         "END:VCALENDAR\n", "f.ics: more than 20000 event occurrences up to 2199-12-31"),
        ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:20261225\nDURATION:-P1D\nEND:VEVENT\nEND:VCALENDAR\n",
         "f.ics line 4: DURATION is negative"),
        ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:00010101\nEND:VEVENT\nEND:VCALENDAR\n",
         "f.ics line 3: 0001-01-01 is outside 1970-01-01..2199-12-31"),
        # A secret on a line that is no content line is never echoed.
        ("BEGIN:VCALENDAR\nhunter2 secret words\nEND:VCALENDAR\n",
         "f.ics line 2: not an iCalendar content line (NAME:VALUE)"),
        ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:21991231\nDTEND;VALUE=DATE:22000105\nEND:VEVENT\n"
         "END:VCALENDAR\n", "f.ics line 3: 2200-01-04 is outside 1970-01-01..2199-12-31"),
    ],
)
def test_a_bad_ics_file_is_one_line_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(ValidationError) as refused:
        parse_dates(text, "f.ics")
    assert str(refused.value) == message


def test_a_plain_list_never_quotes_a_line_that_is_no_date() -> None:
    with pytest.raises(ValidationError) as refused:
        parse_dates("root:x:0:0:root:/root:/bin/bash\n", "passwd")
    assert str(refused.value) == "passwd line 1: not an ISO date (YYYY-MM-DD)"
    with pytest.raises(ValidationError) as refused:
        parse_dates("2026-12-25\n2026-13-01\n", "list.txt")
    assert str(refused.value) == "list.txt line 2: not an ISO date (YYYY-MM-DD): '2026-13-01'"


def test_only_regular_files_are_read_and_no_more_than_the_cap(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as refused:
        read_text(Path("/dev/zero"), "--dates /dev/zero")
    assert str(refused.value) == "--dates /dev/zero: not a regular file (a device)"
    with pytest.raises(ValidationError) as refused:
        read_text(tmp_path, "--dates d")
    assert str(refused.value) == "--dates d: not a regular file (a directory)"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: a blocking open would wait forever
    started = time.monotonic()
    with pytest.raises(ValidationError) as refused:
        read_text(fifo, "--dates fifo")
    assert str(refused.value) == "--dates fifo: not a regular file (a FIFO)"
    assert time.monotonic() - started < 5
    big = tmp_path / "big.txt"
    big.write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    with pytest.raises(ValidationError) as refused:
        read_text(big, "--dates big.txt")
    assert str(refused.value) == "--dates big.txt: larger than 4 MB"
    exact = tmp_path / "exact.txt"
    exact.write_bytes(b"#" * MAX_FILE_BYTES)  # control: the cap itself is accepted
    assert len(read_text(exact, "--dates exact.txt")) == MAX_FILE_BYTES


def test_many_folded_lines_are_read_in_linear_time() -> None:
    # 3.9 MB of continuation lines in one DESCRIPTION (the old reader took 16 s): well under
    # the cap, and read in a few seconds at most on a shared 2-core machine.
    folds = "\r\n ".join(["x" * 70] * 54_000)
    text = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:a\r\nDTSTART;VALUE=DATE:20261225\r\n"
            f"DESCRIPTION:{folds}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
    assert 3_800_000 < len(text) < MAX_FILE_BYTES
    started = time.monotonic()
    assert parse_dates(text, "f.ics") == [(date(2026, 12, 25), date(2026, 12, 25))]
    assert time.monotonic() - started < 5
