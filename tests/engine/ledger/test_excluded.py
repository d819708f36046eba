"""S56 in the fire ledger: an instant on an excluded date is `skipped_excluded`, naming the
rule (a date rule or a calendar); `cron why --at` explains it. Instants written by hand."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import psycopg
from cli_helpers import awa, awa_json
from ledger_helpers import at, lead, register

from awa_tui import Client


def _scenario(client: Client, conn: psycopg.Connection[Any]) -> None:
    """A daily 09:00 UTC schedule created on the 23rd, led throughout, that excludes the
    25th by calendar and the 27th by a date rule; one pass a day."""
    client.actions.set_calendar("company-holidays", [date(2025, 12, 25)], operator="ops@test")
    register(client, conn, "nightly", "0 9 * * *", at("2025-12-23T08:00:00"), calendar="company-holidays",
             exclude=[date(2025, 12, 27)])
    lead(conn, at("2025-12-23T00:00:00"), lease=timedelta(days=10))
    for day in (23, 24, 25, 26, 27, 28):
        client.evaluate(now=at(f"2025-12-{day}T09:00:00"))


def test_excluded_instants_have_their_own_verdict_naming_the_rule(
        client: Client, conn: psycopg.Connection[Any]) -> None:
    _scenario(client, conn)
    verdicts = client.reads.ledger("nightly", now=at("2025-12-28T12:00:00"))
    assert [(v.instant, v.verdict, v.reason) for v in verdicts] == [
        (at("2025-12-23T09:00:00"), "fired", None),
        (at("2025-12-24T09:00:00"), "fired", None),
        (at("2025-12-25T09:00:00"), "skipped_excluded", "calendar company-holidays"),
        (at("2025-12-26T09:00:00"), "fired", None),
        (at("2025-12-27T09:00:00"), "skipped_excluded", "2025-12-27"),
        (at("2025-12-28T09:00:00"), "fired", None),
    ]
    # The strip of the schedules page reads the same verdicts.
    strip = client.reads.outcome_strip("nightly", now=at("2025-12-28T12:00:00"))
    assert [v.verdict for v in strip] == ["fired", "fired", "skipped_excluded", "fired", "skipped_excluded", "fired"]


def test_why_explains_an_excluded_instant(dsn: str, client: Client, conn: psycopg.Connection[Any]) -> None:
    _scenario(client, conn)
    assert client.reads.why("nightly", at=at("2025-12-25T09:00:00"), now=at("2025-12-28T12:00:00")).text == (
        "nightly: due instant 2025-12-25T09:00:00Z: not fired: excluded by calendar company-holidays.")
    assert client.reads.why("nightly", at=at("2025-12-27T09:00:00"), now=at("2025-12-28T12:00:00")).text == (
        "nightly: due instant 2025-12-27T09:00:00Z: not fired: excluded by the date rule 2025-12-27.")
    answer = awa_json("cron", "why", "nightly", "--at", "2025-12-25T09:00:00Z", "--dsn", dsn)
    assert (answer["verdict"]["verdict"], answer["verdict"]["reason"]) == ("skipped_excluded",
                                                                           "calendar company-holidays")
    text = awa("cron", "why", "nightly", "--at", "2025-12-27T09:00:00Z", "--dsn", dsn).stdout
    assert "excluded by the date rule 2025-12-27" in text


def test_why_explains_an_excluded_day_not_judged_yet_and_skips_it_for_the_next(
        client: Client, conn: psycopg.Connection[Any]) -> None:
    # Created at noon on Mon 4 Jan 2027 (after that day's 09:00); the calendar excludes the
    # 5th and 6th, so the first instant that can fire is Thu 7 Jan 09:00.
    client.actions.set_calendar("company-holidays", [date(2027, 1, 5), date(2027, 1, 6)], operator="ops@test")
    register(client, conn, "nightly", "0 9 * * *", at("2027-01-04T12:00:00"), calendar="company-holidays")
    now = at("2027-01-04T13:00:00")
    answer = client.reads.why("nightly", at=at("2027-01-05T09:00:00"), now=now)
    assert answer.text == ("nightly: not due at 2027-01-05T09:00:00Z: excluded by calendar company-holidays "
                           "(2027-01-05) (next due 2027-01-07T09:00:00Z).")
    assert (answer.verdict, answer.next_due) == (None, at("2027-01-07T09:00:00"))
    # Without --at the next due instant skips the excluded days too.
    assert client.reads.why("nightly", now=now).text == (
        "nightly: not due yet at 2027-01-04T13:00:00Z (next is 2027-01-07T09:00:00Z).")
    # Control: a day the calendar leaves in reads as before.
    assert client.reads.why("nightly", at=at("2027-01-07T09:00:00"), now=now).text == (
        "nightly: not due yet at 2027-01-07T09:00:00Z (next is 2027-01-08T09:00:00Z).")


def test_why_says_when_the_schedule_did_not_exist_yet(client: Client, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "nightly", "0 9 * * *", at("2027-01-04T12:00:00"))
    answer = client.reads.why("nightly", at=at("2027-01-01T09:00:00"), now=at("2027-01-10T00:00:00"))
    assert answer.text == ("nightly: not due at 2027-01-01T09:00:00Z: the schedule did not exist yet: created "
                           "2027-01-04T12:00:00Z (next due 2027-01-05T09:00:00Z).")
    assert answer.verdict is None
