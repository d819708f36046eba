"""`awa-tui cron next --after` near the ends of the calendar: the correct fires (fewer when
the calendar ends before them) or a one-line error, never a traceback."""

from __future__ import annotations

import pytest
from cli_helpers import awa, awa_json, one_line_error

from awa_tui import Client


@pytest.fixture
def edges(dsn: str, client: Client) -> str:
    client.periodic("utc", "* * * * *", "k")
    client.periodic("new-york", "* * * * *", "k", timezone="America/New_York")
    client.periodic("kiritimati", "* * * * *", "k", timezone="Pacific/Kiritimati")  # UTC+14
    client.periodic("yearly", "@yearly", "k")
    client.sync()
    return dsn


def _fires(dsn: str, name: str, after: str, count: int = 5) -> list[tuple[str, str]]:
    fires = awa_json("cron", "next", name, "-n", str(count), "--after", after, "--dsn", dsn)
    return [(f["utc"], f["local"]) for f in fires]


def test_the_list_ends_with_the_calendar(edges: str) -> None:
    assert _fires(edges, "utc", "9999-12-31T23:57:00Z") == [
        ("9999-12-31T23:58:00+00:00", "9999-12-31T23:58:00+00:00"),
        ("9999-12-31T23:59:00+00:00", "9999-12-31T23:59:00+00:00"),
    ]
    assert _fires(edges, "new-york", "9999-12-31T23:58:00Z") == [
        ("9999-12-31T23:59:00+00:00", "9999-12-31T18:59:00-05:00"),
    ]
    # Local wall time reaches year 10000 first in UTC+14: its last fire is at 09:59Z.
    assert _fires(edges, "kiritimati", "9999-12-31T09:57:00Z") == [
        ("9999-12-31T09:58:00+00:00", "9999-12-31T23:58:00+14:00"),
        ("9999-12-31T09:59:00+00:00", "9999-12-31T23:59:00+14:00"),
    ]
    assert _fires(edges, "yearly", "9999-06-01T00:00:00Z") == []
    assert _fires(edges, "utc", "9999-12-31T23:59:59-00:00") == []
    text = awa("cron", "next", "utc", "-n", "3", "--after", "9999-12-31T23:58:00Z", "--dsn", edges)
    assert (text.returncode, text.stderr) == (0, "")
    assert text.stdout.splitlines() == [
        "next fires of utc (zone UTC; local time, then UTC):",
        "  9999-12-31 23:59:00 UTC (UTC+0000)  9999-12-31T23:59:00Z",
        "1 of 3 fires: the calendar ends at 9999-12-31",
    ]


def test_the_start_of_the_calendar(edges: str) -> None:
    assert _fires(edges, "utc", "0001-01-01T00:00:00Z", 2) == [
        ("0001-01-01T00:01:00+00:00", "0001-01-01T00:01:00+00:00"),
        ("0001-01-01T00:02:00+00:00", "0001-01-01T00:02:00+00:00"),
    ]
    assert _fires(edges, "utc", "0001-01-01T00:00:00-05:00", 1) == [
        ("0001-01-01T05:01:00+00:00", "0001-01-01T05:01:00+00:00"),
    ]
    text = awa("cron", "next", "utc", "-n", "1", "--after", "0001-01-01T00:00:00Z", "--dsn", edges)
    assert text.stdout.splitlines() == [
        "next fires of utc (zone UTC; local time, then UTC):",
        "  0001-01-01 00:01:00 UTC (UTC+0000)  0001-01-01T00:01:00Z",
    ]


@pytest.mark.parametrize(
    ("name", "after", "message"),
    [
        ("utc", "0001-01-01T00:00:00+05:00",
         "error: --after: '0001-01-01T00:00:00+05:00' is outside the calendar in UTC (0001-01-01 to 9999-12-31)"),
        ("utc", "9999-12-31T23:59:59-05:00",
         "error: --after: '9999-12-31T23:59:59-05:00' is outside the calendar in UTC (0001-01-01 to 9999-12-31)"),
        ("new-york", "0001-01-01T00:00:00Z",
         "error: after: 0001-01-01T00:00:00+00:00 is too close to the start of the calendar (year 1) "
         "to compute fires in zone 'America/New_York'"),
        ("utc", "10000-01-01T00:00:00Z",
         "error: --after: expected an ISO-8601 instant such as 2025-03-08T00:00:00Z, got '10000-01-01T00:00:00Z'"),
    ],
)
def test_instants_outside_the_calendar_are_one_line_errors(edges: str, name: str, after: str, message: str) -> None:
    assert one_line_error(awa("cron", "next", name, "--after", after, "--dsn", edges)) == message
    assert one_line_error(awa("cron", "next", name, "--after", after, "--json", "--dsn", edges)) == message


def test_cron_next_previews_the_day_forms(dsn: str, client: Client) -> None:
    # S55 through the CLI. Sun 31 Mar 2024 is March's last day and Berlin's spring forward
    # (02:00 CET -> 03:00 CEST at 01:00Z): 02:30 fires at the end of the gap. 31 Mar 2025 is a
    # Monday, 02:30 CEST = 00:30Z.
    client.periodic("month-end", "30 2 L 3 *", "k", timezone="Europe/Berlin")
    # Tuesdays of Jan 2026: 6, 13; of Feb: 3, 10.
    client.periodic("second-tuesday", "0 9 ? * TUE#2", "k")
    client.sync()
    assert awa_json("cron", "next", "month-end", "-n", "2", "--after", "2024-03-01T00:00:00Z", "--dsn", dsn) == [
        {"utc": "2024-03-31T01:00:00+00:00", "local": "2024-03-31T03:00:00+02:00", "timezone": "Europe/Berlin",
         "dst": "gap", "excluded": None},
        {"utc": "2025-03-31T00:30:00+00:00", "local": "2025-03-31T02:30:00+02:00", "timezone": "Europe/Berlin",
         "dst": None, "excluded": None},
    ]
    assert _fires(dsn, "second-tuesday", "2026-01-01T00:00:00Z", 2) == [
        ("2026-01-13T09:00:00+00:00", "2026-01-13T09:00:00+00:00"),
        ("2026-02-10T09:00:00+00:00", "2026-02-10T09:00:00+00:00"),
    ]
