"""cronfields (our cron arithmetic) against croniter 7.0.0, on what croniter shares with
upstream Awa's croner.

croniter reads four things differently from croner (an equal range `5-5` as the whole
field, a complete day list as `*`, day-of-week `n/s` stopping at 6, wrapping ranges), so
the random expressions here avoid them: every value in range, ranges running forward with
two distinct ends, `*` only alone, day fields that are `*` or leave a day out. On those
both must find the same next and previous wall times, iterated, from random instants and
from instants that are themselves matches. The differences, and every form croniter lacks,
are checked against npm croner in test_cron_differential.py. Time zones are not involved
here (test_dst.py).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from croniter import croniter
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.cron.expression import parse_cron
from awa_tui.engine.cron.fields import CronError, _expand_field, cron_fields
from awa_tui.engine.cron.vocabulary import DOM, DOW

MONTHS = "jan feb mar apr may jun jul aug sep oct nov dec".split()
DAYS = "sun mon tue wed thu fri sat".split()
# (low, high) per field; day-of-week 0-6 (croniter wraps 7 differently from croner).
BOUNDS = {"sec": (0, 59), "min": (0, 59), "hour": (0, 23), "dom": (1, 31), "month": (1, 12), "dow": (0, 6)}
START = datetime(2000, 1, 1)


@st.composite
def value(draw: st.DrawFn, field: str, low: int | None = None) -> str:
    lo, high = BOUNDS[field]
    lo = lo if low is None else low
    number = draw(st.integers(lo, high))
    if field == "month" and draw(st.booleans()):
        return MONTHS[number - 1] if draw(st.booleans()) else MONTHS[number - 1].upper()
    if field == "dow" and draw(st.booleans()):
        return DAYS[number]
    return str(number)


def number(text: str, field: str) -> int:
    names = MONTHS if field == "month" else DAYS
    return int(text) if text.isdigit() else names.index(text.lower()) + (1 if field == "month" else 0)


@st.composite
def item(draw: st.DrawFn, field: str) -> str:
    low, high = BOUNDS[field]
    kinds = ["star_step", "value", "range", "range_step"] + ([] if field == "dow" else ["start_step"])
    kind = draw(st.sampled_from(kinds))
    step = draw(st.integers(1, high))
    if kind == "star_step":
        return f"*/{step}"
    first = draw(value(field, low=low))
    if kind == "value":
        return first
    if kind == "start_step":
        return f"{first}/{step}"
    start = number(first, field)
    if start == high:
        return first
    end = draw(value(field, low=start + 1))
    return f"{first}-{end}" if kind == "range" else f"{first}-{end}/{step}"


@st.composite
def expression(draw: st.DrawFn) -> tuple[str, bool]:
    has_seconds = draw(st.booleans())
    names = ["sec", "min", "hour", "dom", "month", "dow"] if has_seconds else ["min", "hour", "dom", "month", "dow"]
    fields = []
    for name in names:
        if draw(st.integers(0, 3)) == 0:
            fields.append("*")
            continue
        text = ",".join(draw(st.lists(item(name), min_size=1, max_size=3)))
        if name in ("dom", "dow"):
            # A complete day list is `*` to croniter and restricted to croner: left out.
            assume(len(_expand_field(DOM if name == "dom" else DOW, text.lower())) < (31 if name == "dom" else 7))
        fields.append(text)
    return " ".join(fields), has_seconds


instants = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2040, 12, 31))


def croniter_accepts(body: str, has_seconds: bool) -> bool:
    # What parse_cron did before: construct, then one step (ranges are checked lazily).
    try:
        croniter(body, START, second_at_beginning=has_seconds).get_next(datetime)
    except Exception:
        return False
    return True


def ours_accepts(body: str, has_seconds: bool) -> bool:
    try:
        fields = cron_fields(body, has_seconds)
    except CronError:
        return False
    return fields.next_after(START) is not None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression(), instants)
def test_same_expressions_accepted_and_same_matches(expr: tuple[str, bool], at: datetime) -> None:
    body, has_seconds = expr
    accepted = croniter_accepts(body, has_seconds)
    assert ours_accepts(body, has_seconds) == accepted, body
    assume(accepted)  # e.g. "0 0 31 2 *": refused by both
    fields = cron_fields(body, has_seconds)
    forward = croniter(body, at, second_at_beginning=has_seconds)
    backward = croniter(body, at, is_prev=True, second_at_beginning=has_seconds)
    ours_next: datetime | None = at
    ours_prev: datetime | None = at
    for _ in range(3):  # iterated: each step starts exactly on the previous match
        ours_next = fields.next_after(ours_next)  # type: ignore[arg-type]
        assert ours_next == forward.get_next(datetime), (body, at)
        try:
            expected_prev = backward.get_prev(datetime)
        except Exception:  # croniter gives up after 50 years back; so do we
            expected_prev = None
        ours_prev = fields.prev_before(ours_prev) if ours_prev else None
        assert ours_prev == expected_prev, (body, at)
        if ours_prev is None:
            break


@pytest.mark.parametrize(
    ("body", "has_seconds", "at", "expected"),
    [
        # Where croniter and croner agree:
        ("0 0 * * 5-7", False, datetime(2025, 1, 6), datetime(2025, 1, 10)),  # fri-sun, 7 = Sunday
        ("0 0 * * sat-sun", False, datetime(2025, 1, 6), datetime(2025, 1, 11)),
        ("0 0 1 * mon", False, datetime(2025, 1, 2), datetime(2025, 1, 6)),  # both days restricted: OR
        ("0 0 */2 * mon", False, datetime(2025, 1, 1), datetime(2025, 1, 3)),  # "*/2" counts as restricted
        ("0 0 1-31 * *", False, datetime(2025, 1, 1, 5), datetime(2025, 1, 2)),
        ("59/15 * * * *", False, datetime(2025, 1, 1), datetime(2025, 1, 1, 0, 59)),  # start at field max
        ("30 0 12 * * *", True, datetime(2025, 1, 1), datetime(2025, 1, 1, 12, 0, 30)),  # seconds first
        ("0 0 29 2 *", False, datetime(2025, 1, 1), datetime(2028, 2, 29)),
        # The day forms (S55) where croniter spells them the same and agrees:
        ("0 0 L * *", False, datetime(2025, 2, 1), datetime(2025, 2, 28)),
        ("0 0 L 2 *", False, datetime(2027, 3, 1), datetime(2028, 2, 29)),
        ("0 0 * * 1#5", False, datetime(2026, 1, 1), datetime(2026, 3, 30)),  # no 5th Monday in Jan, Feb
        ("0 0 15W * *", False, datetime(2026, 2, 1), datetime(2026, 2, 16)),  # Sun 15 Feb -> Mon 16
        ("0 0 ? * mon#2", False, datetime(2026, 1, 1), datetime(2026, 1, 12)),
    ],
)
def test_known_cases_match_croniter(body: str, has_seconds: bool, at: datetime, expected: datetime) -> None:
    assert cron_fields(body, has_seconds).next_after(at) == expected
    assert croniter(body, at, second_at_beginning=has_seconds).get_next(datetime) == expected


@pytest.mark.parametrize(
    "body", ["0 0 31 2 *", "0 0 30 2 *", "0 0 0 * *", "0 0 * 0 *", "*/0 * * * *", "5-60 * * * *"]
)
def test_rejected_like_croniter(body: str) -> None:
    assert not croniter_accepts(body, False)
    with pytest.raises(ValidationError, match="cron_expr"):
        parse_cron(body)


def test_a_far_step_back_finds_nothing() -> None:
    # A leap day every 4 years is found; the search gives up after 50 years, as croniter.
    fields = cron_fields("0 0 29 2 *", False)
    assert fields.prev_before(datetime(2025, 1, 1)) == datetime(2024, 2, 29)
    assert fields.next_after(datetime(2024, 2, 29) - timedelta(seconds=1)) == datetime(2024, 2, 29)
