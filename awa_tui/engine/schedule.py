"""Schedule definitions: validation (S1, S2) and fire arithmetic (S13, S14).

Cron matching runs on naive *local wall-clock* times (cronfields: croniter-compatible,
far cheaper uncached, and it knows nothing of zones); every candidate is then mapped to
one UTC instant by the DST rules of S14: a wall time inside a spring-forward gap fires at
the first instant after the gap, a wall time that occurs twice fires at its first
occurrence only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from decimal import Decimal
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from awa_tui.engine.cron.fields import CronError, cron_fields
from awa_tui.engine.errors import ValidationError

POLICIES = ("coalesce", "catch_up")
NICKNAMES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@hourly": "0 * * * *",
}
FIELD_NAMES_5 = ("minute", "hour", "day-of-month", "month", "day-of-week")
FIELD_NAMES_6 = ("second", *FIELD_NAMES_5)
# Plain cron only: numbers, month/day names, * , - /. No L, W, #, ?, H extensions.
_FIELD_RE = re.compile(r"^[0-9A-Za-z*,/\-]+$")
_NAMES_OK = {
    "month": {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"},
    "day-of-week": {"sun", "mon", "tue", "wed", "thu", "fri", "sat"},
}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Bidi controls and zero-width characters: a name holding them can read as another name
# in a confirm dialog. The database refuses the same set (migration v004).
_LOOKALIKE = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]")
CRON_EXPR_MAX = 256
JSON_MAX_BYTES = 256 * 1024  # args and metadata, as Postgres prints them (jsonb::text)
ONE_SECOND = timedelta(seconds=1)


def _short(value: object, limit: int = 60) -> str:
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # a 5000-digit int, a 10k-deep dict: no repr
        text = f"<{type(value).__name__} too large to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class CronSpec:
    """A parsed cron expression: the croniter form and whether it has seconds."""

    source: str
    croniter_expr: str
    has_seconds: bool


@lru_cache(maxsize=65536)
def parse_cron(expr: str) -> CronSpec:
    """Validate a cron expression (S2) and return its croniter form."""
    if not isinstance(expr, str):
        raise ValidationError(f"cron_expr: expected a string, got {_short(expr)}")
    if len(expr) > CRON_EXPR_MAX:
        raise ValidationError(
            f"cron_expr: at most {CRON_EXPR_MAX} characters, got {_short(expr)} ({len(expr)} characters)"
        )
    if _CONTROL.search(expr):
        raise ValidationError(f"cron_expr: must not contain newlines or control characters: {_short(expr)}")
    text = " ".join(expr.split())
    if not text:
        raise ValidationError("cron_expr: empty expression")
    if text.startswith("@"):
        nick = NICKNAMES.get(text.lower())
        if nick is None:
            raise ValidationError(
                f"cron_expr: unknown nickname {_short(expr)} (use one of {', '.join(NICKNAMES)})"
            )
        return CronSpec(expr, nick, False)
    fields = text.split(" ")
    if len(fields) == 5:
        names = FIELD_NAMES_5
    elif len(fields) == 6:
        names = FIELD_NAMES_6
    else:
        raise ValidationError(
            f"cron_expr: {_short(expr)} has {len(fields)} fields; expected 5 "
            "(min hour dom month dow) or 6 (sec min hour dom month dow)"
        )
    for fname, value in zip(names, fields, strict=True):
        if not _FIELD_RE.match(value):
            raise ValidationError(f"cron_expr: invalid {fname} field {_short(value)} in {_short(expr)}")
        for word in re.findall(r"[A-Za-z]+", value):
            if word.lower() not in _NAMES_OK.get(fname, set()):
                raise ValidationError(
                    f"cron_expr: invalid {fname} field {_short(value)} in {_short(expr)}"
                )
    has_seconds = len(fields) == 6
    body = " ".join(fields)
    try:
        fields_ = cron_fields(body, has_seconds)
    except CronError as exc:
        raise ValidationError(f"cron_expr: invalid expression {_short(expr)}: {exc}") from None
    if fields_.next_after(datetime(2000, 1, 1)) is None:  # e.g. "0 0 31 2 *"
        raise ValidationError(f"cron_expr: invalid expression {_short(expr)}: it never fires")
    return CronSpec(expr, body, has_seconds)


@lru_cache(maxsize=1024)
def parse_timezone(name: str) -> tzinfo:
    """Resolve an IANA zone name (S2)."""
    if not isinstance(name, str) or not name or _CONTROL.search(name) or len(name) > 100:
        raise ValidationError(f"timezone: unknown time zone {_short(name)}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValidationError(f"timezone: unknown time zone {_short(name)}") from None


# --- wall clock <-> UTC under the S14 rules ---------------------------------------------


def _resolve_local(naive: datetime, zone: tzinfo) -> tuple[datetime, str | None]:
    """Map a naive local wall time to its one fire instant in UTC, and a DST mark.

    Returns ("gap" if the wall time does not exist, "fold" if it occurs twice, else None).
    """
    first = naive.replace(tzinfo=zone, fold=0)
    second = naive.replace(tzinfo=zone, fold=1)
    u0 = first.astimezone(UTC)
    u1 = second.astimezone(UTC)
    if u0 == u1:
        return u0, None
    # zoneinfo: for a gap, fold=0 uses the offset before the gap (u0 later than u1);
    # for a fold, fold=0 is the first occurrence (u0 earlier than u1).
    if u0 < u1:
        return u0, "fold"
    # Inside a gap: the first instant after the gap is the transition itself, which is
    # the wall time read with the *later* offset rounded up to the gap's end.
    return _gap_end(naive, zone), "gap"


def _gap_end(naive: datetime, zone: tzinfo) -> datetime:
    """The UTC instant at which the gap containing `naive` ends (the transition)."""
    # Search forward in wall time for the first existing minute; gaps are < 1 day.
    lo = naive.replace(tzinfo=zone, fold=1).astimezone(UTC)  # earlier estimate
    hi = naive.replace(tzinfo=zone, fold=0).astimezone(UTC)  # later estimate
    # Binary search the UTC instant where the offset changes, between lo and hi.
    while hi - lo > ONE_SECOND:
        mid = lo + (hi - lo) / 2
        mid = mid.replace(microsecond=0)
        local_mid = mid.astimezone(zone).replace(tzinfo=None)
        if local_mid < naive:
            lo = mid
        else:
            hi = mid
    # `hi` is the first second whose wall time is at or past `naive`: the transition.
    return hi


def _local_naive(instant: datetime, zone: tzinfo) -> tuple[datetime, bool]:
    """Wall time of a UTC instant, and whether it is the second occurrence of a fold."""
    local = instant.astimezone(zone)
    naive = local.replace(tzinfo=None)
    if local.fold == 1:
        again = naive.replace(tzinfo=zone, fold=0).astimezone(UTC)
        if again != instant.astimezone(UTC):
            return naive, True
    return naive, False


def _fold_end(naive: datetime, zone: tzinfo) -> datetime:
    """The first wall time after the fold that contains `naive` (both occurrences past)."""
    # The fold's length is the offset difference; its end in wall time is naive + rest.
    first = naive.replace(tzinfo=zone, fold=0).astimezone(UTC)
    second = naive.replace(tzinfo=zone, fold=1).astimezone(UTC)
    length = second - first
    # Wall times from (transition wall time) to +length repeat; step forward by minutes
    # until the wall time is no longer ambiguous.
    probe = naive
    step = timedelta(minutes=1)
    limit = naive + length + step
    while probe <= limit:
        a = probe.replace(tzinfo=zone, fold=0).astimezone(UTC)
        b = probe.replace(tzinfo=zone, fold=1).astimezone(UTC)
        if a == b:
            return probe.replace(second=0, microsecond=0)
        probe = (probe + step).replace(second=0, microsecond=0)
    return limit


@dataclass(frozen=True)
class Fire:
    at: datetime  # UTC instant
    mark: str | None = None  # "gap" | "fold" when DST moved or de-duplicated it


@lru_cache(maxsize=262144)
def _next_after(croniter_expr: str, has_seconds: bool, zone_name: str, after: datetime) -> Fire:
    zone = parse_timezone(zone_name)
    naive, second_occurrence = _local_naive(after, zone)
    if second_occurrence:
        # Every wall time left in this fold maps to its first occurrence, already past.
        naive = _fold_end(naive, zone) - ONE_SECOND
    candidate: datetime | None = naive.replace(microsecond=0)
    fields_ = cron_fields(croniter_expr, has_seconds)
    for _ in range(100000):
        candidate = fields_.next_after(candidate)  # type: ignore[arg-type]
        if candidate is None:
            break
        at, mark = _resolve_local(candidate, zone)
        if at > after:
            return Fire(at, mark)
    raise ValidationError(f"cron_expr: {croniter_expr!r} never fires")


@lru_cache(maxsize=262144)
def _latest_at_or_before(
    croniter_expr: str, has_seconds: bool, zone_name: str, at_or_before: datetime
) -> Fire | None:
    zone = parse_timezone(zone_name)
    naive, second_occurrence = _local_naive(at_or_before, zone)
    start = _fold_end(naive, zone) if second_occurrence else naive.replace(microsecond=0) + ONE_SECOND
    candidate: datetime | None = start
    fields_ = cron_fields(croniter_expr, has_seconds)
    for _ in range(100000):
        candidate = fields_.prev_before(candidate)  # type: ignore[arg-type]
        if candidate is None:  # nothing in the last 50 years
            return None
        at, mark = _resolve_local(candidate, zone)
        if at <= at_or_before:
            return Fire(at, mark)
    return None


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("aware datetime required")
    return value.astimezone(UTC)


@dataclass(frozen=True)
class Schedule:
    """One periodic schedule, validated at construction (S1, S2)."""

    name: str
    cron_expr: str
    kind: str
    args: dict[str, Any] = field(default_factory=dict)
    timezone: str = "UTC"
    queue: str = "default"
    priority: int = 2
    max_attempts: int = 25
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    missed_fire_policy: str = "coalesce"

    def __post_init__(self) -> None:
        _check_text("name", self.name)
        if _LOOKALIKE.search(self.name):
            raise ValidationError(
                f"name: must not contain bidi controls or zero-width characters: {_short(self.name)}"
            )
        parse_cron(self.cron_expr)
        parse_timezone(self.timezone)
        _check_text("kind", self.kind)
        _check_text("queue", self.queue)
        if isinstance(self.priority, bool) or not isinstance(self.priority, int) or not 1 <= self.priority <= 4:
            raise ValidationError(f"priority: must be an integer 1..4, got {_short(self.priority)}")
        if (
            isinstance(self.max_attempts, bool)
            or not isinstance(self.max_attempts, int)
            or not 1 <= self.max_attempts <= 1000
        ):
            raise ValidationError(
                f"max_attempts: must be an integer 1..1000, got {_short(self.max_attempts)}"
            )
        if isinstance(self.tags, str) or not isinstance(self.tags, (tuple, list)):
            raise ValidationError(f"tags: must be a list of strings, got {_short(self.tags)}")
        if len(self.tags) > 20:
            raise ValidationError(f"tags: at most 20 tags, got {len(self.tags)}")
        for tag in self.tags:
            _check_text("tags", tag)
        object.__setattr__(self, "tags", tuple(self.tags))
        _check_json_object("args", self.args)
        _check_json_object("metadata", self.metadata)
        if self.missed_fire_policy not in POLICIES:
            raise ValidationError(
                f"missed_fire_policy: must be 'coalesce' or 'catch_up', got {_short(self.missed_fire_policy)}"
            )

    @classmethod
    def build(
        cls,
        name: str,
        cron_expr: str,
        kind: str,
        args: dict[str, Any] | None = None,
        *,
        timezone: str = "UTC",
        queue: str = "default",
        priority: int = 2,
        max_attempts: int = 25,
        tags: tuple[str, ...] | list[str] = (),
        metadata: dict[str, Any] | None = None,
        missed_fire_policy: str = "coalesce",
    ) -> Schedule:
        """The `periodic()` signature of S1."""
        return cls(
            name=name,
            cron_expr=cron_expr,
            kind=kind,
            args={} if args is None else args,
            timezone=timezone,
            queue=queue,
            priority=priority,
            max_attempts=max_attempts,
            tags=tuple(tags) if isinstance(tags, (list, tuple)) else tags,  # type: ignore[arg-type]
            metadata={} if metadata is None else metadata,
            missed_fire_policy=missed_fire_policy,
        )

    def definition(self) -> dict[str, Any]:
        """The definition columns, canonical (used for sync and manifests)."""
        return {
            "name": self.name,
            "cron_expr": self.cron_expr,
            "timezone": self.timezone,
            "kind": self.kind,
            "queue": self.queue,
            "args": self.args,
            "priority": self.priority,
            "max_attempts": self.max_attempts,
            "tags": list(self.tags),
            "metadata": self.metadata,
            "missed_fire_policy": self.missed_fire_policy,
        }


def _check_text(fname: str, value: object) -> None:
    if not isinstance(value, str):
        raise ValidationError(f"{fname}: expected a string, got {_short(value)}")
    if not 1 <= len(value) <= 200:
        raise ValidationError(f"{fname}: must be 1..200 characters, got {_short(value)} ({len(value)} characters)")
    if _CONTROL.search(value):
        raise ValidationError(f"{fname}: must not contain control characters: {_short(value)}")
    _check_unicode(fname, value)


def _check_unicode(fname: str, value: str) -> None:
    """Postgres stores UTF-8: a lone surrogate (invalid bytes decoded with surrogateescape,
    a broken JSON escape) would fail at the first sync instead of here."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{fname}: must be valid Unicode text (no lone surrogates): {_short(value)}") from None


def _check_json_object(fname: str, value: object) -> None:
    if not isinstance(value, dict):
        raise ValidationError(f"{fname}: must be a JSON object (dict), got {_short(value)}")
    if not value:
        return  # {} (the default args and metadata): nothing to encode, 100k times at startup
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{fname}: not JSON-serialisable ({exc}): {_short(value)}") from None
    except RecursionError:
        raise ValidationError(f"{fname}: nested too deeply to store as JSON") from None
    _check_json_members(fname, value)
    size = _stored_json_size(value)
    if size > JSON_MAX_BYTES:
        raise ValidationError(f"{fname}: at most {JSON_MAX_BYTES} bytes as JSON, got {size} bytes")


def _stored_json_size(value: object) -> int:
    """Bytes of `value` as Postgres prints it (jsonb::text), which the database cap of
    migration v004 measures: ", " and ": " separators, raw UTF-8, and numbers written out
    in full (1e300 is 301 digits there). Never less than the database's count, so a value
    accepted here is never refused at sync."""
    if isinstance(value, dict):
        items = [_stored_json_size(k) + 2 + _stored_json_size(v) for k, v in value.items()]
        return 2 + sum(items) + 2 * max(0, len(items) - 1)
    if isinstance(value, (list, tuple)):
        items = [_stored_json_size(v) for v in value]
        return 2 + sum(items) + 2 * max(0, len(items) - 1)
    if isinstance(value, str):
        return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    if isinstance(value, float):
        return len(format(Decimal(repr(value)), "f"))
    return len(json.dumps(value))  # int, bool, None


def _check_json_members(fname: str, value: object) -> None:
    """Keys are strings (json.dumps would silently turn 1 into "1") and no string holds a
    NUL, which jsonb refuses: caught here, not as a database error at the first sync."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(f"{fname}: object keys must be strings, got {_short(key)}")
            _check_json_members(fname, key)
            _check_json_members(fname, item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check_json_members(fname, item)
    elif isinstance(value, str):
        if "\x00" in value:
            raise ValidationError(f"{fname}: must not contain NUL characters, got {_short(value)}")
        _check_unicode(fname, value)


# --- stored rows that cannot fire (S15) ----------------------------------------------------


def check_stored(row: Mapping[str, Any]) -> None:
    """Raise a one-line ValidationError when a stored schedule row cannot fire.

    `row["fault"]` is what SQL judged (awa.cron_job_fault, migration v004: instants Python
    cannot load, JSON that is not an object, numbers out of range); the expression, zone
    and policy are judged here by the same parser registration uses. The evaluator and
    every view call this (or row_fault): one definition of BROKEN."""
    if row["fault"]:
        raise ValidationError(row["fault"])
    parse_cron(row["cron_expr"])
    parse_timezone(row["timezone"])
    if row["missed_fire_policy"] not in POLICIES:
        raise ValidationError(f"missed_fire_policy: unknown policy {_short(row['missed_fire_policy'])}")


def row_fault(row: Mapping[str, Any]) -> str | None:
    """Why a stored row is BROKEN (see check_stored), or None."""
    try:
        check_stored(row)
    except ValidationError as exc:
        return str(exc)
    return None


# --- public fire arithmetic ------------------------------------------------------------


def next_fire(cron_expr: str, timezone: str, after: datetime) -> Fire:
    """The first fire strictly after `after` (UTC instants)."""
    spec = parse_cron(cron_expr)
    return _next_after(spec.croniter_expr, spec.has_seconds, timezone, _utc(after))


def latest_fire(cron_expr: str, timezone: str, at_or_before: datetime) -> Fire | None:
    """The most recent fire at or before `at_or_before`, computed directly (S13 coalesce)."""
    spec = parse_cron(cron_expr)
    return _latest_at_or_before(spec.croniter_expr, spec.has_seconds, timezone, _utc(at_or_before))


def fires_between(
    cron_expr: str, timezone: str, after: datetime, until: datetime, limit: int
) -> list[Fire]:
    """Fires in (after, until], ascending, at most `limit` (S13 catch_up)."""
    out: list[Fire] = []
    cursor = _utc(after)
    end = _utc(until)
    while len(out) < limit:
        fire = next_fire(cron_expr, timezone, cursor)
        if fire.at > end:
            break
        out.append(fire)
        cursor = fire.at
    return out


CALENDAR_END_YEAR = 9999 - 60  # beyond this, a cron search may run off datetime's range


def upcoming_fires(cron_expr: str, timezone: str, after: datetime, count: int) -> list[Fire]:
    """The next `count` fires after `after`, for previews (`cron next`, detail views).

    Near the end of the calendar (year 9999) the list is cut where the calendar ends:
    fewer fires, maybe none. An instant outside it in UTC, or one so close to its start
    that the zone's wall time falls before year 1, is a one-line ValidationError."""
    parse_cron(cron_expr)
    parse_timezone(timezone)
    try:
        cursor = _utc(after)
    except OverflowError:
        raise ValidationError(
            f"after: {after.isoformat()} is outside the calendar in UTC (years 1..9999)"
        ) from None
    out: list[Fire] = []
    for _ in range(count):
        try:
            fire = next_fire(cron_expr, timezone, cursor)
        except (OverflowError, ValueError) as exc:
            if cursor.year >= CALENDAR_END_YEAR:
                break  # the calendar ends before the next fire
            if isinstance(exc, ValidationError):
                raise
            raise ValidationError(
                f"after: {cursor.isoformat()} is too close to the start of the calendar (year 1) "
                f"to compute fires in zone {_short(timezone)}"
            ) from None
        out.append(fire)
        cursor = fire.at
    return out


def iso_utc(instant: datetime) -> str:
    """ISO-8601 UTC with a Z suffix, as stamped into job metadata (S12)."""
    # isoformat() prints the fraction only when non-zero, as the format wants; it is
    # several times cheaper than strftime, and a 100k-fire pass calls this 100k times.
    return _utc(instant).replace(tzinfo=None).isoformat() + "Z"
