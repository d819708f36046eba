"""Cron field sets and the next / previous match on naive wall-clock times.

This replaces croniter in the hot path (measured: ~0.5 ms per uncached croniter
computation; a first pass over 100k distinct expressions took tens of seconds). It is
deliberately croniter-compatible on plain cron (numbers, `*`, `,`, `-`, `/`, month and
day names; H is resolved before parsing): the expansion below follows croniter 7.0.0's
`_expand` rule for rule, quirks included (an explicit equal range such as `5-5` means
the whole field, wrapping ranges such as `fri-mon`, DOW 7 = Sunday, the
"day-of-month OR day-of-week" rule when both are restricted).
tests/engine/cron/test_cron_equivalence.py checks acceptance and every match against
croniter on random expressions. The day forms L, W and # (S55) are split off by
cron/day_forms.py; an expression with one matches its days per month through a cached
bit mask (`month_days`), so plain expressions keep the cheaper per-day test. Time zones
are not handled here: cron/zones.py maps wall times to instants (S14).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from calendar import isleap
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache

from awa_tui.engine.cron.day_forms import DAYS, DayFormError, DayRule, month_days, split_dom, split_dow
from awa_tui.engine.cron.vocabulary import DOM, DOW, HOUR, LEN_MEANS_ALL, MINUTE, MONTH, NAMES, RANGES, SECOND

MAX_YEARS = 50  # croniter's max_years_between_matches: no match in 50 years = never

_STEP_RE = re.compile(r"^([^-]+)-([^-/]+)(/(\d+))?$", re.ASCII)
_INT_RE = re.compile(r"^\d+$", re.ASCII)
_STAR_OR_INT_RE = re.compile(r"^(\d+|\*)$", re.ASCII)
_START_STEP_RE = re.compile(r"^(.+)\/(.+)$")
ONE_SECOND = timedelta(seconds=1)
ONE_MINUTE = timedelta(minutes=1)
ONE_MICROSECOND = timedelta(microseconds=1)


class CronError(ValueError):
    """The expression is not acceptable."""


def _name(field: int, key: str) -> int:
    try:
        return NAMES[field][key]
    except KeyError:
        raise CronError(f"{key!r} is not acceptable") from None


def _alias(field: int, value: int) -> int:
    # croniter's LOWMAP: only DOW 7 -> 0 applies to 5- and 6-field expressions.
    return 0 if field == DOW and value == 7 else value


def _expand_range(field: int, low: int, high: int, step: int, start_with_step: bool) -> list[int]:
    lo_f, hi_f = RANGES[field]
    if max(low, high) > hi_f:
        raise CronError(f"{low}-{high} is out of range")
    # "59/15" is the single value 59 (its normalised bounds collide); an equal range
    # *written* as one ("5-5", "jan-jan") means the whole field, as in croniter.
    if start_with_step and low == high:
        return [low]
    if low == high:
        low, high = lo_f, hi_f
    if low <= high:
        return list(range(low, high + 1, step))
    # A wrapping range ("fri-mon", "nov-feb/2"): croniter's own stepping across the end.
    whole = list(range(lo_f, hi_f + 1))
    values = list(range(low, hi_f + 1, step))
    to_skip = 0
    if values:
        already_skipped = list(reversed(whole)).index(values[-1])
        position = whole.index(values[-1])
        if position + step > len(whole) and already_skipped < step:
            to_skip = step - already_skipped
    return values + list(range(lo_f + to_skip, high + 1, step))


@lru_cache(maxsize=4096)  # field texts repeat across expressions ("*", "0", "1-5"...)
def _expand_field(field: int, text: str, other_day_has_star: bool) -> tuple[frozenset[int], bool]:
    """The values of one field and whether croniter would call it '*' (unrestricted)."""
    lo_f, hi_f = RANGES[field]
    pending: list[str | int] = list(text.split(","))
    values: set[int | str] = set()
    seen: set[int] = set()
    while pending:
        item = pending.pop()
        if isinstance(item, int):  # a value produced by a range: checked like a literal
            value = _alias(field, item)
            if not lo_f <= value <= hi_f:
                raise CronError(f"{item} is out of range")
            values.add(value)
            continue
        t = f"{lo_f}-{hi_f}{item[1:]}" if item.startswith("*/") and len(item) > 2 else item
        m = _STEP_RE.match(t)
        start_with_step = False
        if not m:
            t = _START_STEP_RE.sub(rf"\1-{hi_f}/\2", item)  # "10/5" -> "10-max/5"
            m = _STEP_RE.match(t)
            start_with_step = bool(m)
        if m:
            low_text, high_text, step_text = m.group(1), m.group(2), m.group(4) or "1"
            low = int(low_text) if _INT_RE.match(low_text) else _name(field, low_text)
            high = int(high_text) if _INT_RE.match(high_text) else _name(field, high_text)
            step = int(step_text)
            if step == 0:
                raise CronError(f"step {step_text!r} is not acceptable")
            rng = _expand_range(field, _alias(field, low), _alias(field, high), step, start_with_step)
            pending += [v for v in rng if v not in seen]
            seen.update(rng)
            continue
        if t.startswith("-"):
            raise CronError("negative numbers are not allowed")
        if t == "*":
            values.add("*")
            continue
        value = _alias(field, int(t) if _STAR_OR_INT_RE.match(t) else _name(field, t))
        if not lo_f <= value <= hi_f:
            raise CronError(f"{t} is out of range")
        values.add(value)
    star = "*" in values
    if not star and len(values) == LEN_MEANS_ALL[field]:
        # croniter keeps a complete day-of-month (or day-of-week) list "restricted" when
        # the other day field has no '*' at all, so the OR rule still applies.
        star = other_day_has_star if field in (DOM, DOW) else True
    ints = frozenset(v for v in values if isinstance(v, int))
    return (frozenset(range(lo_f, hi_f + 1)) if star else ints), star


@dataclass(frozen=True)
class CronFields:
    """An expanded expression: sorted allowed values per field, and the day rule."""

    seconds: tuple[int, ...]
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    doms: frozenset[int]
    months: tuple[int, ...]
    dows: frozenset[int]  # 0 = Sunday
    dom_star: bool
    dow_star: bool
    has_seconds: bool
    day_rule: DayRule | None = None  # set only when a day field uses L, W or #

    def _day_ok(self, day: int, weekday: int) -> bool:
        if self.dom_star:
            return self.dow_star or weekday in self.dows
        if self.dow_star:
            return day in self.doms
        return day in self.doms or weekday in self.dows  # both restricted: OR

    def next_after(self, t: datetime) -> datetime | None:
        """The first matching wall time strictly after `t` (croniter get_next)."""
        if self.has_seconds:
            start = t.replace(microsecond=0) + ONE_SECOND
        else:
            start = t.replace(second=0, microsecond=0) + ONE_MINUTE
        return self._next_at_or_after(start)

    def prev_before(self, t: datetime) -> datetime | None:
        """The last matching wall time strictly before `t` (croniter get_prev)."""
        t = t - ONE_MICROSECOND
        end = t.replace(microsecond=0) if self.has_seconds else t.replace(second=0, microsecond=0)
        return self._prev_at_or_before(end)

    def _next_at_or_after(self, c: datetime) -> datetime | None:
        y, mo, d, h, mi, s = c.year, c.month, c.day, c.hour, c.minute, c.second
        months, hours, minutes, seconds = self.months, self.hours, self.minutes, self.seconds
        last_year = y + MAX_YEARS
        while y <= last_year:
            # Carry any overflow left by a bump below, lower fields reset to 0.
            if s > 59:
                s, mi = 0, mi + 1
            if mi > 59:
                mi, h = 0, h + 1
            if h > 23:
                h, d = 0, d + 1
            if mo > 12:
                mo, y = 1, y + 1
                continue
            dim = 29 if mo == 2 and isleap(y) else DAYS[mo - 1]
            if d > dim:
                d, mo, h, mi, s = 1, mo + 1, 0, 0, 0
                continue
            if mo not in months:
                i = bisect_left(months, mo)
                if i == len(months):
                    y, mo = y + 1, months[0]
                else:
                    mo = months[i]
                d, h, mi, s = 1, 0, 0, 0
                continue
            day = d
            if self.day_rule is None:
                weekday0 = (date(y, mo, 1).isoweekday()) % 7  # weekday of the 1st, 0 = Sunday
                while day <= dim and not self._day_ok(day, (weekday0 + day - 1) % 7):
                    day += 1
            else:
                matching = month_days(self.day_rule, y, mo)
                while day <= dim and not matching >> day & 1:
                    day += 1
            if day > dim:
                d, mo, h, mi, s = 1, mo + 1, 0, 0, 0
                continue
            if day != d:
                d, h, mi, s = day, 0, 0, 0
            if h not in hours:
                i = bisect_left(hours, h)
                if i == len(hours):
                    d, h, mi, s = d + 1, 0, 0, 0
                    continue
                h, mi, s = hours[i], 0, 0
            if mi not in minutes:
                i = bisect_left(minutes, mi)
                if i == len(minutes):
                    h, mi, s = h + 1, 0, 0
                    continue
                mi, s = minutes[i], 0
            if s not in seconds:
                i = bisect_left(seconds, s)
                if i == len(seconds):
                    mi, s = mi + 1, 0
                    continue
                s = seconds[i]
            return datetime(y, mo, d, h, mi, s)
        return None

    def _prev_at_or_before(self, c: datetime) -> datetime | None:
        y, mo, d, h, mi, s = c.year, c.month, c.day, c.hour, c.minute, c.second
        months, hours, minutes, seconds = self.months, self.hours, self.minutes, self.seconds
        first_year = y - MAX_YEARS
        while y >= first_year:
            # Borrow for any underflow left by a step back, lower fields set to their max.
            if s < 0:
                s, mi = 59, mi - 1
            if mi < 0:
                mi, h = 59, h - 1
            if h < 0:
                h, d = 23, d - 1
            if mo < 1:
                mo, y = 12, y - 1
                d = 31
                continue
            dim = 29 if mo == 2 and isleap(y) else DAYS[mo - 1]
            if d < 1:
                mo, h, mi, s = mo - 1, 23, 59, 59
                d = 31  # clamped to the month's length below
                continue
            d = min(d, dim)
            if mo not in months:
                i = bisect_right(months, mo) - 1
                if i < 0:
                    y, mo = y - 1, months[-1]
                else:
                    mo = months[i]
                d, h, mi, s = 31, 23, 59, 59
                continue
            day = d
            if self.day_rule is None:
                weekday0 = (date(y, mo, 1).isoweekday()) % 7
                while day >= 1 and not self._day_ok(day, (weekday0 + day - 1) % 7):
                    day -= 1
            else:
                matching = month_days(self.day_rule, y, mo)
                while day >= 1 and not matching >> day & 1:
                    day -= 1
            if day < 1:
                d, h, mi, s = 0, 23, 59, 59
                continue
            if day != d:
                d, h, mi, s = day, 23, 59, 59
            if h not in hours:
                i = bisect_right(hours, h) - 1
                if i < 0:
                    d, h, mi, s = d - 1, 23, 59, 59
                    continue
                h, mi, s = hours[i], 59, 59
            if mi not in minutes:
                i = bisect_right(minutes, mi) - 1
                if i < 0:
                    h, mi, s = h - 1, 59, 59
                    continue
                mi, s = minutes[i], 59
            if s not in seconds:
                i = bisect_right(seconds, s) - 1
                if i < 0:
                    mi, s = mi - 1, 59
                    continue
                s = seconds[i]
            return datetime(y, mo, d, h, mi, s)
        return None


@lru_cache(maxsize=262144)
def cron_fields(body: str, has_seconds: bool) -> CronFields:
    """Expand a 5-field body (or 6 fields, seconds first). Raises CronError.

    `?` is `*` in any field, as croner reads it."""
    parts = body.lower().replace("?", "*").split()
    if len(parts) != (6 if has_seconds else 5):
        raise CronError(f"expected {6 if has_seconds else 5} fields, got {len(parts)}")
    expressions = parts[1:] + parts[:1] if has_seconds else parts  # croniter order: seconds last
    try:
        dom_text, dom_forms = split_dom(expressions[DOM])
        dow_text, dow_forms = split_dow(expressions[DOW])
    except DayFormError as exc:
        raise CronError(str(exc)) from None
    expressions[DOM], expressions[DOW] = dom_text, dow_text
    expanded = [
        _expand_field(i, text, "*" in expressions[DOW if i == DOM else DOM]) if text else (frozenset(), False)
        for i, text in enumerate(expressions)
    ]
    seconds = tuple(sorted(expanded[SECOND][0])) if has_seconds else (0,)
    # A day field with a form is restricted (croner: only a literal `*` is unrestricted).
    dom_star = expanded[DOM][1] and not dom_forms
    dow_star = expanded[DOW][1] and not dow_forms
    doms = expanded[DOM][0]
    dows = expanded[DOW][0]
    rule = None
    if dom_forms or dow_forms:
        rule = DayRule(doms, dows, dom_star, dow_star, dom_forms, dow_forms)
    return CronFields(
        seconds=seconds,
        minutes=tuple(sorted(expanded[MINUTE][0])),
        hours=tuple(sorted(expanded[HOUR][0])),
        doms=doms,
        months=tuple(sorted(expanded[MONTH][0])),
        dows=dows,
        dom_star=dom_star,
        dow_star=dow_star,
        has_seconds=has_seconds,
        day_rule=rule,
    )
