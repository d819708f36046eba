"""Cron expressions: validation (S2) and fire arithmetic (S13, S14) around one compiled
object, `CronExpression`, built once per (expression, zone) by `compile_cron`.

Matching runs on naive local wall-clock times (cron/fields.py: croniter-compatible, far
cheaper uncached); cron/zones.py maps each candidate to one UTC instant by the DST rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from awa_tui.engine.core.errors import ValidationError, short_repr
from awa_tui.engine.cron.day_forms import DayFormError, split_dom, split_dow
from awa_tui.engine.cron.fields import CronError, cron_fields
from awa_tui.engine.cron.spread import H_WORD
from awa_tui.engine.cron.vocabulary import FIELD_NAMES_5, FIELD_NAMES_6, NAMES_BY_FIELD, NICKNAMES
from awa_tui.engine.cron.zones import ONE_SECOND, fold_end, local_naive, resolve_local

# Numbers, month/day names, * , - / and ? (read as *), plus the day forms L, W and #
# (cron/day_forms.py, S55); H is resolved per schedule name before parsing
# (cron/spread.py), never stored.
_FIELD_RE = re.compile(r"^[0-9A-Za-z*,/\-?#]+$")
_DAY_FORM_WORDS = frozenset({"l", "w", "lw"})
CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
CRON_EXPR_MAX = 256
CALENDAR_END_YEAR = 9999 - 60  # beyond this, a cron search may run off datetime's range


# Caching note: 100k schedules keep several cache entries each, and every cached object is
# scanned by each full collection of the cyclic GC (measured: ~30% of a cold first pass
# over 100k distinct expressions); plain tuples of text and instants, as lru_cache builds
# its keys, are not. So what is expensive is cached once, by text (the parse, the field
# sets, the zone, each fire), and a CronExpression is a light view over it, built per call:
# caching it too measured 8-15% slower on that cold pass (bench cron_math).


@dataclass(frozen=True, slots=True)
class CronSpec:
    """A validated cron expression, zone-free: its croniter form and whether it has seconds;
    for an interval (`@every 90s`), its period in microseconds and no cron fields."""

    source: str
    croniter_expr: str
    has_seconds: bool
    every_us: int | None = None


# Interval schedules (`@every 90s`): the instants are anchor + k * period for every whole k,
# the anchor being the schedule's start_at, else the Unix epoch, so every runtime computes
# the same instants from the row alone. The zone does not move them.
EVERY_WORD = "@every"
EVERY_MIN = timedelta(seconds=1)
EVERY_MAX = timedelta(days=366)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US = timedelta(microseconds=1)
_SUB_SECOND = re.compile(r"^(?:\d+ms|0?\.\d+s)$")
_EVERY = re.compile(r"^\s*@every(?:\s|$)", re.IGNORECASE)


def is_interval(expr: object) -> bool:
    """Whether `expr` is written as an interval (`@every ...`), valid or not (cheap)."""
    return isinstance(expr, str) and _EVERY.match(expr) is not None


def interval_words(expr: object, anchor: datetime | None = None, *, counted: bool = False) -> str | None:
    """An interval in an operator's words (`every 90s`; with `counted`, `every 90s, counted
    from 1970-01-01T00:00:00Z`), or None for anything else."""
    if not is_interval(expr):
        return None
    assert isinstance(expr, str)
    parts = expr.split(None, 1)
    if len(parts) < 2:
        return None
    words = f"every {parts[1].strip().lower()}"
    return f"{words}, counted from {iso_utc(EPOCH if anchor is None else anchor)}" if counted else words


def every_text(every: object, option: str = "every") -> str:
    """`every` as a duration's text: a string as given, a timedelta of whole seconds as `90s`."""
    if isinstance(every, timedelta):
        if every < timedelta(0):
            raise ValidationError(f"{option}: {every} is negative; an interval is at least 1s")
        if timedelta(0) < every < EVERY_MIN:
            raise ValidationError(f"{option}: {every} is below one second; an interval is at least 1s")
        if every % EVERY_MIN:
            raise ValidationError(f"{option}: {every} is not a whole number of seconds")
        return f"{every // EVERY_MIN}s"
    if not isinstance(every, str):
        raise ValidationError(f"{option}: expected a duration such as 90s, 15m, 1h30m, got {short_repr(every)}")
    return every


def parse_every(text: object, option: str = "every") -> timedelta:
    """An interval's period: a duration as the CLI writes them (`90s`, `15m`, `1h30m`),
    1 second to 366 days; a one-line ValidationError naming `option` otherwise."""
    from awa_tui.instants import parse_duration  # the CLI's duration grammar, one of it

    if not isinstance(text, str):
        raise ValidationError(f"{option}: expected a duration such as 90s, 15m, 1h30m, got {short_repr(text)}")
    word = text.strip().lower()
    if word.startswith("-"):
        raise ValidationError(f"{option}: {short_repr(text)} is negative; an interval is at least 1s")
    if _SUB_SECOND.match(word):
        raise ValidationError(f"{option}: {short_repr(text)} is below one second; an interval is at least 1s")
    period = parse_duration(text, option)
    if not period:
        raise ValidationError(f"{option}: {short_repr(text)} is zero; an interval is at least 1s")
    if period > EVERY_MAX:
        raise ValidationError(f"{option}: {short_repr(text)} is longer than 366 days")
    return period


def every_expression(every: object, option: str = "every") -> str:
    """The stored form of an interval given as a duration (text or timedelta): `@every 90s`
    (checked)."""
    text = every_text(every, option)
    parse_every(text, option)
    return f"{EVERY_WORD} {text.strip().lower()}"


@lru_cache(maxsize=65536)
def parse_cron(expr: str) -> CronSpec:
    """Validate a cron expression (S2, S60) and return its normalised form."""
    if not isinstance(expr, str):
        raise ValidationError(f"cron_expr: expected a string, got {short_repr(expr)}")
    if len(expr) > CRON_EXPR_MAX:
        raise ValidationError(
            f"cron_expr: at most {CRON_EXPR_MAX} characters, got {short_repr(expr)} ({len(expr)} characters)"
        )
    if CONTROL_CHARS.search(expr):  # a tab too, unlike croner (S60): the schema refuses it
        raise ValidationError(f"cron_expr: must not contain newlines or control characters: {short_repr(expr)}")
    text = " ".join(expr.split())
    if not text:
        raise ValidationError("cron_expr: empty expression")
    if H_WORD.search(text):
        raise ValidationError(
            f"cron_expr: H in {short_repr(expr)} picks a value per schedule name: declare it with "
            "periodic() or `cron override`, which store the resolved expression"
        )
    if is_interval(text):
        parts = text.split(" ", 1)
        if len(parts) == 1:
            raise ValidationError(f"cron_expr: {short_repr(expr)} names no interval; write a duration: @every 90s")
        period = parse_every(parts[1], "cron_expr")
        return CronSpec(expr, "", False, period // _ONE_US)
    if text.startswith("@"):
        nick = NICKNAMES.get(text.lower())
        if nick is None:
            raise ValidationError(
                f"cron_expr: unknown nickname {short_repr(expr)} (use one of {', '.join(NICKNAMES)})"
            )
        return CronSpec(expr, nick[0], False)
    fields = text.split(" ")
    names: tuple[str, ...]
    if len(fields) == 5:
        names = FIELD_NAMES_5
    elif len(fields) == 6:
        names = FIELD_NAMES_6
    else:
        raise ValidationError(
            f"cron_expr: {short_repr(expr)} has {len(fields)} fields; expected 5 "
            "(min hour dom month dow) or 6 (sec min hour dom month dow)"
        )
    for fname, value in zip(names, fields, strict=True):
        invalid = f"cron_expr: invalid {fname} field {short_repr(value)} in {short_repr(expr)}"
        if not _FIELD_RE.match(value):
            raise ValidationError(invalid)
        plain = value.lower()
        try:
            if fname == "day-of-month":
                plain = split_dom(plain)[0]
            elif fname == "day-of-week":
                plain = split_dow(plain)[0]
        except DayFormError as exc:
            raise ValidationError(f"{invalid}: {exc}") from None
        words = re.findall(r"[a-z]+", plain)
        if "#" in plain or any(w in _DAY_FORM_WORDS for w in words):
            raise ValidationError(f"{invalid}: L, W and # are day-of-month and day-of-week forms")
        for word in words:
            if word not in NAMES_BY_FIELD.get(fname, {}):
                raise ValidationError(invalid)
    has_seconds = len(fields) == 6
    body = " ".join(fields).replace("?", "*")  # croner reads ? as * in any field
    try:
        fields_ = cron_fields(body, has_seconds)
    except CronError as exc:
        raise ValidationError(f"cron_expr: invalid expression {short_repr(expr)}: {exc}") from None
    if fields_.next_after(datetime(2000, 1, 1)) is None:  # e.g. "0 0 31 2 *"
        raise ValidationError(f"cron_expr: invalid expression {short_repr(expr)}: it never fires")
    return CronSpec(expr, body, has_seconds)


@lru_cache(maxsize=1024)
def parse_timezone(name: str) -> tzinfo:
    """Resolve an IANA zone name (S2)."""
    if not isinstance(name, str) or not name or CONTROL_CHARS.search(name) or len(name) > 100:
        raise ValidationError(f"timezone: unknown time zone {short_repr(name)}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValidationError(f"timezone: unknown time zone {short_repr(name)}") from None


@dataclass(frozen=True)
class Fire:
    at: datetime  # UTC instant
    mark: str | None = None  # "gap" | "fold" when DST moved or de-duplicated it


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("aware datetime required")
    return value.astimezone(UTC)


class CronExpression(NamedTuple):  # immutable, and the cheapest to build: one per row and pass
    """A valid expression in one zone, with its fire arithmetic. Every instant in and out
    is UTC-aware."""

    spec: CronSpec
    timezone: str
    anchor: datetime | None = None  # an interval's start_at (None: the epoch); cron ignores it

    @property
    def zone(self) -> tzinfo:
        return parse_timezone(self.timezone)

    def next_after(self, after: datetime) -> Fire:
        """The first fire strictly after `after`."""
        spec = self.spec
        if spec.every_us is not None:
            return Fire(_every_after(spec.every_us, self.anchor, _utc(after)))
        return _next_after(spec.croniter_expr, spec.has_seconds, self.timezone, _utc(after))

    def latest_at_or_before(self, at_or_before: datetime) -> Fire | None:
        """The most recent fire at or before `at_or_before`, computed directly (S13 coalesce)."""
        spec = self.spec
        if spec.every_us is not None:
            try:
                return Fire(_every_after(spec.every_us, self.anchor, _utc(at_or_before), 0))
            except OverflowError:  # before the start of the calendar
                return None
        return _latest_at_or_before(spec.croniter_expr, spec.has_seconds, self.timezone, _utc(at_or_before))

    def between(self, after: datetime, until: datetime, limit: int) -> list[Fire]:
        """Fires in (after, until], ascending, at most `limit` (S13 catch_up)."""
        out: list[Fire] = []
        cursor = _utc(after)
        end = _utc(until)
        while len(out) < limit:
            fire = self.next_after(cursor)
            if fire.at > end:
                break
            out.append(fire)
            cursor = fire.at
        return out

    def upcoming(self, after: datetime, count: int) -> list[Fire]:
        """The next `count` fires after `after`, for previews (`cron next`, detail views).

        Near the end of the calendar (year 9999) the list is cut where the calendar ends:
        fewer fires, maybe none. An instant outside it in UTC, or one so close to its start
        that the zone's wall time falls before year 1, is a one-line ValidationError."""
        try:
            cursor = _utc(after)
        except OverflowError:
            raise ValidationError(
                f"after: {after.isoformat()} is outside the calendar in UTC (years 1..9999)"
            ) from None
        out: list[Fire] = []
        for _ in range(count):
            try:
                fire = self.next_after(cursor)
            except (OverflowError, ValueError) as exc:
                if cursor.year >= CALENDAR_END_YEAR:
                    break  # the calendar ends before the next fire
                if isinstance(exc, ValidationError):
                    raise
                raise ValidationError(
                    f"after: {cursor.isoformat()} is too close to the start of the calendar (year 1) "
                    f"to compute fires in zone {short_repr(self.timezone)}"
                ) from None
            out.append(fire)
            cursor = fire.at
        return out


def compile_cron(expr: str, timezone: str, anchor: datetime | None = None) -> CronExpression:
    """Validate `expr` (S2) then `timezone` (both cached) and return the expression in that zone.
    `anchor` is the schedule's start_at: an interval's instants are anchor + k * period
    (the epoch without one); a cron expression ignores it."""
    spec = parse_cron(expr)
    parse_timezone(timezone)
    return CronExpression(spec, timezone, anchor if spec.every_us is not None else None)


def _every_after(every_us: int, anchor: datetime | None, t: datetime, step: int = 1) -> datetime:
    """The interval instant strictly after `t` (step 1), or the one at or before it (step 0):
    whole microseconds, floor division, so no instant drifts."""
    base = EPOCH if anchor is None else _utc(anchor)
    k = ((t - base) // _ONE_US) // every_us + step
    return base + timedelta(microseconds=k * every_us)


# Keyed by text and instants, not by the CronExpression (see the caching note above).
@lru_cache(maxsize=262144)
def _next_after(croniter_expr: str, has_seconds: bool, zone_name: str, after: datetime) -> Fire:
    zone = parse_timezone(zone_name)
    naive, second_occurrence = local_naive(after, zone)
    if second_occurrence:
        # Every wall time left in this fold maps to its first occurrence, already past.
        naive = fold_end(naive, zone) - ONE_SECOND
    candidate: datetime | None = naive.replace(microsecond=0)
    fields_ = cron_fields(croniter_expr, has_seconds)
    for _ in range(100000):
        candidate = fields_.next_after(candidate)  # type: ignore[arg-type]
        if candidate is None:
            break
        at, mark = resolve_local(candidate, zone)
        if at > after:
            return Fire(at, mark)
    raise ValidationError(f"cron_expr: {croniter_expr!r} never fires")


@lru_cache(maxsize=262144)
def _latest_at_or_before(
    croniter_expr: str, has_seconds: bool, zone_name: str, at_or_before: datetime
) -> Fire | None:
    zone = parse_timezone(zone_name)
    naive, second_occurrence = local_naive(at_or_before, zone)
    start = fold_end(naive, zone) if second_occurrence else naive.replace(microsecond=0) + ONE_SECOND
    candidate: datetime | None = start
    fields_ = cron_fields(croniter_expr, has_seconds)
    for _ in range(100000):
        candidate = fields_.prev_before(candidate)  # type: ignore[arg-type]
        if candidate is None:  # nothing in the last 50 years
            return None
        at, mark = resolve_local(candidate, zone)
        if at <= at_or_before:
            return Fire(at, mark)
    return None


# Thin entry points for callers holding the expression and zone as text (views, previews).


def next_fire(cron_expr: str, timezone: str, after: datetime, anchor: datetime | None = None) -> Fire:
    """The first fire strictly after `after` (UTC instants); `anchor` as for compile_cron."""
    return compile_cron(cron_expr, timezone, anchor).next_after(after)


def upcoming_fires(cron_expr: str, timezone: str, after: datetime, count: int,
                   anchor: datetime | None = None) -> list[Fire]:
    """See `CronExpression.upcoming`; `anchor` as for compile_cron."""
    return compile_cron(cron_expr, timezone, anchor).upcoming(after, count)


def refuse_interval_upstream(cron_expr: str) -> None:
    """Upstream Awa (croner) has no interval form: its leader never fires `@every`."""
    if is_interval(cron_expr):
        raise ValidationError(
            f"cron_expr: {short_repr(cron_expr)} is an interval; upstream Awa has no interval schedules, "
            "its leader never fires it"
        )


def iso_utc(instant: datetime) -> str:
    """ISO-8601 UTC with a Z suffix, as stamped into job metadata (S12)."""
    # isoformat() prints the fraction only when non-zero, as the format wants; it is
    # several times cheaper than strftime, and a 100k-fire pass calls this 100k times.
    return _utc(instant).replace(tzinfo=None).isoformat() + "Z"
