"""Cron field sets and the next / previous match on naive wall-clock times.

This replaced croniter in the hot path (measured: ~0.5 ms per uncached croniter
computation; a first pass over 100k distinct expressions took tens of seconds). Fields
are read by upstream Awa's rules, those of the croner crate 2.2 (numbers, `*`, `,`, `-`,
`/`, month and day names, `?` as `*`; H is resolved before parsing): an equal range
`5-5` is one value, ranges run forward only, day-of-week 0-7 with 7 = Sunday, and when
both day fields are restricted (anything but a literal `*`) either one matching is
enough. The deliberate differences are listed in docs/behaviour.md (S60);
tests/engine/cron/test_cron_differential.py checks the instants against npm croner on
random expressions. The day forms L, W and # (S55) are split off by cron/day_forms.py;
an expression with one matches its days per month through a cached bit mask
(`month_days`), so plain expressions keep the cheaper per-day test. Time zones are not
handled here: cron/zones.py maps wall times to instants (S14).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from calendar import isleap
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache

from awa_tui.engine.cron.day_forms import DAYS, DayFormError, DayRule, month_days, split_dom, split_dow
from awa_tui.engine.cron.vocabulary import DOM, DOW, DOW_RANGE_END_NAMES, HOUR, MINUTE, MONTH, NAMES, RANGES, SECOND

MAX_YEARS = 50  # croniter's max_years_between_matches: no match in 50 years = never

_INT_RE = re.compile(r"^\d+$", re.ASCII)
ONE_SECOND = timedelta(seconds=1)
ONE_MINUTE = timedelta(minutes=1)
ONE_MICROSECOND = timedelta(microseconds=1)
U8_MAX = 255  # croner reads numbers and steps as u8 and refuses a step that would overflow one


class CronError(ValueError):
    """The expression is not acceptable."""


def _value(field: int, token: str, item: str, range_end: bool = False) -> int:
    if _INT_RE.match(token):
        return int(token)
    try:
        return (DOW_RANGE_END_NAMES if field == DOW and range_end else NAMES[field])[token]
    except KeyError:
        if not token:
            raise CronError(f"{item!r}: a number is missing (negative numbers are not allowed)") from None
        raise CronError(f"{token!r} is not acceptable") from None


def _span(field: int, item: str) -> tuple[int, int, int]:
    """One list item as (low, high, step), by croner's rules: `*`, `a`, `a-b`, each with
    an optional `/step`; `a/step` runs to the field's end."""
    lo_f, hi_f = RANGES[field]
    if field == DOW:
        hi_f = 7  # 7 is Sunday again, as in croner: "5-7", "1/2" reaches Sunday
    span, slash, step_text = item.partition("/")
    step = 1
    if slash:
        if not _INT_RE.match(step_text):
            raise CronError(f"{item!r}: the step must be a number")
        step = int(step_text)
        if step == 0:
            raise CronError(f"step {step_text!r} is not acceptable")
    if span == "*" and slash:
        low, high = lo_f, hi_f
    elif "-" in span:
        low_text, _, high_text = span.partition("-")
        if "-" in high_text:
            raise CronError(f"{item!r}: a range has one '-'")
        low, high = _value(field, low_text, item), _value(field, high_text, item, range_end=True)
    else:
        low = _value(field, span, item)
        high = hi_f if slash else low
    if low < lo_f or high > hi_f:
        raise CronError(f"{item} is out of range")
    if low > high:
        raise CronError(f"{item}: a range must run forward ({low}-{high} wraps past the end)")
    last = low + (high - low) // step * step
    if step > U8_MAX or last + step > U8_MAX:
        raise CronError(f"step {step} is too large")
    return low, high, step


@lru_cache(maxsize=4096)  # field texts repeat across expressions ("*", "0", "1-5"...)
def _expand_field(field: int, text: str) -> frozenset[int]:
    """The values of one field, exactly as croner 2.2 reads them (upstream Awa's parser).

    Only a literal `*` is the whole field unstated: `*` inside a list is refused, an equal
    range (`5-5`) is its one value, a range runs forward only, and empty list items are
    skipped. In day-of-week, 7 and a range's closing `sun` are Sunday."""
    lo_f, hi_f = RANGES[field]
    if text == "*":
        return frozenset(range(lo_f, hi_f + 1))
    values: set[int] = set()
    for item in text.split(","):
        if not item:
            continue
        if item == "*":
            raise CronError("'*' stands alone in a field (write '*' or a list of values)")
        low, high, step = _span(field, item)
        values.update(range(low, high + 1, step))
    if field == DOW and 7 in values:
        values.discard(7)
        values.add(0)
    return frozenset(values)


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
    if (dom_forms and dom_text == "*") or (dow_forms and dow_text == "*"):
        raise CronError("'*' stands alone in a field (write '*' or a list of values)")
    expressions[DOM], expressions[DOW] = dom_text, dow_text
    expanded = [_expand_field(i, text) if text else frozenset() for i, text in enumerate(expressions)]
    seconds = tuple(sorted(expanded[SECOND])) if has_seconds else (0,)
    # Only a literal `*` leaves a day field unrestricted (croner): `*/1`, `1-31` or a
    # field holding a form is restricted, so the other day field's match is OR-ed with it.
    dom_star = parts[2 + has_seconds] == "*"
    dow_star = parts[4 + has_seconds] == "*"
    doms = expanded[DOM]
    dows = expanded[DOW]
    rule = None
    if dom_forms or dow_forms:
        rule = DayRule(doms, dows, dom_star, dow_star, dom_forms, dow_forms)
    return CronFields(
        seconds=seconds,
        minutes=tuple(sorted(expanded[MINUTE])),
        hours=tuple(sorted(expanded[HOUR])),
        doms=doms,
        months=tuple(sorted(expanded[MONTH])),
        dows=dows,
        dom_star=dom_star,
        dow_star=dow_star,
        has_seconds=has_seconds,
        day_rule=rule,
    )
