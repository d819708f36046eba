"""The calendar day forms beyond plain cron (S55): `L`, `L-n`, `LW` and `nW` in
day-of-month, `nL`, `DAY#L` and `DAY#n` in day-of-week.

Upstream Awa evaluates cron with the croner crate (2.x), and these follow it: `nW` is
the weekday nearest day n, found across a month boundary when day n is a weekend day
next to one (croner tests the day before and after, whatever month they fall in); `#5`
has no fire in a month without a fifth such weekday; a day-of-month and a day-of-week
that are both restricted combine with OR. `L-n` and `LW` are not croner's (it refuses
them): here `L-n` is n days before the last day and `LW` the last Monday-Friday of the
month, both inside the month.

This module only splits a field into its plain part (expanded by cron/fields.py as
croniter would) and its special forms, and says which days of one month match.
"""

from __future__ import annotations

import re
from calendar import isleap
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

from awa_tui.engine.cron.vocabulary import DOW_NAMES, DOW_RANGE_END_NAMES

DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
LAST_OFFSET_MAX = 30  # L-30: the 1st of a 31-day month
ORDINALS = ("first", "second", "third", "fourth", "fifth")

_LAST_OFFSET = re.compile(r"^l-(\d+)$", re.ASCII)
_NEAREST = re.compile(r"^(\d+)w$", re.ASCII)
_DAY = r"(?:\d+|[a-z]{3})"
# One weekday, a range of them, `n/step` or `*/step` (as croner, 0-7 stepped); then #n
# or #L; a bare L only after one weekday (croner refuses `1-5L`: write `1-5#L`).
_DOW_FORM = re.compile(rf"^({_DAY}(?:-{_DAY})?(?:/\d+)?|\*/\d+)(?:#(\w*)|(l))$", re.ASCII)


class DayFormError(ValueError):
    """One item of a day field is not an acceptable form; the message names it."""


@dataclass(frozen=True, slots=True)
class DomForms:
    last_offsets: frozenset[int] = frozenset()  # L = 0, L-n = n
    last_weekday: bool = False  # LW
    nearest: frozenset[int] = frozenset()  # nW

    def __bool__(self) -> bool:
        return bool(self.last_offsets or self.last_weekday or self.nearest)


@dataclass(frozen=True, slots=True)
class DowForms:
    nth: frozenset[tuple[int, int]] = frozenset()  # (weekday 0 = Sunday, occurrence 1..5)
    last_of: frozenset[int] = frozenset()  # weekdays whose last occurrence matches

    def __bool__(self) -> bool:
        return bool(self.nth or self.last_of)


def _is_form(item: str) -> bool:
    return "l" in item or "w" in item or "#" in item


@lru_cache(maxsize=4096)
def split_dom(text: str) -> tuple[str, DomForms]:
    """Day-of-month text (lower case) -> (its plain items, its L / W forms)."""
    if not _is_form(text):
        return text, DomForms()
    plain: list[str] = []
    offsets: set[int] = set()
    last_weekday = False
    nearest: set[int] = set()
    for item in text.split(","):
        if item == "l":
            offsets.add(0)
        elif item == "lw":
            last_weekday = True
        elif m := _LAST_OFFSET.match(item):
            n = int(m.group(1))
            if not 1 <= n <= LAST_OFFSET_MAX:
                raise DayFormError(f"{item.upper()}: the days before the last must be 1-{LAST_OFFSET_MAX}")
            offsets.add(n)
        elif m := _NEAREST.match(item):
            n = int(m.group(1))
            if not 1 <= n <= 31:
                raise DayFormError(f"{item.upper()}: W takes a day 1-31")
            nearest.add(n)
        elif "#" in item:
            raise DayFormError(f"{item.upper()}: # belongs in the day-of-week field (e.g. TUE#2)")
        elif "w" in item:
            raise DayFormError(f"{item.upper()}: W takes one day (15W), not a range, step or list item like this")
        elif "l" in item and "/" in item:
            raise DayFormError(f"{item.upper()}: L takes no step")
        elif re.match(r"^\d+l$", item):
            raise DayFormError(f"{item.upper()}: nL is the last given weekday, a day-of-week form; "
                               "in day-of-month write L, L-n or LW")
        elif "l" in item:
            raise DayFormError(f"{item.upper()}: not a day-of-month form (L, L-3, LW or 15W)")
        else:
            plain.append(item)
    return ",".join(plain), DomForms(frozenset(offsets), last_weekday, frozenset(nearest))


def _weekday(token: str, item: str, range_end: bool = False) -> int:
    value = int(token) if token.isdigit() else (DOW_RANGE_END_NAMES if range_end else DOW_NAMES).get(token)
    if value is None or not 0 <= value <= 7:
        raise DayFormError(f"{item.upper()}: {token.upper()} is not a weekday (0-7 or SUN-SAT)")
    return value


def _weekdays(days: str, item: str) -> list[int]:
    """The weekdays of `5`, `fri`, `1-5`, `1-5/2`, `5/2` or `*/2` (no wrapping range, as in
    croner; a range's closing `sun` is 7, `5/2` runs to 7)."""
    span, _, step_text = days.partition("/")
    low_text, _, high_text = ("0", "", "7") if span == "*" else span.partition("-")
    low = _weekday(low_text, item)
    high = _weekday(high_text, item, range_end=True) if high_text else 7 if step_text else low
    step = int(step_text) if step_text else 1
    if low > high:
        raise DayFormError(f"{item.upper()}: a range of weekdays must run forward")
    if step < 1:
        raise DayFormError(f"{item.upper()}: the step must be at least 1")
    return [d % 7 for d in range(low, high + 1, step)]  # 7 is Sunday


@lru_cache(maxsize=4096)
def split_dow(text: str) -> tuple[str, DowForms]:
    """Day-of-week text (lower case) -> (its plain items, its # / L forms)."""
    if "#" not in text and "l" not in text:
        return text, DowForms()
    plain: list[str] = []
    nth: set[tuple[int, int]] = set()
    last_of: set[int] = set()
    for item in text.split(","):
        if item == "l":
            if text == "l":
                raise DayFormError("L: alone in day-of-week it names no weekday; write 5L or FRI#L for the last Friday")
            continue  # croner ignores a bare L next to other days (`5#L,L` is `5#L`)
        m = _DOW_FORM.match(item)
        if m is None:
            if "#" in item or item.endswith("l"):
                raise DayFormError(f"{item.upper()}: not a day-of-week form (TUE#2, FRI#L or 5L)")
            plain.append(item)
            continue
        days, occurrence, bare_last = m.groups()
        if bare_last and ("-" in days or "/" in days):
            raise DayFormError(f"{item.upper()}: L after a range or step is not a form; write {days.upper()}#L")
        weekdays = _weekdays(days, item)
        if bare_last or occurrence == "l":
            last_of.update(weekdays)
        elif occurrence.isdigit() and 1 <= int(occurrence) <= 5:
            nth.update((d, int(occurrence)) for d in weekdays)
        else:
            raise DayFormError(f"{item.upper()}: #{occurrence.upper()} is not an occurrence (use #1-#5 or #L)")
    return ",".join(plain), DowForms(frozenset(nth), frozenset(last_of))


@dataclass(frozen=True, slots=True)
class DayRule:
    """Everything that decides whether a calendar day matches, for expressions with forms."""

    doms: frozenset[int]
    dows: frozenset[int]  # 0 = Sunday
    dom_star: bool
    dow_star: bool
    dom_forms: DomForms
    dow_forms: DowForms


def days_in_month(year: int, month: int) -> int:
    return 29 if month == 2 and isleap(year) else DAYS[month - 1]


# One entry per (rule, month) visited: months repeat across passes. A plain int, which the
# cyclic GC never scans (see the caching note in cron/expression.py).
@lru_cache(maxsize=65536)
def month_days(rule: DayRule, year: int, month: int) -> int:
    """The days of `month` on which `rule` matches, as a bit mask (bit d = day d)."""
    dim = days_in_month(year, month)
    first = date(year, month, 1).isoweekday() % 7  # weekday of the 1st, 0 = Sunday
    dom_forms, dow_forms = rule.dom_forms, rule.dow_forms
    offsets, nearest = dom_forms.last_offsets, dom_forms.nearest
    last_weekday = 0
    if dom_forms.last_weekday:
        last = (first + dim - 1) % 7
        last_weekday = dim - (1 if last == 6 else 2 if last == 0 else 0)
    prev_dim = days_in_month(year - 1, 12) if month == 1 else days_in_month(year, month - 1)
    mask = 0
    for day in range(1, dim + 1):
        weekday = (first + day - 1) % 7
        dom_ok = day in rule.doms or (dim - day) in offsets or day == last_weekday
        if not dom_ok and nearest:
            # croner: a weekday matches nW for its own n, for the Sunday before it (a
            # Monday) and for the Saturday after it (a Friday), in whatever month those are.
            dom_ok = (day in nearest and 1 <= weekday <= 5) or (
                weekday == 1 and (day - 1 if day > 1 else prev_dim) in nearest
            ) or (weekday == 5 and (day + 1 if day < dim else 1) in nearest)
        dow_ok = (
            weekday in rule.dows
            or (weekday, (day - 1) // 7 + 1) in dow_forms.nth
            or (weekday in dow_forms.last_of and day + 7 > dim)
        )
        if rule.dom_star:
            ok = rule.dow_star or dow_ok
        elif rule.dow_star:
            ok = dom_ok
        else:
            ok = dom_ok or dow_ok
        if ok:
            mask |= 1 << day
    return mask
