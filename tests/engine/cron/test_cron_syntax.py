"""S55: the day forms L, L-n, LW, nW, nL, DAY#L, DAY#n and ? -- exact instants in several
zones and across DST, leap years, months without a fifth weekday, croner's choices where
croniter differs, and an equivalence check against croniter where the two agree.

Every expected instant is written by hand (the calendar reasoning is in the comment) or
comes from croniter 7.0.0; none from the code under test.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from croniter import croniter
from engine_helpers import at, fire_times
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awa_tui import Client
from awa_tui.engine.cron.expression import next_fire, parse_cron, upcoming_fires
from awa_tui.engine.cron.fields import cron_fields

UTC_ = "UTC"
NY = "America/New_York"
BERLIN = "Europe/Berlin"
KOLKATA = "Asia/Kolkata"
LORD_HOWE = "Australia/Lord_Howe"


def _fires(expr: str, zone: str, after: str, count: int) -> list[tuple[str, str | None]]:
    return [(f.at.strftime("%Y-%m-%dT%H:%M:%SZ"), f.mark) for f in upcoming_fires(expr, zone, at(after), count)]


@pytest.mark.parametrize(
    ("expr", "zone", "after", "expected"),
    [
        # Last day of the month: 31 Jan, 28 Feb (2026 is not a leap year), 31 Mar.
        ("0 0 L * *", UTC_, "2026-01-15T00:00:00", ["2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z",
                                                     "2026-03-31T00:00:00Z"]),
        # Kolkata is UTC+05:30 all year: local midnight is 18:30Z the day before.
        ("0 0 L * *", KOLKATA, "2026-02-01T00:00:00", ["2026-02-27T18:30:00Z", "2026-03-30T18:30:00Z"]),
        # Second Tuesday: Feb 2025 starts on a Saturday (Tuesdays 4, 11), so does March (4, 11).
        # 09:00 EST = 14:00Z; New York is on EDT from 9 March, 09:00 EDT = 13:00Z.
        ("0 9 * * TUE#2", NY, "2025-02-01T00:00:00", ["2025-02-11T14:00:00Z", "2025-03-11T13:00:00Z"]),
        # Last Friday: 26 Sep 2025 (CEST, UTC+2) and 31 Oct 2025 (CET since 26 Oct, UTC+1).
        ("0 17 * * 5L", BERLIN, "2025-09-01T00:00:00", ["2025-09-26T15:00:00Z", "2025-10-31T16:00:00Z"]),
        ("0 17 * * FRI#L", BERLIN, "2025-09-01T00:00:00", ["2025-09-26T15:00:00Z", "2025-10-31T16:00:00Z"]),
        ("0 17 * * 5#L", BERLIN, "2025-09-01T00:00:00", ["2025-09-26T15:00:00Z", "2025-10-31T16:00:00Z"]),
        # Nearest weekday to the 15th: Thu 15 Jan 2026; Sun 15 Feb -> Mon 16; Sun 15 Mar -> Mon 16;
        # Sat 15 Aug 2026 -> Fri 14.
        ("0 0 15W * *", UTC_, "2026-01-01T00:00:00", ["2026-01-15T00:00:00Z", "2026-02-16T00:00:00Z",
                                                       "2026-03-16T00:00:00Z"]),
        ("0 0 15W 8 *", UTC_, "2026-01-01T00:00:00", ["2026-08-14T00:00:00Z"]),
        # 3 days before the last: 28, 25 (Feb 2026 has 28 days), 28.
        ("0 0 L-3 * *", UTC_, "2026-01-01T00:00:00", ["2026-01-28T00:00:00Z", "2026-02-25T00:00:00Z",
                                                       "2026-03-28T00:00:00Z"]),
        # ... and in a leap February, 29 - 3 = 26.
        ("0 0 L-3 2 *", UTC_, "2028-01-01T00:00:00", ["2028-02-26T00:00:00Z"]),
        # Last weekday: Sat 31 Jan 2026 -> Fri 30; Sat 28 Feb -> Fri 27; Tue 31 Mar; Sun 31 May -> Fri 29.
        ("0 0 LW * *", UTC_, "2026-01-01T00:00:00", ["2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z",
                                                      "2026-03-31T00:00:00Z"]),
        ("0 0 LW 5 *", UTC_, "2026-01-01T00:00:00", ["2026-05-29T00:00:00Z"]),
        # The fifth Monday exists only in Mar (30), Jun (29), Aug (31) and Nov (30) of 2026.
        ("0 0 * * 1#5", UTC_, "2026-01-01T00:00:00", ["2026-03-30T00:00:00Z", "2026-06-29T00:00:00Z",
                                                       "2026-08-31T00:00:00Z", "2026-11-30T00:00:00Z",
                                                       "2027-03-29T00:00:00Z"]),
        # ? is *.
        ("0 0 ? * MON", UTC_, "2026-01-01T00:00:00", ["2026-01-05T00:00:00Z", "2026-01-12T00:00:00Z"]),
        # Six fields, seconds first: the second Tuesday at 09:30:15.
        ("15 30 9 ? * TUE#2", UTC_, "2026-01-01T00:00:00", ["2026-01-13T09:30:15Z", "2026-02-10T09:30:15Z"]),
        # A range with an occurrence (croner): the first Monday to Friday of each month --
        # Thu 1, Fri 2, Mon 5, Tue 6, Wed 7 January 2026.
        ("0 0 * 1 MON-FRI#1", UTC_, "2026-01-01T00:00:00", ["2026-01-02T00:00:00Z", "2026-01-05T00:00:00Z",
                                                             "2026-01-06T00:00:00Z", "2026-01-07T00:00:00Z",
                                                             "2027-01-01T00:00:00Z"]),
        # A stepped star with an occurrence (croner: 0-7 by 2 = Sun, Tue, Thu, Sat): the second
        # of each in Jan 2026 (Thu 1st): Thu 8, Sat 10, Sun 11, Tue 13.
        ("0 0 * 1 */2#2", UTC_, "2026-01-01T00:00:00", ["2026-01-08T00:00:00Z", "2026-01-10T00:00:00Z",
                                                         "2026-01-11T00:00:00Z", "2026-01-13T00:00:00Z"]),
    ],
)
def test_each_form_fires_at_the_exact_instants(expr: str, zone: str, after: str, expected: list[str]) -> None:
    assert _fires(expr, zone, after, len(expected)) == [(e, None) for e in expected]


def test_last_day_that_is_the_spring_forward_day_fires_at_the_end_of_the_gap() -> None:
    # Sun 31 Mar 2024 is the last day of March and Berlin's spring forward: 02:00 CET jumps to
    # 03:00 CEST at 01:00Z, so 02:30 does not exist and fires once at the gap's end (S14).
    assert _fires("30 2 L 3 *", BERLIN, "2024-03-01T00:00:00", 2) == [
        ("2024-03-31T01:00:00Z", "gap"), ("2025-03-31T00:30:00Z", None)]


def test_first_sunday_on_the_fall_back_day_fires_at_the_first_occurrence() -> None:
    # Sun 2 Nov 2025 is New York's first Sunday of November and its fall back: 01:30 EDT (05:30Z)
    # and 01:30 EST (06:30Z); it fires at the first only.
    assert _fires("30 1 * 11 SUN#1", NY, "2025-10-01T00:00:00", 2) == [
        ("2025-11-02T05:30:00Z", "fold"), ("2026-11-01T05:30:00Z", "fold")]


def test_lord_howe_half_hour_shifts_on_a_first_sunday() -> None:
    # Lord Howe: +11 in summer, +10:30 in winter, shifting by 30 minutes at 02:00 local on the first
    # Sunday of April (back to 01:30) and of October (forward to 02:30). 5 Apr 2026: 01:45 occurs
    # twice, first at +11 = 14:45Z on the 4th. 4 Oct 2026: 02:15 does not exist; the gap ends at
    # 02:30 +11 = 15:30Z on the 3rd.
    assert _fires("45 1 * 4 0#1", LORD_HOWE, "2026-03-01T00:00:00", 1) == [("2026-04-04T14:45:00Z", "fold")]
    assert _fires("15 2 * 10 SUN#1", LORD_HOWE, "2026-09-01T00:00:00", 1) == [("2026-10-03T15:30:00Z", "gap")]


def test_last_of_february_in_leap_and_century_years() -> None:
    assert next_fire("0 0 L 2 *", UTC_, at("2027-03-01T00:00:00")).at == at("2028-02-29T00:00:00")
    assert next_fire("0 0 L 2 *", UTC_, at("2028-02-28T00:00:00")).at == at("2028-02-29T00:00:00")
    # 2100 is divisible by 100 and not by 400: not a leap year.
    assert next_fire("0 0 L 2 *", UTC_, at("2099-03-01T00:00:00")).at == at("2100-02-28T00:00:00")
    assert next_fire("0 0 L 2 *", UTC_, at("2399-03-01T00:00:00")).at == at("2400-02-29T00:00:00")


def test_previous_fire_is_found_backwards_too() -> None:
    fields = cron_fields("0 0 L-1 * *", False)
    # The day before the last: 30 Jan, 27 Feb 2026 (28 days), 29 Feb 2028 - 1 = 28.
    assert fields.prev_before(datetime(2026, 3, 1)) == datetime(2026, 2, 27)
    assert fields.prev_before(datetime(2026, 2, 27)) == datetime(2026, 1, 30)
    assert cron_fields("0 0 * * 5L", False).prev_before(datetime(2025, 10, 31)) == datetime(2025, 9, 26)


# --- where croner (upstream) and croniter differ: we follow croner --------------------------


def test_nearest_weekday_crosses_the_month_boundary_as_croner_does() -> None:
    # Sat 1 Aug 2026: croner takes the Friday before it, Fri 31 Jul; croniter stays in August
    # (Mon 3 Aug). July's own 1st is a Wednesday and fires as itself.
    ours = _fires("0 0 1W * *", UTC_, "2026-06-15T00:00:00", 3)
    assert ours == [("2026-07-01T00:00:00Z", None), ("2026-07-31T00:00:00Z", None),
                    ("2026-09-01T00:00:00Z", None)]
    assert croniter("0 0 1W * *", datetime(2026, 7, 2)).get_next(datetime) == datetime(2026, 8, 3)
    # Sun 31 May 2026: croner takes Mon 1 Jun; croniter Fri 29 May.
    assert _fires("0 0 31W * *", UTC_, "2026-05-15T00:00:00", 1) == [("2026-06-01T00:00:00Z", None)]
    assert croniter("0 0 31W * *", datetime(2026, 5, 15)).get_next(datetime) == datetime(2026, 5, 29)
    # A month without the day has no nearest weekday for it: 30 Apr 2026 (Thu) is not 31W.
    # 31 Jul 2026 is a Friday and fires as itself.
    assert _fires("0 0 31W 4,7 *", UTC_, "2026-01-01T00:00:00", 1) == [("2026-07-31T00:00:00Z", None)]


def test_a_form_in_one_day_field_and_a_restricted_other_combine_with_or() -> None:
    # Upstream's croner ORs day-of-month and day-of-week when both are restricted, as plain cron
    # does here (S2): the last day (Sat 31 Jan 2026) or any Monday (26 Jan, 2 Feb).
    assert _fires("0 0 L * MON", UTC_, "2026-01-25T00:00:00", 3) == [
        ("2026-01-26T00:00:00Z", None), ("2026-01-31T00:00:00Z", None), ("2026-02-02T00:00:00Z", None)]
    # The 1st or the last Friday: 1 Jan, 30 Jan, 1 Feb, 27 Feb 2026. croniter intersects here
    # instead, and finds no date at all.
    assert _fires("0 0 1 * 5L", UTC_, "2025-12-31T00:00:00", 4) == [
        ("2026-01-01T00:00:00Z", None), ("2026-01-30T00:00:00Z", None), ("2026-02-01T00:00:00Z", None),
        ("2026-02-27T00:00:00Z", None)]
    with pytest.raises(Exception):  # noqa: B017 -- croniter's own "failed to find next date"
        croniter("0 0 1 * L5", datetime(2025, 12, 31)).get_next(datetime)


def test_lists_mixing_forms_and_values() -> None:
    # 1st and last day; a plain Wednesday and the last Friday (croniter refuses both mixes).
    assert _fires("0 0 1,L * *", UTC_, "2026-01-15T00:00:00", 3) == [
        ("2026-01-31T00:00:00Z", None), ("2026-02-01T00:00:00Z", None), ("2026-02-28T00:00:00Z", None)]
    assert _fires("0 0 * 1 WED,5L", UTC_, "2026-01-20T00:00:00", 3) == [
        ("2026-01-21T00:00:00Z", None), ("2026-01-28T00:00:00Z", None), ("2026-01-30T00:00:00Z", None)]
    # Two nearest weekdays in one list (croner accepts it), in August only: Sat 1 Aug 2026 -> Fri 31 Jul,
    # outside August; Sat 15 Aug -> Fri 14. In 2027, Sun 1 Aug -> Mon 2.
    assert _fires("0 0 1W,15W 8 *", UTC_, "2026-01-01T00:00:00", 2) == [
        ("2026-08-14T00:00:00Z", None), ("2027-08-02T00:00:00Z", None)]


@pytest.mark.parametrize(
    ("expr", "quoted", "reason"),
    [
        ("0 0 * * 1#6", "'1#6'", "#6 is not an occurrence"),
        ("0 0 * * 1#0", "'1#0'", "#0 is not an occurrence"),
        ("0 L * * *", "'L'", "day-of-month and day-of-week forms"),
        ("L 0 * * *", "'L'", "day-of-month and day-of-week forms"),
        ("0 0 * L *", "'L'", "day-of-month and day-of-week forms"),
        ("0 0 1-5W * *", "'1-5W'", "W takes one day"),
        ("0 0 */2W * *", "'*/2W'", "W takes one day"),
        ("0 0 L/2 * *", "'L/2'", "L takes no step"),
        ("0 0 5L * *", "'5L'", "day-of-week form"),
        ("0 0 15# * *", "'15#'", "# belongs in the day-of-week field"),
        ("0 0 L-31 * *", "'L-31'", "1-30"),
        ("0 0 * * L", "'L'", "names no weekday"),
        ("0 0 * * 8L", "'8L'", "not a weekday"),
        ("0 0 * * 5-1#2", "'5-1#2'", "must run forward"),
        ("0 0 32W * *", "'32W'", "W takes a day 1-31"),
    ],
)
def test_meaningless_forms_are_refused_in_one_line_naming_the_value(expr: str, quoted: str, reason: str) -> None:
    with pytest.raises(Exception) as caught:
        Client("postgresql://unused@127.0.0.1:1/unused").periodic("bad", expr, "k")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("cron_expr: invalid ")
    assert quoted in message and reason in message


def test_a_form_that_never_fires_is_refused() -> None:
    with pytest.raises(Exception, match="never fires"):
        parse_cron("0 0 L-29 2 *")  # February has at most 29 days: L-29 would be day 0


# --- end to end: registered, synced and fired by real evaluator passes --------------------


def test_registered_day_forms_fire_at_their_instants(client: Client, conn: Any, register: Any) -> None:
    register("month-end", "30 2 L 3 *", timezone=BERLIN, last="2024-02-29T01:30:00")
    register("second-tuesday", "0 9 * * TUE#2", timezone=NY, last="2025-01-14T14:00:00")
    assert client.evaluate(now=at("2024-03-31T00:59:59")).jobs == []
    assert [j.fire_time for j in client.evaluate(now=at("2024-03-31T01:00:00")).jobs] == ["2024-03-31T01:00:00Z"]
    assert fire_times(conn, "month-end") == ["2024-03-31T01:00:00Z"]
    assert [j.fire_time for j in client.evaluate(now=at("2025-02-11T14:00:00")).jobs] == ["2025-02-11T14:00:00Z"]
    assert client.evaluate(now=at("2025-03-11T12:59:59")).jobs == []
    assert [j.fire_time for j in client.evaluate(now=at("2025-03-11T13:00:00")).jobs] == ["2025-03-11T13:00:00Z"]
    assert fire_times(conn, "second-tuesday") == ["2025-02-11T14:00:00Z", "2025-03-11T13:00:00Z"]
    previews = client.reads.next_fires("second-tuesday", 2, after=at("2025-03-11T13:00:00"))
    # April 2025 starts on a Tuesday (1, 8): 09:00 EDT = 13:00Z; May: Thu 1 -> Tue 6, 13.
    assert [p.utc for p in previews] == [at("2025-04-08T13:00:00"), at("2025-05-13T13:00:00")]


# --- equivalence with croniter where the semantics agree -----------------------------------

DAY_NAMES = "sun mon tue wed thu fri sat".split()


@st.composite
def form_expression(draw: st.DrawFn) -> tuple[str, str]:
    """(ours, croniter's spelling): one form in one day field, the other `*`.

    The nearest weekday stays on days 2-27: there croner and croniter agree (edge days
    differ, tested by hand above)."""
    minute = draw(st.sampled_from(["0", "*/20", "5,35", "59"]))
    hour = draw(st.sampled_from(["0", "12", "23", "1-3", "*/6"]))
    month = draw(st.sampled_from(["*", "2", "1,7", "feb-apr", "*/5"]))
    kind = draw(st.sampled_from(["L", "W", "nth", "last"]))
    day = draw(st.integers(0, 7))
    day_text = draw(st.sampled_from([str(day), DAY_NAMES[day % 7]]))
    if kind == "L":
        dom = "L" if draw(st.booleans()) else f"{draw(st.integers(1, 28))},L"
        return f"{minute} {hour} {dom} {month} *", f"{minute} {hour} {dom} {month} *"
    if kind == "W":
        dom = f"{draw(st.integers(2, 27))}W"
        return f"{minute} {hour} {dom} {month} *", f"{minute} {hour} {dom} {month} *"
    if kind == "nth":
        n = draw(st.integers(1, 5))
        return f"{minute} {hour} * {month} {day_text}#{n}", f"{minute} {hour} * {month} {day_text}#{n}"
    ours = draw(st.sampled_from([f"{day}L", f"{day_text}#L"]))
    return f"{minute} {hour} * {month} {ours}", f"{minute} {hour} * {month} L{day}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(form_expression(), st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2040, 12, 31)))
def test_forms_match_croniter_where_both_define_them(expr: tuple[str, str], start: datetime) -> None:
    ours_text, theirs_text = expr
    parse_cron(ours_text)  # accepted
    fields = cron_fields(ours_text, False)
    forward = croniter(theirs_text, start)
    backward = croniter(theirs_text, start)
    ours_next: datetime | None = start
    ours_prev: datetime | None = start
    for _ in range(3):
        ours_next = fields.next_after(ours_next)  # type: ignore[arg-type]
        assert ours_next == forward.get_next(datetime), (ours_text, start)
        ours_prev = fields.prev_before(ours_prev)  # type: ignore[arg-type]
        assert ours_prev == backward.get_prev(datetime), (ours_text, start)


def test_the_hot_path_is_unchanged_for_plain_expressions() -> None:
    # Plain expressions carry no day rule, so they keep the per-day test without the monthly set.
    assert cron_fields("0 0 1 * MON", False).day_rule is None
    assert cron_fields("0 0 L * *", False).day_rule is not None
    assert cron_fields("0 0 ? * *", False).day_rule is None


def test_next_fires_after_a_boundary_step_one_second() -> None:
    # A fire exactly at `after` is not returned (strictly after), for the forms too.
    assert next_fire("0 0 L * *", UTC_, at("2026-01-31T00:00:00")).at == at("2026-02-28T00:00:00")
    assert next_fire("0 0 L * *", UTC_, at("2026-01-31T00:00:00") - timedelta(seconds=1)).at == at(
        "2026-01-31T00:00:00")
