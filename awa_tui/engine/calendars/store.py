"""Named calendars (S56): stored sets of dates, shared by schedules, edited without a deploy.

Writes are operator actions (the audit gate first; the database's trigger writes the
audit row, migration v018). Reads hand back the frozen models of calendars/models.py.
`CalendarCache` is what the evaluator, previews and the ledger judge with: it re-reads
the calendars only when awa.calendars_version moved (one primary-key read).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from datetime import date
from typing import Any

import psycopg

from awa_tui.engine.calendars.models import CalendarInfo, CalendarSummary
from awa_tui.engine.core.audit import begin_action
from awa_tui.engine.core.errors import Conflict, NotFound, ValidationError
from awa_tui.engine.core.guards import check_operator
from awa_tui.engine.schedules.exclusions import (
    MAX_CALENDAR_RANGES,
    DateRange,
    DaySet,
    Exclusions,
    check_calendar_name,
    check_range,
    exclude_dates_of,
    exclusions_of,
    has_exclusions,
)

VERSION_SQL = "SELECT version FROM awa.calendars_version"
USED_BY_SQL = "SELECT name FROM awa.cron_jobs WHERE exclude_calendars ? %s ORDER BY name"


def _stored(ranges: Iterable[DateRange]) -> str:
    return json.dumps([[a.isoformat(), b.isoformat()] for a, b in ranges])


def stored_ranges(value: object, name: str) -> list[DateRange]:
    """A calendar's stored `dates` as ranges; a hand-written bad value raises one line."""
    if not isinstance(value, list):
        raise ValidationError(f"calendar {name!r}: dates are not a list")
    out = []
    for item in value:
        if not isinstance(item, list) or len(item) != 2 or not all(isinstance(x, str) for x in item):
            raise ValidationError(f"calendar {name!r}: not a [start, end] date pair: {item!r:.60}")
        try:
            first, last = date.fromisoformat(item[0]), date.fromisoformat(item[1])
        except ValueError:
            raise ValidationError(f"calendar {name!r}: not an ISO date pair: {item!r:.60}") from None
        out.append(check_range(first, last, f"calendar {name!r}"))
    return out


def set_calendar_dates(conn: psycopg.Connection[Any], name: str, dates: Any, operator: str) -> CalendarInfo:
    """Create or replace calendar `name` from dates and inclusive (start, end) date pairs as
    an operator gives them (`calendars/files.parse_dates` reads them from a file)."""
    canonical = exclude_dates_of(dates, what=f"calendar {name!r}", limit=None) or ()
    return set_calendar(conn, name, [(date.fromisoformat(a), date.fromisoformat(b)) for a, b in canonical], operator)


def set_calendar(conn: psycopg.Connection[Any], name: str, ranges: Sequence[DateRange],
                 operator: str) -> CalendarInfo:
    """Create or replace calendar `name` with `ranges` (already validated by the parser)."""
    name = check_calendar_name(name)
    operator = check_operator(operator)
    ranges = sorted({check_range(a, b, f"calendar {name!r}") for a, b in ranges})
    if len(ranges) > MAX_CALENDAR_RANGES:
        raise ValidationError(f"calendar {name!r}: at most {MAX_CALENDAR_RANGES} dates and ranges")
    with conn.transaction():
        begin_action(conn, operator, "calendar_set", {"ranges": len(ranges)})
        conn.execute(
            "INSERT INTO awa.calendars (name, dates) VALUES (%s, %s::jsonb) "
            "ON CONFLICT (name) DO UPDATE SET dates = EXCLUDED.dates, updated_at = now() "
            "WHERE awa.calendars.dates IS DISTINCT FROM EXCLUDED.dates",
            (name, _stored(ranges)))
    return show_calendar(conn, name)


def delete_calendar(conn: psycopg.Connection[Any], name: str, operator: str) -> CalendarInfo:
    """Delete calendar `name`; refused while a schedule names it (the names are given)."""
    operator = check_operator(operator)
    with conn.transaction():
        begin_action(conn, operator, "calendar_delete")
        before = show_calendar(conn, name, lock=True)
        if before.used_by:
            shown = ", ".join(before.used_by[:10]) + (f" and {len(before.used_by) - 10} more"
                                                      if len(before.used_by) > 10 else "")
            raise Conflict(f"calendar {name!r} is used by {len(before.used_by)} schedule(s): {shown}; "
                           "remove it from their definitions first")
        conn.execute("DELETE FROM awa.calendars WHERE name = %s", (name,))
    return before


def show_calendar(conn: psycopg.Connection[Any], name: str, *, lock: bool = False) -> CalendarInfo:
    row = conn.execute(
        "SELECT name, dates, created_at, updated_at FROM awa.calendars WHERE name = %s"
        + (" FOR UPDATE" if lock else ""), (name,)).fetchone()
    if row is None:
        raise NotFound(f"unknown calendar {name!r}")
    used_by = [r["name"] for r in conn.execute(USED_BY_SQL, (name,))]
    try:
        ranges = stored_ranges(row["dates"], name)
        fault = None
    except ValidationError as exc:
        ranges, fault = [], str(exc)
    return CalendarInfo(name=row["name"], ranges=[(a, b) for a, b in ranges],
                        days=sum((b - a).days + 1 for a, b in ranges), created_at=row["created_at"],
                        updated_at=row["updated_at"], used_by=used_by, fault=fault)


def list_calendars(conn: psycopg.Connection[Any]) -> list[CalendarSummary]:
    rows = conn.execute(
        "SELECT k.name, k.dates, k.updated_at, "
        "(SELECT count(*) FROM awa.cron_jobs c WHERE c.exclude_calendars ? k.name) AS used_by "
        "FROM awa.calendars k ORDER BY k.name").fetchall()
    out = []
    for r in rows:
        try:
            ranges = stored_ranges(r["dates"], r["name"])
            fault = None
        except ValidationError as exc:
            ranges, fault = [], str(exc)
        out.append(CalendarSummary(
            name=r["name"], ranges=len(ranges), days=sum((b - a).days + 1 for a, b in ranges),
            first=ranges[0][0] if ranges else None, last=max((b for _, b in ranges), default=None),
            updated_at=r["updated_at"], used_by=r["used_by"], fault=fault))
    return out


def missing_calendars(conn: psycopg.Connection[Any], names: Iterable[str]) -> list[str]:
    """The names among `names` no calendar has (sync refuses a schedule naming one)."""
    wanted = sorted(set(names))
    if not wanted:
        return []
    found = {r["name"] for r in conn.execute("SELECT name FROM awa.calendars WHERE name = ANY(%s)", (wanted,))}
    return [n for n in wanted if n not in found]


class Calendars:
    """The calendars as of one version: the days of each, and why a broken one is broken."""

    def __init__(self, version: int, days: dict[str, DaySet], broken: dict[str, str]) -> None:
        self.version = version
        self.days = days
        self.broken = broken


class CalendarCache:
    """The calendars one process judges with, re-read only when their version moved.

    Per database (the evaluator's connection says which). A pass that fires no schedule
    naming a calendar never asks (engine/firing/evaluator.py); one that does pays one
    primary-key read, and a full read only after a change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[Any, ...], Calendars] = {}

    def current(self, conn: psycopg.Connection[Any]) -> Calendars:
        key = (conn.info.host, conn.info.port, conn.info.dbname)
        row = conn.execute(VERSION_SQL).fetchone()
        version = row["version"] if row else 0
        with self._lock:
            held = self._held.get(key)
        if held is not None and held.version == version:
            return held
        days: dict[str, DaySet] = {}
        broken: dict[str, str] = {}
        # Read in one snapshot with the version it belongs to (autocommit: one statement).
        rows = conn.execute(
            "SELECT v.version, k.name, k.dates FROM awa.calendars_version v "
            "LEFT JOIN awa.calendars k ON true").fetchall()
        version = rows[0]["version"] if rows else version
        for r in rows:
            if r["name"] is None:
                continue
            try:
                days[r["name"]] = DaySet(stored_ranges(r["dates"], r["name"]))
            except ValidationError as exc:
                broken[r["name"]] = str(exc)
        fresh = Calendars(version, days, broken)
        with self._lock:
            self._held[key] = fresh
        return fresh


CACHE = CalendarCache()


def row_exclusions(conn: psycopg.Connection[Any], row: dict[str, Any]) -> Exclusions | None:
    """The exclusions of one stored row (its `exclude_dates` and `exclude_calendars`
    columns) against the calendars as they stand; None when it has none. Raises a
    one-line ValidationError for a bad value or an unknown calendar."""
    if not has_exclusions(row):
        return None
    known = CACHE.current(conn) if row.get("exclude_calendars") is not None else None
    return exclusions_of(row, known.days if known else {}, known.broken if known else None)


def refuse_unknown_calendars(conn: psycopg.Connection[Any], schedules: Iterable[Any]) -> None:
    """Sync's check (S56): a schedule naming a calendar the database lacks is refused in
    one line naming both, before anything is written. Free when no schedule names one."""
    wanted: dict[str, str] = {}
    for schedule in schedules:
        for name in schedule.exclude_calendars or ():
            wanted.setdefault(name, schedule.name)
    missing = missing_calendars(conn, wanted)
    if missing:
        first = missing[0]
        more = f" (and {len(missing) - 1} more unknown calendar(s))" if len(missing) > 1 else ""
        raise ValidationError(
            f"calendar: schedule {wanted[first]!r} names unknown calendar {first!r}{more}; "
            "create it first (awa-tui calendar set)")
