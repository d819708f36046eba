"""S56 through the real executable: `calendar set|list|show|delete`, audited, with bad
files refused in one line and nothing written; `cron next` marks excluded instants."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path
from typing import Any

import psycopg
from cli_helpers import awa, awa_json, one_line_error

from awa_tui import Client

ICS = """BEGIN:VCALENDAR\r
VERSION:2.0\r
PRODID:-//example//holidays//EN\r
BEGIN:VEVENT\r
UID:1@example\r
DTSTART;VALUE=DATE:20261225\r
DTEND;VALUE=DATE:20261226\r
SUMMARY:Christmas\r
END:VEVENT\r
BEGIN:VEVENT\r
UID:2@example\r
DTSTART;VALUE=DATE:20261231\r
DTEND;VALUE=DATE:20270103\r
SUMMARY:New year\r
 (folded continuation)\r
END:VEVENT\r
BEGIN:VEVENT\r
UID:3@example\r
DTSTART:20270115T090000Z\r
DTEND:20270115T170000Z\r
SUMMARY:Offsite (timed)\r
END:VEVENT\r
END:VCALENDAR\r
"""


def _audit(conn: psycopg.Connection[Any]) -> list[tuple[str, str, str]]:
    rows = conn.execute("SELECT action, target, operator FROM awa.audit_log WHERE target LIKE 'calendar:%' "
                        "ORDER BY id").fetchall()
    return [(r["action"], r["target"], r["operator"]) for r in rows]


def _calendars(conn: psycopg.Connection[Any]) -> list[tuple[str, Any]]:
    return [(r["name"], r["dates"]) for r in conn.execute("SELECT name, dates FROM awa.calendars ORDER BY name")]


def test_set_from_ics_then_list_show_and_delete(dsn: str, conn: psycopg.Connection[Any], tmp_path: Path) -> None:
    ics = tmp_path / "holidays.ics"
    ics.write_text(ICS, encoding="utf-8", newline="")
    done = awa("calendar", "set", "company-holidays", "--dates", str(ics), "--dsn", dsn, "--operator", "ops@test")
    assert (done.returncode, done.stderr) == (0, "")
    # 25 Dec (DTEND exclusive), 31 Dec..2 Jan, and the timed event's own day.
    assert done.stdout == "calendar company-holidays: 3 dates and ranges, 5 days\n"
    assert _calendars(conn) == [("company-holidays", [["2026-12-25", "2026-12-25"], ["2026-12-31", "2027-01-02"],
                                                      ["2027-01-15", "2027-01-15"]])]
    listed = awa_json("calendar", "list", "--dsn", dsn)
    assert [{k: r[k] for k in ("name", "ranges", "days", "first", "last", "used_by")} for r in listed] == [
        {"name": "company-holidays", "ranges": 3, "days": 5, "first": "2026-12-25", "last": "2027-01-15",
         "used_by": 0}]
    shown = awa("calendar", "show", "company-holidays", "--dsn", dsn)
    assert shown.stdout.splitlines()[1:] == ["  2026-12-25", "  2026-12-31..2027-01-02", "  2027-01-15",
                                             "used by: no schedule"]
    as_json = awa_json("calendar", "show", "company-holidays", "--dsn", dsn)
    assert as_json["ranges"] == [["2026-12-25", "2026-12-25"], ["2026-12-31", "2027-01-02"],
                                 ["2027-01-15", "2027-01-15"]]
    plain = tmp_path / "freeze.txt"
    plain.write_text("# the year-end freeze\n2026-12-20..2027-01-03\n\n2027-02-01  # and one day\n")
    assert awa("calendar", "set", "company-holidays", "--dates", str(plain), "--dsn", dsn,
               "--operator", "ops@test").stdout == "calendar company-holidays: 2 dates and ranges, 16 days\n"
    gone = awa("calendar", "delete", "company-holidays", "--dsn", dsn, "--operator", "ops@test")
    assert (gone.returncode, gone.stdout) == (0, "deleted calendar company-holidays (2 dates and ranges)\n")
    assert _calendars(conn) == []
    assert _audit(conn) == [("calendar_create", "calendar:company-holidays", "ops@test"),
                            ("calendar_edit", "calendar:company-holidays", "ops@test"),
                            ("calendar_delete", "calendar:company-holidays", "ops@test")]


def test_bad_files_are_refused_in_one_line_naming_the_line_and_nothing_is_written(
        dsn: str, conn: psycopg.Connection[Any], tmp_path: Path) -> None:
    cases = {
        "list.txt": ("2026-12-25\n2026-13-01\n", "list.txt line 2: not an ISO date (YYYY-MM-DD): '2026-13-01'"),
        "reversed.txt": ("# x\n2026-12-31..2026-12-20\n", "reversed.txt line 2: range 2026-12-31..2026-12-20 ends "
                                                          "before it starts"),
        "far.txt": ("2026-12-25\n3026-12-25\n", "far.txt line 2: 3026-12-25 is outside 1970-01-01..2199-12-31"),
        "bad.ics": (ICS.replace("DTSTART;VALUE=DATE:20261231", "DTSTART;VALUE=DATE:2026-12-31"),
                    "bad.ics line 12: DTSTART is not a valid iCalendar value: '2026-12-31'"),
        "open.ics": ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:20261225\nEND:VCALENDAR\n",
                     "open.ics line 2: BEGIN:VEVENT without END:VEVENT"),
        "nostart.ics": ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nSUMMARY:x\nEND:VEVENT\nEND:VCALENDAR\n",
                        "nostart.ics line 2: event without DTSTART"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8", newline="")
        result = awa("calendar", "set", "h", "--dates", str(path), "--dsn", dsn, "--operator", "ops@test")
        assert one_line_error(result) == f"error: {tmp_path}/{message}", name
    missing = awa("calendar", "set", "h", "--dates", str(tmp_path / "nope.ics"), "--dsn", dsn, "--operator", "o@t")
    assert one_line_error(missing) == (
        f"error: --dates {tmp_path}/nope.ics: cannot read the file: No such file or directory")
    path = tmp_path / "ok.txt"
    path.write_text("2026-12-25\n")
    bad_name = awa("calendar", "set", "no/slash", "--dates", str(path), "--dsn", dsn, "--operator", "ops@test")
    assert one_line_error(bad_name).startswith("error: calendar: a calendar name is 1..64 letters")
    assert _calendars(conn) == [] and _audit(conn) == []


def test_set_reads_only_regular_files_and_takes_a_zone_and_an_end(
        dsn: str, conn: psycopg.Connection[Any], tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.ics"
    os.mkfifo(fifo)  # no writer: reading it would block forever
    for path, kind in ((fifo, "a FIFO"), (Path("/dev/zero"), "a device"), (tmp_path, "a directory")):
        refused = awa("calendar", "set", "h", "--dates", str(path), "--dsn", dsn, "--operator", "ops@test")
        assert one_line_error(refused) == f"error: --dates {path}: not a regular file ({kind})"
    assert _calendars(conn) == [] and _audit(conn) == []
    # Christmas in Berlin exported in UTC, and New Year's Day every year without end.
    ics = tmp_path / "christmas.ics"
    ics.write_text("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART:20261224T230000Z\r\n"
                   "DTEND:20261225T230000Z\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:y\r\n"
                   "DTSTART;VALUE=DATE:20270101\r\nRRULE:FREQ=YEARLY\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
                   encoding="utf-8", newline="")
    endless = awa("calendar", "set", "h", "--dates", str(ics), "--dsn", dsn, "--operator", "ops@test")
    assert one_line_error(endless) == (f"error: {ics} line 11: the event repeats without end (no COUNT or UNTIL): "
                                       "give --until DATE to say up to which day it is expanded")
    done = awa("calendar", "set", "h", "--dates", str(ics), "--zone", "Europe/Berlin", "--until", "2028-12-31",
               "--dsn", dsn, "--operator", "ops@test")
    assert (done.returncode, done.stdout) == (0, "calendar h: 3 dates and ranges, 3 days\n")
    assert _calendars(conn) == [("h", [["2026-12-25", "2026-12-25"], ["2027-01-01", "2027-01-01"],
                                       ["2028-01-01", "2028-01-01"]])]


def test_delete_is_refused_while_a_schedule_names_it(
        dsn: str, client: Client, conn: psycopg.Connection[Any]) -> None:
    client.actions.set_calendar("freeze", [(date(2026, 12, 20), date(2027, 1, 3))], operator="ops@test")
    client.periodic("billing.report", "0 9 * * *", "k", calendar="freeze")
    client.periodic("billing.close", "0 9 * * *", "k", calendar=["freeze"])
    client.sync()
    refused = awa("calendar", "delete", "freeze", "--dsn", dsn, "--operator", "ops@test")
    assert one_line_error(refused) == ("error: calendar 'freeze' is used by 2 schedule(s): billing.close, "
                                       "billing.report; remove it from their definitions first")
    assert [n for n, _ in _calendars(conn)] == ["freeze"]
    assert awa("calendar", "show", "freeze", "--dsn", dsn).stdout.splitlines()[-1] == (
        "used by: billing.close, billing.report")


def test_unknown_calendar_is_one_line(dsn: str) -> None:
    assert one_line_error(awa("calendar", "show", "nope", "--dsn", dsn)) == "error: unknown calendar 'nope'"


def test_cron_next_marks_excluded_instants(dsn: str, client: Client) -> None:
    client.actions.set_calendar("company-holidays", [date(2026, 12, 25)], operator="ops@test")
    client.periodic("report", "0 9 * * *", "k", timezone="Europe/Paris", calendar="company-holidays",
                    exclude=[date(2026, 12, 27)])
    client.sync()
    text = awa("cron", "next", "report", "--dsn", dsn, "-n", "3", "--after", "2026-12-24T12:00:00Z")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        "next fires of report (zone Europe/Paris; local time, then UTC):",
        "  2026-12-25 09:00:00 CET (UTC+0100)  2026-12-25T08:00:00Z  [excluded: calendar company-holidays]",
        "  2026-12-26 09:00:00 CET (UTC+0100)  2026-12-26T08:00:00Z",
        "  2026-12-27 09:00:00 CET (UTC+0100)  2026-12-27T08:00:00Z  [excluded: 2026-12-27]",
        "  2026-12-28 09:00:00 CET (UTC+0100)  2026-12-28T08:00:00Z",
        "  2026-12-29 09:00:00 CET (UTC+0100)  2026-12-29T08:00:00Z",
    ]
    fires = awa_json("cron", "next", "report", "--dsn", dsn, "-n", "1", "--after", "2026-12-24T12:00:00Z")
    assert [(f["utc"], f["excluded"]) for f in fires] == [
        ("2026-12-25T08:00:00+00:00", "calendar company-holidays"), ("2026-12-26T08:00:00+00:00", None)]
