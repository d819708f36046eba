"""Human descriptions of common cron shapes ("every 5 minutes", "weekdays at 09:00").

Anything unusual falls back to the expression itself: a wrong description is worse than
none, so only shapes that are certainly understood are described.
"""

from __future__ import annotations

import re
from functools import lru_cache

from awa_tui.engine.cron.day_forms import ORDINALS
from awa_tui.engine.cron.expression import interval_words, is_interval
from awa_tui.engine.cron.vocabulary import DOW_NAMES, MONTH_ABBREVIATIONS, MONTH_NAMES, NICKNAMES

_DAYS = ["Sundays", "Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays"]
_MONTHS = [m.capitalize() for m in MONTH_ABBREVIATIONS]
_DAY_NAMES = [d[:-1] for d in _DAYS]  # "Tuesday"
_NUM = re.compile(r"^\d+$")
_STEP = re.compile(r"^\*/(\d+)$")
_LAST_OFFSET = re.compile(r"^L-(\d+)$")
_NEAREST = re.compile(r"^(\d+)W$")
_NTH = re.compile(r"^(\d|[A-Z]{3})(?:#([1-5L])|(L))$")
_EQUAL_RANGE = re.compile(r"^(\w+)-\1$")


def _one_value_ranges(field: str) -> str:
    """`5-5` is the one value 5 (S60), so it reads as 5; `SUN-SUN` is every day (0-7) and stays."""
    return ",".join(p if p.lower() == "sun-sun" else _EQUAL_RANGE.sub(r"\1", p) for p in field.split(","))


def _plural(n: int, unit: str) -> str:
    return f"every {unit}" if n == 1 else f"every {n} {unit}s"


def _numbers(field: str) -> list[int] | None:
    """A comma list of plain numbers, or None."""
    parts = field.split(",")
    if all(_NUM.match(p) for p in parts):
        return [int(p) for p in parts]
    return None


def _day_of_week(field: str) -> str | None:
    lowered = field.lower()
    if lowered in ("1-5", "mon-fri"):
        return "weekdays"
    if lowered in ("0,6", "6,0", "sat,sun", "sun,sat", "6-7"):
        return "weekends"
    days = []
    for part in lowered.split(","):
        if _NUM.match(part) and int(part) <= 7:
            days.append(_DAYS[int(part) % 7])
        elif part in DOW_NAMES:
            days.append(_DAYS[DOW_NAMES[part]])
        else:
            return None
    return ", ".join(days)


def _day_number(n: int) -> str:
    """15 -> "15th", 22 -> "22nd"."""
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _weekday_name(token: str) -> str | None:
    if _NUM.match(token) and int(token) <= 7:
        return _DAY_NAMES[int(token) % 7]
    number = DOW_NAMES.get(token.lower())
    return None if number is None else _DAY_NAMES[number]


def _day_form(dom: str, dow: str) -> str | None:
    """One day form (S55) with the other day field `*`, in words; None otherwise."""
    dom, dow = dom.upper(), dow.upper()
    if dow == "*":
        if dom == "L":
            return "on the last day of the month"
        if dom == "LW":
            return "on the last weekday of the month"
        offset = _LAST_OFFSET.match(dom)
        if offset:
            n = int(offset.group(1))
            return f"{n} day{'s' if n > 1 else ''} before the last day of the month"
        nearest = _NEAREST.match(dom)
        if nearest:
            return f"on the weekday nearest the {_day_number(int(nearest.group(1)))}"
        return None
    nth = _NTH.match(dow)
    if dom != "*" or nth is None:
        return None
    day = _weekday_name(nth.group(1))
    if day is None:
        return None
    which = nth.group(2) or nth.group(3)
    ordinal = "last" if which == "L" else ORDINALS[int(which) - 1]
    return f"on the {ordinal} {day} of the month"


def _months(field: str) -> str | None:
    """ "" for every month, ", in Feb, Mar" for a list of months, None for other shapes."""
    if field == "*":
        return ""
    names = []
    for part in field.split(","):
        number = int(part) if _NUM.match(part) else MONTH_NAMES.get(part.lower())
        if number is None or not 1 <= number <= 12:
            return None
        names.append(_MONTHS[number - 1])
    return ", in " + ", ".join(names)


def _times(minutes: list[int], hours: list[int]) -> str:
    return ", ".join(f"{h:02d}:{m:02d}" for h in hours for m in minutes)


@lru_cache(maxsize=4096)  # schedules share few expressions; a page describes each once
def describe(expr: str) -> str:
    """A short description of `expr`, or `expr` itself when the shape is not a common one."""
    text = " ".join(expr.split()).replace("?", "*")  # ? reads as * (S55)
    interval = interval_words(text)
    if interval is not None or is_interval(text):
        return interval or text
    if text.startswith("@"):
        nickname = NICKNAMES.get(text.lower())
        return text if nickname is None else nickname[1]
    fields = [_one_value_ranges(f) for f in text.split(" ")]
    if len(fields) == 6:
        return _describe_seconds(fields) or text
    if len(fields) == 5:
        return _describe_minutes(fields) or text
    return text


def _describe_seconds(fields: list[str]) -> str | None:
    sec, rest = fields[0], fields[1:]
    if any(f != "*" for f in rest):
        # Seconds on top of a restricted minute/hour/day: only describe the plain case.
        if sec == "0":
            return _describe_minutes(rest)
        return None
    if sec == "*":
        return "every second"
    step = _STEP.match(sec)
    if step:
        return _plural(int(step.group(1)), "second")
    nums = _numbers(sec)
    if nums:
        return "every minute at " + ", ".join(f":{n:02d}s" for n in nums)
    return None


def _describe_minutes(fields: list[str]) -> str | None:
    minute, hour, dom, month, dow = fields
    if (dom, month, dow) == ("*", "*", "*"):
        if minute == "*" and hour == "*":
            return "every minute"
        step = _STEP.match(minute)
        if step and hour == "*":
            return _plural(int(step.group(1)), "minute")
        mins = _numbers(minute)
        if mins is not None and hour == "*":
            return "hourly at " + ", ".join(f":{m:02d}" for m in mins)
        hstep = _STEP.match(hour)
        if mins is not None and len(mins) == 1 and hstep:
            return f"{_plural(int(hstep.group(1)), 'hour')} at :{mins[0]:02d}"
    mins = _numbers(minute)
    hours = _numbers(hour)
    if mins is None or hours is None or len(mins) * len(hours) > 4:
        return None
    at = _times(mins, hours)
    form = _day_form(dom, dow)
    if form is not None:
        months = _months(month)
        sep = " " if form.startswith("on ") else ", "
        return None if months is None else f"at {at}{sep}{form}{months}"
    if (dom, month) == ("*", "*"):
        if dow == "*":
            return f"daily at {at}"
        days = _day_of_week(dow)
        return f"{days} at {at}" if days else None
    if dow != "*":
        return None
    doms = _numbers(dom)
    if doms is None:
        return None
    on = ", ".join(str(d) for d in doms)
    if month == "*":
        return f"monthly on day {on} at {at}"
    numbers = _numbers(month)
    if numbers and all(1 <= m <= 12 for m in numbers):
        return f"yearly on {', '.join(_MONTHS[m - 1] for m in numbers)} {on} at {at}"
    return None
