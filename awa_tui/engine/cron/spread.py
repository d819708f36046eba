"""Spreading a fleet of schedules: Jenkins' `H` in cron fields and per-fire jitter.

Both pick a value from a documented hash that never changes between versions (tests pin
exact values): SHA-256 of UTF-8 text, its first 8 bytes read as a big-endian unsigned
integer, taken modulo the size of the range. Python's hash() (salted per process) and
Postgres' internal hashes (free to change between major versions) are not used: two
leaders, a replay and a restart must agree.

- `H` (spread_value): the text is "awa-H:" + field name + ":" + schedule name, so the
  minute and the hour of one schedule are independent.
- jitter (jitter_offset_ms): the text is "awa-jitter:" + schedule name + "\\x00" + the fire
  instant as stamped into the job (cron_fire_time, ISO-8601 UTC with a Z).
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta
from functools import lru_cache

from awa_tui.engine.core.errors import ValidationError, short_repr
from awa_tui.engine.cron.fields import CronError, cron_fields
from awa_tui.engine.cron.vocabulary import FIELD_NAMES_5, FIELD_NAMES_6

# Each field's range for H, by written name. Day-of-month spreads over 1..28 (as Jenkins
# does) so that the day exists in every month; an explicit H(a-b) may go to 31.
H_RANGES = {
    "second": (0, 59), "minute": (0, 59), "hour": (0, 23), "day-of-month": (1, 28),
    "month": (1, 12), "day-of-week": (0, 6),
}
FIELD_LIMITS = {**H_RANGES, "day-of-month": (1, 31)}
H_WORD = re.compile(r"(?<![A-Za-z])H(?![A-Za-z])")  # H, not the h of THU
_H_FORM = re.compile(r"^H(?:\((\d{1,2})-(\d{1,2})\))?(?:/(\d{1,2}))?$")
JITTER_MAX_MS = 366 * 24 * 3600 * 1000  # a year and a day: longer than any cron period


def stable_hash(text: str) -> int:
    """The documented hash: first 8 bytes of SHA-256(UTF-8 text), big-endian."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def spread_value(name: str, field: str, low: int, high: int) -> int:
    """The value H picks in [low, high] for schedule `name` in `field`."""
    return low + stable_hash(f"awa-H:{field}:{name}") % (high - low + 1)


def has_spread(expr: object) -> bool:
    """Whether a cron expression uses H (cheap; no validation)."""
    return isinstance(expr, str) and "H" in expr and H_WORD.search(expr) is not None


# One field of a resolution plan: the text as written, or H's (field, low, high, step).
_Pick = tuple[str, int, int, int | None]


def _plan_field(field: str, text: str, expr: str) -> str | _Pick:
    if not H_WORD.search(text):
        return text
    match = _H_FORM.match(text)
    if match is None:
        raise ValidationError(
            f"cron_expr: H cannot apply in {field} field {short_repr(text)} of {short_repr(expr)}: "
            "H stands for a whole field (H, H(a-b), H/n or H(a-b)/n)"
        )
    low_t, high_t, step_t = match.groups()
    limit_low, limit_high = FIELD_LIMITS[field]
    low, high = (int(low_t), int(high_t)) if low_t is not None else H_RANGES[field]
    if not limit_low <= low <= high <= limit_high:
        raise ValidationError(
            f"cron_expr: empty or out-of-range H range {short_repr(text)} in the {field} field of "
            f"{short_repr(expr)} (the field allows {limit_low}-{limit_high})"
        )
    if step_t is None:
        return field, low, high, None
    step = int(step_t)
    if not 1 <= step <= high - low + 1:
        raise ValidationError(
            f"cron_expr: H step /{step} in {short_repr(text)} of {short_repr(expr)} must be 1..{high - low + 1}"
        )
    return field, low, high, step


@lru_cache(maxsize=4096)
def _plan(expr: str) -> tuple[str | _Pick, ...] | None:
    """How `expr` resolves for any name (a fleet shares a few expressions: parsed once);
    None when it is left as it is (no H). A refusal is raised, never cached."""
    if not has_spread(expr):
        return None
    text = " ".join(expr.split())
    if text.startswith("@"):
        raise ValidationError(f"cron_expr: H cannot apply in a nickname: {short_repr(expr)}")
    fields = text.split(" ")
    names = FIELD_NAMES_5 if len(fields) == 5 else FIELD_NAMES_6 if len(fields) == 6 else None
    if names is None:
        return None  # the parser names the field-count error
    return tuple(_plan_field(f, v, expr) for f, v in zip(names, fields, strict=True))


def _pick(name: str, field: str, low: int, high: int, step: int | None) -> str:
    if step is None:
        return str(spread_value(name, field, low, high))
    first = spread_value(name, field, low, low + step - 1)
    return ",".join(str(v) for v in range(first, high + 1, step))


def resolve_spread(expr: str, name: str) -> str:
    """`expr` with every H field replaced by the value(s) it picks for schedule `name`.

    An expression without H comes back as it is. The result is plain cron (numbers and
    lists), which the parser then validates as usual."""
    plan = _plan(expr)  # the caller has usually asked has_spread already: not searched again
    if plan is None:
        return expr
    return " ".join(part if isinstance(part, str) else _pick(name, *part) for part in plan)


# --- jitter -----------------------------------------------------------------------------


def jitter_offset_ms(name: str, fire_iso: str, jitter_ms: int) -> int:
    """The delay in [0, jitter_ms) of the job of schedule `name` fired at `fire_iso`."""
    return stable_hash(f"awa-jitter:{name}\x00{fire_iso}") % jitter_ms


PERIOD_SAMPLE = 800  # consecutive fires examined for the shortest gap (see shortest_period)


@lru_cache(maxsize=4096)
def shortest_period(croniter_expr: str, has_seconds: bool) -> timedelta:
    """The shortest gap between two consecutive fires, in wall-clock time.

    Measured over PERIOD_SAMPLE consecutive fires from 2000-01-01 (a leap year starting a
    28-year weekday cycle): enough for every gap a cron expression can have to show up
    (a yearly expression samples 800 years). A DST change can shorten one gap by the
    shift; jitter is checked against the wall-clock period."""
    fields = cron_fields(croniter_expr, has_seconds)
    at: datetime | None = fields.next_after(datetime(2000, 1, 1))
    best: timedelta | None = None
    for _ in range(PERIOD_SAMPLE):
        if at is None:
            break
        following = fields.next_after(at)
        if following is None:
            break
        gap = following - at
        if best is None or gap < best:
            best = gap
            if best <= timedelta(seconds=1):
                break  # nothing is shorter
        at = following
    if best is None:
        raise CronError("fewer than two fires")
    return best


def check_jitter(jitter_ms: object, croniter_expr: str, has_seconds: bool, written: str,
                 period: timedelta | None = None) -> int:
    """`jitter_ms` when it is a whole number of milliseconds in [0, shortest period);
    `period` is an interval's (then the cron fields are not read)."""
    if isinstance(jitter_ms, bool) or not isinstance(jitter_ms, int):
        raise ValidationError(f"jitter: expected a whole number of milliseconds, got {short_repr(jitter_ms)}")
    if jitter_ms < 0:
        raise ValidationError(f"jitter: must not be negative, got {timedelta(milliseconds=jitter_ms)}")
    if jitter_ms == 0:
        return 0
    if period is None:
        period = shortest_period(croniter_expr, has_seconds)
    if timedelta(milliseconds=jitter_ms) >= period or jitter_ms > JITTER_MAX_MS:
        raise ValidationError(
            f"jitter: {timedelta(milliseconds=jitter_ms)} must be shorter than the shortest period "
            f"{period} of {short_repr(written)}"
        )
    return jitter_ms


def jitter_ms_of(jitter: object) -> int:
    """A `periodic(jitter=...)` value as whole milliseconds (timedelta or None)."""
    if jitter is None:
        return 0
    if not isinstance(jitter, timedelta):
        raise ValidationError(f"jitter: expected a timedelta, got {short_repr(jitter)}")
    if jitter < timedelta(0):
        raise ValidationError(f"jitter: must not be negative, got -{-jitter}")
    if jitter % timedelta(milliseconds=1):
        raise ValidationError(f"jitter: must be a whole number of milliseconds, got {jitter}")
    return jitter // timedelta(milliseconds=1)
