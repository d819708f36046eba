"""Human descriptions of common cron shapes ("every 5 minutes", "weekdays at 09:00").

Anything unusual falls back to the expression itself: a wrong description is worse than
none, so only shapes that are certainly understood are described.
"""

from __future__ import annotations

import re
from functools import lru_cache

from awa_tui.engine.cron.vocabulary import DOW_NAMES, MONTH_ABBREVIATIONS, NICKNAMES

_DAYS = ["Sundays", "Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays"]
_MONTHS = [m.capitalize() for m in MONTH_ABBREVIATIONS]
_NUM = re.compile(r"^\d+$")
_STEP = re.compile(r"^\*/(\d+)$")


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


def _times(minutes: list[int], hours: list[int]) -> str:
    return ", ".join(f"{h:02d}:{m:02d}" for h in hours for m in minutes)


@lru_cache(maxsize=4096)  # schedules share few expressions; a page describes each once
def describe(expr: str) -> str:
    """A short description of `expr`, or `expr` itself when the shape is not a common one."""
    text = " ".join(expr.split())
    if text.startswith("@"):
        nickname = NICKNAMES.get(text.lower())
        return text if nickname is None else nickname[1]
    fields = text.split(" ")
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
    months = _numbers(month)
    if months and all(1 <= m <= 12 for m in months):
        return f"yearly on {', '.join(_MONTHS[m - 1] for m in months)} {on} at {at}"
    return None
