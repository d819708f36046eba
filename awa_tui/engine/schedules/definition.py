"""Schedule definitions and their validation (S1, S2), and the verdict on stored rows (S15).

Cron expressions and their fire arithmetic live in engine/cron/.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import lru_cache
from itertools import repeat
from operator import attrgetter
from typing import Any

from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.core.errors import short_repr as _short
from awa_tui.engine.core.guards import refuse_format_characters
from awa_tui.engine.core.limits import DEFAULT_MAX_LATENESS_S, check_seconds
from awa_tui.engine.cron.expression import (
    CONTROL_CHARS,
    CronExpression,
    compile_cron,
    every_expression,
    parse_cron,
    parse_timezone,
)
from awa_tui.engine.cron.spread import check_jitter, has_spread, jitter_ms_of, resolve_spread
from awa_tui.engine.schedules.columns import DEFINITION, DEFINITION_INSTANTS, KEY
from awa_tui.engine.schedules.exclusions import (
    calendars_of,
    exclude_dates_of,
    parse_stored_calendars,
    parse_stored_dates,
)

POLICIES = ("coalesce", "catch_up")
# What a due instant does while a job of the schedule is still going (waiting or running):
# fire anyway, not fire, fire only when none is waiting, or fire and cancel the previous one.
OVERLAPS = ("allow", "skip", "buffer_one", "replace")
MAX_FIRES_LIMIT = 2**31 - 1  # the column is an integer
# Bidi controls and zero-width characters: a name holding them can read as another name
# in a confirm dialog. The database refuses the same set (migration v004).
_LOOKALIKE = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]")
JSON_MAX_BYTES = 256 * 1024  # args and metadata, as Postgres prints them (jsonb::text)


@dataclass(frozen=True, slots=True)
class Schedule:
    """One periodic schedule, validated at construction (S1, S2).

    Slotted: a process may register a million of these, and a __dict__ per
    instance would be most of its memory."""

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
    # Expectations (S41), stored as whole seconds and counts; None = not declared. The
    # client fills max_lateness with its default at registration.
    max_lateness: int | None = None
    expect_success_within: int | None = None
    max_consecutive_failures: int | None = None
    pause_after_failures: int | None = None
    overlap: str = "allow"
    start_at: datetime | None = None
    end_at: datetime | None = None
    max_fires: int | None = None
    # S48: cron_expr as written when it uses H (cron_expr then holds it resolved for
    # this name), else None; and the jitter of each fire's run_at, in milliseconds.
    cron_written: str | None = None
    jitter_ms: int = 0
    # S56: dates (inclusive ISO pairs, in the schedule's zone) and calendars it never fires
    # on, canonical (engine/schedules/exclusions.py); None when there are none.
    exclude_dates: tuple[tuple[str, str], ...] | None = None
    exclude_calendars: tuple[str, ...] | None = None
    # S66: how old (whole seconds) a due instant may be when it fires; None = no bound.
    catchup_window: int | None = None

    def __post_init__(self) -> None:
        _check_text("name", self.name)
        if _LOOKALIKE.search(self.name):
            raise ValidationError(
                f"name: must not contain bidi controls or zero-width characters: {_short(self.name)}"
            )
        self._resolve_spread()
        # compile_cron's checks (expression, then zone), without building the expression.
        spec = parse_cron(self.cron_expr)
        parse_timezone(self.timezone)
        if type(self.jitter_ms) is not int or self.jitter_ms:  # 0, the common case, is valid
            check_jitter(self.jitter_ms, spec.croniter_expr, spec.has_seconds, self.cron_written or self.cron_expr,
                         None if spec.every_us is None else timedelta(microseconds=spec.every_us))
        _check_text("kind", self.kind)
        _check_text("queue", self.queue)
        if not self.queue.isascii():  # a queue is shared by name: it must look like no other
            refuse_format_characters("queue", self.queue)
        if not (type(self.priority) is int and 1 <= self.priority <= 4) and (  # the common case first
                isinstance(self.priority, bool) or not isinstance(self.priority, int) or not 1 <= self.priority <= 4):
            raise ValidationError(f"priority: must be an integer 1..4, got {_short(self.priority)}")
        if not (type(self.max_attempts) is int and 1 <= self.max_attempts <= 1000) and (
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
        object.__setattr__(self, "tags", _shared_tags(tuple(self.tags)))
        _check_json_object("args", self.args)
        _check_json_object("metadata", self.metadata)
        if self.missed_fire_policy not in POLICIES:
            raise ValidationError(
                f"missed_fire_policy: must be 'coalesce' or 'catch_up', got {_short(self.missed_fire_policy)}"
            )
        if self.max_lateness is not None:
            object.__setattr__(self, "max_lateness", check_seconds("max_lateness", self.max_lateness))
        if self.expect_success_within is not None:
            object.__setattr__(self, "expect_success_within",
                               check_seconds("expect_success_within", self.expect_success_within))
        check_count("max_consecutive_failures", self.max_consecutive_failures)
        check_count("pause_after_failures", self.pause_after_failures)
        if (self.overlap, self.start_at, self.end_at, self.max_fires) != ("allow", None, None, None):
            self._check_what_fires()
        if self.exclude_dates is not None or self.exclude_calendars is not None:
            self._check_exclusions()
        if self.catchup_window is not None:
            object.__setattr__(self, "catchup_window", check_catchup_window(self.catchup_window))

    def _check_exclusions(self) -> None:
        """The stored form (a definition read back from a manifest carries it as JSON lists)."""
        dates = parse_stored_dates(self.exclude_dates)
        calendars = parse_stored_calendars(self.exclude_calendars)
        object.__setattr__(self, "exclude_dates", tuple((a.isoformat(), b.isoformat()) for a, b, _ in dates) or None)
        object.__setattr__(self, "exclude_calendars", calendars or None)

    def _check_what_fires(self) -> None:
        """Overlap policy and bounds (v009), refused with one line naming the value."""
        if self.overlap not in OVERLAPS:
            raise ValidationError(
                f"overlap: must be 'allow', 'skip', 'buffer_one' or 'replace', got {_short(self.overlap)}")
        for fname in ("start_at", "end_at"):
            value = getattr(self, fname)
            if value is None:
                continue
            if not isinstance(value, datetime) or value.utcoffset() is None:
                raise ValidationError(f"{fname}: must be a timezone-aware datetime, got {_short(value)}")
            object.__setattr__(self, fname, value.astimezone(UTC))
        if self.start_at is not None and self.end_at is not None and self.start_at > self.end_at:
            raise ValidationError(
                f"start_at: {self.start_at.isoformat()} is after end_at {self.end_at.isoformat()}"
            )
        if self.max_fires is not None and (
            isinstance(self.max_fires, bool) or not isinstance(self.max_fires, int)
            or not 1 <= self.max_fires <= MAX_FIRES_LIMIT
        ):
            raise ValidationError(f"max_fires: must be an integer 1..{MAX_FIRES_LIMIT}, got {_short(self.max_fires)}")

    def _resolve_spread(self) -> None:
        """Store H resolved in cron_expr and the written text in cron_written. A definition
        read back (manifest, stored row) carries both: they must still agree."""
        if self.cron_written is None:
            if has_spread(self.cron_expr):
                object.__setattr__(self, "cron_written", self.cron_expr)
                object.__setattr__(self, "cron_expr", resolve_spread(self.cron_expr, self.name))
            return
        if not isinstance(self.cron_written, str) or not has_spread(self.cron_written):
            raise ValidationError(f"cron_written: expected an expression with H, got {_short(self.cron_written)}")
        resolved = resolve_spread(self.cron_written, self.name)
        if self.cron_expr != resolved:
            raise ValidationError(
                f"cron_expr: {_short(self.cron_expr)} is not {_short(self.cron_written)} resolved for "
                f"{_short(self.name)} ({_short(resolved)})"
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
        max_lateness: timedelta | int | None = None,
        expect_success_within: timedelta | int | None = None,
        max_consecutive_failures: int | None = None,
        pause_after_failures: int | None = None,
        overlap: str = "allow",
        start_at: datetime | None = None,
        end_at: datetime | None = None,
        max_fires: int | None = None,
        jitter: Any = None,
        exclude: Any = None,
        calendar: str | list[str] | tuple[str, ...] | None = None,
        catchup_window: timedelta | str | int | None = None,
    ) -> Schedule:
        """The `periodic()` signature of S1; `jitter` is a timedelta (S48); `exclude`
        dates and inclusive (start, end) date pairs and `calendar` names (S56);
        `catchup_window` a timedelta, a duration such as "1h", or seconds (S66).

        Filled as the generated __init__ would, every field given in field order, without
        its 22 frozen-bypass assignments in Python (half of a registration's time, 1M
        times): one C-level pass, then the same __post_init__ validation."""
        schedule = object.__new__(cls)
        _fill(map(_assign, repeat(schedule), _FIELDS, (
            name, cron_expr, kind, {} if args is None else args, timezone, queue, priority, max_attempts,
            tuple(tags) if isinstance(tags, (list, tuple)) else tags,
            {} if metadata is None else metadata, missed_fire_policy, max_lateness, expect_success_within,
            max_consecutive_failures, pause_after_failures, overlap, start_at, end_at, max_fires,
            None, jitter_ms_of(jitter),  # cron_written: resolved from cron_expr by __post_init__
            exclude_dates_of(exclude), calendars_of(calendar), catchup_window,
        )))
        schedule.__post_init__()
        return schedule

    def definition(self) -> dict[str, Any]:
        """The definition columns, canonical (used for sync and manifests)."""
        out = dict(zip(_DEFINITION_KEYS, _definition_values(self), strict=True))
        out["tags"] = list(self.tags)  # JSON has no tuples
        # S56: left out when unset (readers take the column's default, NULL), so a manifest
        # without exclusions hashes as it did before they existed: no republication on upgrade.
        if self.exclude_dates is None:
            del out["exclude_dates"]
        else:
            out["exclude_dates"] = [list(pair) for pair in self.exclude_dates]
        if self.exclude_calendars is None:
            del out["exclude_calendars"]
        else:
            out["exclude_calendars"] = list(self.exclude_calendars)
        if self.catchup_window is None:
            del out["catchup_window"]  # S66: left out when unset, like the exclusions
        for fname in DEFINITION_INSTANTS:
            out[fname] = instant_text(out[fname])
        return out


@lru_cache(maxsize=4096)
def _shared_tags(tags: tuple[str, ...]) -> tuple[str, ...]:
    """One tuple object per distinct tag list: a million schedules tagged alike share it."""
    return tags


def instant_text(value: datetime | None) -> str | None:
    """A definition instant as JSON carries it; the same text as awa.instant_text (v009)."""
    return None if value is None else value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


# Schedule.build's field order (tests/engine/schedules/test_registration.py checks it against fields()).
_FIELDS = (KEY, "cron_expr", "kind", "args", "timezone", "queue", "priority", "max_attempts", "tags",
           "metadata", "missed_fire_policy", "max_lateness", "expect_success_within",
           "max_consecutive_failures", "pause_after_failures", "overlap", "start_at", "end_at",
           "max_fires", "cron_written", "jitter_ms", "exclude_dates", "exclude_calendars", "catchup_window")
_assign = object.__setattr__  # past the frozen __setattr__, as the generated __init__ does
_fill: Callable[[Iterable[Any]], None] = deque(maxlen=0).extend  # runs an iterator to its end in C


# Schedule's fields are named like the columns they are stored in (one registry).
_DEFINITION_KEYS = (KEY, *DEFINITION)
_definition_values = attrgetter(*_DEFINITION_KEYS)  # one C call: sync builds 100k of these


MAX_COUNT = 1_000_000


def check_catchup_window(value: object) -> int:
    """S66: a catch-up window as whole seconds, from a timedelta, a duration such as "1h"
    (the CLI's and the console's words) or a number of seconds (a stored definition); zero
    and negative windows are refused, in one line naming the field."""
    if isinstance(value, str):
        from awa_tui.instants import parse_duration

        value = parse_duration(value, "catchup_window")
    seconds = check_seconds("catchup_window", value)
    assert seconds is not None
    return seconds


def check_count(fname: str, value: object) -> int | None:
    """A count expectation (>= 1), or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
        raise ValidationError(f"{fname}: must be an integer 1..{MAX_COUNT}, got {_short(value)}")
    return value


def _check_text(fname: str, value: object) -> None:
    if type(value) is str and 0 < len(value) <= 200 and value.isascii() and value.isprintable():
        return  # plain ASCII (no control character, no surrogate): the common case, 1M times
    if not isinstance(value, str):
        raise ValidationError(f"{fname}: expected a string, got {_short(value)}")
    if not 1 <= len(value) <= 200:
        raise ValidationError(f"{fname}: must be 1..200 characters, got {_short(value)} ({len(value)} characters)")
    if CONTROL_CHARS.search(value):
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
    size = _plain_json_size(value, 0)  # one pass for plain values (1M registrations)
    if size is None:  # anything unusual: the careful checks below, which name the fault
        size = _checked_json_size(fname, value)
    if size > JSON_MAX_BYTES:
        raise ValidationError(f"{fname}: at most {JSON_MAX_BYTES} bytes as JSON, got {size} bytes")


def _checked_json_size(fname: str, value: object) -> int:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{fname}: not JSON-serialisable ({exc}): {_short(value)}") from None
    except RecursionError:
        raise ValidationError(f"{fname}: nested too deeply to store as JSON") from None
    _check_json_members(fname, value)
    return _stored_json_size(value)


# What Python's JSON encoder (and Postgres' jsonb output) escapes in a string.
_ESCAPED = re.compile(r'[\x00-\x1f"\\]')
_PLAIN_DEPTH = 64
_PLAIN_INT = 10**300  # longer ints: the careful path (int -> str has a limit)


def _plain_json_size(value: object, depth: int) -> int | None:
    """`_stored_json_size` of a value built of exact dicts with str keys, lists, tuples,
    strings without escapes, ints, plain floats, booleans and None, checked on the way;
    None for anything else (a subclass, an escape, NUL, a lone surrogate, NaN, a float
    printed with an exponent, deep nesting), which `_checked_json_size` then judges. Equal
    to it wherever it answers (tests/engine/schedules/test_registration.py)."""
    kind = type(value)
    if kind is str:
        return _plain_text_size(value)  # type: ignore[arg-type]
    if kind is bool:
        return 4 if value else 5
    if kind is int:
        return len(str(value)) if -_PLAIN_INT < value < _PLAIN_INT else None  # type: ignore[operator]
    if value is None:
        return 4
    if kind is float:
        text = repr(value)
        return len(text) if "e" not in text and "n" not in text else None  # 1e+16, inf, nan
    if depth >= _PLAIN_DEPTH:
        return None
    if kind is dict:
        total = 2 + 2 * max(0, len(value) - 1)  # type: ignore[arg-type]
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str:
                return None
            key_size = _plain_text_size(key)
            item_size = _plain_json_size(item, depth + 1)
            if key_size is None or item_size is None:
                return None
            total += key_size + 2 + item_size
        return total
    if kind is list or kind is tuple:
        total = 2 + 2 * max(0, len(value) - 1)  # type: ignore[arg-type]
        for item in value:  # type: ignore[attr-defined]
            item_size = _plain_json_size(item, depth + 1)
            if item_size is None:
                return None
            total += item_size
        return total
    return None


def _plain_text_size(text: str) -> int | None:
    if _ESCAPED.search(text):
        return None
    if text.isascii():
        return len(text) + 2
    try:
        return len(text.encode("utf-8")) + 2
    except UnicodeEncodeError:
        return None


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


def check_stored(row: Mapping[str, Any]) -> CronExpression:
    """Raise a one-line ValidationError when a stored schedule row cannot fire; else its
    compiled expression.

    `row["fault"]` is what SQL judged (awa.cron_job_fault, migration v004: instants Python
    cannot load, JSON that is not an object, numbers out of range); the expression, zone
    and policy are judged here by the same parser registration uses. The evaluator and
    every view call this (or row_fault): one definition of BROKEN."""
    if row["fault"]:
        raise ValidationError(row["fault"])
    cron = compile_cron(row["cron_expr"], row["timezone"], row.get("start_at"))
    if row["missed_fire_policy"] not in POLICIES:
        raise ValidationError(f"missed_fire_policy: unknown policy {_short(row['missed_fire_policy'])}")
    if row.get("overlap", "allow") not in OVERLAPS:  # v009 refuses it too; a row read before the check
        raise ValidationError(f"overlap: unknown policy {_short(row['overlap'])}")
    if row.get("exclude_dates") is not None or row.get("exclude_calendars") is not None:
        parse_stored_dates(row.get("exclude_dates"))  # S56: whether each calendar exists is
        parse_stored_calendars(row.get("exclude_calendars"))  # judged where calendars are read
    return cron


def row_fault(row: Mapping[str, Any]) -> str | None:
    """Why a stored row is BROKEN (see check_stored), or None."""
    try:
        check_stored(row)
    except ValidationError as exc:
        return str(exc)
    return None


def declare(registry: dict[str, Schedule], max_lateness: int | None, /, *args: Any, **kwargs: Any) -> Schedule:
    """Build a schedule (`Schedule.build`'s parameters), validated at once, into a process's
    `registry`. `max_lateness` is the client's default: one other than the built-in one is
    stored with a schedule that declares none; the built-in one stays NULL (which means
    it), so upgrading rewrites no existing row."""
    schedule = built(max_lateness, *args, **kwargs)
    if schedule.name in registry:
        raise ValidationError(f"name: schedule {schedule.name!r} is already registered in this process")
    registry[schedule.name] = schedule
    return schedule


def built(max_lateness: int | None, /, *args: Any, **kwargs: Any) -> Schedule:
    """`Schedule.build`, with a client's default `max_lateness` as `declare` stores it (a
    schedule made at run time gets the same, S64). `every="90s"` (or a timedelta) stands
    for `cron_expr="@every 90s"`, an interval schedule."""
    if "every" in kwargs:
        every = kwargs.pop("every")
        if len(args) >= 2 or "cron_expr" in kwargs:
            raise ValidationError("every: give a cron expression or every, not both")
        kwargs["cron_expr"] = every_expression(every)
    return with_default_lateness(Schedule.build(*args, **kwargs), max_lateness)


def with_default_lateness(schedule: Schedule, max_lateness: int | None) -> Schedule:
    """`schedule` with a client's default `max_lateness` when it declares none (see `declare`)."""
    if schedule.max_lateness is None and max_lateness != DEFAULT_MAX_LATENESS_S:
        return replace(schedule, max_lateness=max_lateness)
    return schedule
