"""S60: the fields read exactly as upstream Awa's croner 2.2 reads them, and every
deliberate difference.

Each expected instant is written by hand from the calendar (the reasoning is in the
comment); none comes from the code under test. January 2026 starts on a Thursday
(Fridays 2, 9, 16, 23, 30; Saturdays 3 ... 31; Sundays 4 ... 25), February 2026 on a
Sunday (Sundays 1, 8, 15, 22; Fridays 6 ... 27; Saturdays 7 ... 28).
"""

from __future__ import annotations

import pytest
from engine_helpers import at

from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.cron.describe import describe
from awa_tui.engine.cron.expression import parse_cron, upcoming_fires

AFTER = "2026-01-01T00:00:00"  # a Thursday, midnight UTC: fires strictly after it


def _days(expr: str, count: int, zone: str = "UTC") -> list[str]:
    return [f.at.strftime("%Y-%m-%d %H:%M") for f in upcoming_fires(expr, zone, at(AFTER), count)]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # One day of the month, not every day (croniter read `5-5` as the whole field).
        ("0 0 5-5 * *", ["2026-01-05 00:00", "2026-02-05 00:00", "2026-03-05 00:00"]),
        # One hour a day, not every hour.
        ("0 5-5 * * *", ["2026-01-01 05:00", "2026-01-02 05:00", "2026-01-03 05:00"]),
        # Mondays only: 5, 12, 19 January.
        ("0 0 * * mon-mon", ["2026-01-05 00:00", "2026-01-12 00:00", "2026-01-19 00:00"]),
        # 7-7 is Sunday: 4, 11, 18 January.
        ("0 0 * * 7-7", ["2026-01-04 00:00", "2026-01-11 00:00", "2026-01-18 00:00"]),
        # 23 stepped by 9 inside 23-23 is just 23.
        ("0 23-23/9 * * *", ["2026-01-01 23:00", "2026-01-02 23:00", "2026-01-03 23:00"]),
        # A one-value month range: March only.
        ("0 0 1 mar-mar *", ["2026-03-01 00:00", "2027-03-01 00:00"]),
    ],
)
def test_an_equal_range_is_its_one_value(expr: str, expected: list[str]) -> None:
    assert _days(expr, len(expected)) == expected


def test_a_day_field_listing_every_day_is_still_restricted() -> None:
    # `*/1` in day-of-week is every weekday but not a literal `*`: both day fields are
    # restricted, so either matching is enough, and every day fires (croniter: 1, 6, 11 ...).
    assert _days("0 0 */5 * */1", 3) == ["2026-01-02 00:00", "2026-01-03 00:00", "2026-01-04 00:00"]
    # The same with day-of-month 1-31 and Mondays: every day.
    assert _days("0 0 1-31 * mon", 2) == ["2026-01-02 00:00", "2026-01-03 00:00"]
    # `*` itself leaves the field out: the 5th, 10th ... only when day-of-week is `*`.
    assert _days("0 0 */5 * *", 3) == ["2026-01-06 00:00", "2026-01-11 00:00", "2026-01-16 00:00"]


def test_day_of_week_steps_run_to_seven_which_is_sunday() -> None:
    # 1/2 is 1, 3, 5, 7: Monday, Wednesday, Friday and Sunday (croniter stopped at 6).
    assert _days("0 0 * * 1/2", 5) == ["2026-01-02 00:00", "2026-01-04 00:00", "2026-01-05 00:00",
                                       "2026-01-07 00:00", "2026-01-09 00:00"]
    # 5-7/2 is Friday and Sunday.
    assert _days("0 0 * * 5-7/2", 3) == ["2026-01-02 00:00", "2026-01-04 00:00", "2026-01-09 00:00"]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # croner reads a range's closing `sun` as 7: last Sunday 25 Jan, last Saturday 31 Jan,
        # last Sunday 22 Feb, last Saturday 28 Feb.
        ("0 0 * * sat-sun#L", ["2026-01-25 00:00", "2026-01-31 00:00", "2026-02-22 00:00", "2026-02-28 00:00"]),
        # Second Friday, Saturday and Sunday: 9, 10, 11 Jan; 8 (Sun), 13 (Fri) Feb.
        ("0 0 * * fri-sun#2", ["2026-01-09 00:00", "2026-01-10 00:00", "2026-01-11 00:00", "2026-02-08 00:00",
                               "2026-02-13 00:00"]),
        # The first Tuesday to Sunday: Fri 2, Sat 3, Sun 4, Tue 6 Jan (Thu 1 Jan is the start).
        ("0 0 * * tue-sun#1", ["2026-01-02 00:00", "2026-01-03 00:00", "2026-01-04 00:00", "2026-01-06 00:00"]),
        # A stepped weekday with an occurrence: 5/2 is Friday and Sunday, each second one.
        ("0 0 * * 5/2#2", ["2026-01-09 00:00", "2026-01-11 00:00", "2026-02-08 00:00", "2026-02-13 00:00"]),
        # A bare L next to other days adds nothing (croner ignores it): the last Friday.
        ("0 0 * * 5#L,L", ["2026-01-30 00:00", "2026-02-27 00:00"]),
        # `sun-sun` is 0-7, the whole week, as croner reads it.
        ("0 0 * * sun-sun", ["2026-01-02 00:00", "2026-01-03 00:00"]),
        # An empty list item is skipped: minutes 0 and 30.
        ("0,,30 12 * * *", ["2026-01-01 12:00", "2026-01-01 12:30"]),
    ],
)
def test_forms_upstream_accepts_fire_as_upstream_does(expr: str, expected: list[str]) -> None:
    assert _days(expr, len(expected)) == expected


@pytest.mark.parametrize(
    ("expr", "says"),
    [
        # Refused by croner too (so no upstream schedule has them); awa-tui used to accept them.
        ("0 0 * * 1-5L", "write 1-5#L"),
        ("0 0 * * fri-mon", "a range must run forward"),
        ("0 0 1 nov-feb *", "a range must run forward"),
        ("0 0 *,15 * *", "'*' stands alone"),
        ("59/200 * * * *", "step 200 is too large"),
        # Deliberate differences (croner accepts them; S60 says why they are refused):
        ("0 mon * * *", "invalid hour field"),  # a name outside its field
        ("0 L * * *", "day-of-month and day-of-week forms"),  # croner ignores L there
        ("0 0 * * L", "names no weekday"),  # croner ignores it: never fires with day-of-month *
        ("0\n0 * * * *", "newlines or control characters"),
        ("0\t0 * * * *", "newlines or control characters"),  # croner splits fields on a tab
        ("0 0 31 2 *", "never fires"),  # croner accepts it, then finds no instant
    ],
)
def test_refused_in_one_line_naming_the_value(expr: str, says: str) -> None:
    with pytest.raises(ValidationError, match="cron_expr") as caught:
        parse_cron(expr)
    message = str(caught.value)
    assert says in message and "\n" not in message


def test_the_kept_extensions_fire_inside_the_month() -> None:
    # L-2: two days before the last (29 Jan, 26 Feb); LW: the last Monday-Friday (Fri 30 Jan,
    # Fri 27 Feb). croner refuses both; they are documented extensions (S55).
    assert _days("0 0 L-2 * *", 2) == ["2026-01-29 00:00", "2026-02-26 00:00"]
    assert _days("0 0 LW * *", 2) == ["2026-01-30 00:00", "2026-02-27 00:00"]


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        ("0 0 5-5 * *", "monthly on day 5 at 00:00"),
        ("0 5-5 * * *", "daily at 05:00"),
        ("0 0 * * mon-mon", "Mondays at 00:00"),
        ("0 0 * * sun-sun", "0 0 * * sun-sun"),  # every day, 0-7: not described as Sundays
    ],
)
def test_an_equal_range_reads_as_its_one_value(expr: str, text: str) -> None:
    assert describe(expr) == text
