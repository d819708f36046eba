"""One evaluator pass: which fires are due (S13, S14), fired atomically (S11, S12).

A pass reads DB time once (S9), fetches only rows whose stored `next_fire_at` hint is due
or unknown (one indexed probe when idle, S10), computes fires in Python, then CAS-marks
and inserts jobs for a whole chunk of schedules in one statement.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg

from awa_tui.engine.errors import ValidationError
from awa_tui.engine.schedule import (
    Fire,
    fires_between,
    iso_utc,
    latest_fire,
    next_fire,
    parse_cron,
    parse_timezone,
)

log = logging.getLogger("awa_tui.evaluator")

CATCH_UP_LIMIT = 1000
FIRE_CHUNK = 5000
FIRST_FIRE_LOOKBACK = timedelta(minutes=1)
ONE_MICROSECOND = timedelta(microseconds=1)

DUE_SQL = """
SELECT name, cron_expr, timezone, missed_fire_policy, last_enqueued_at, next_fire_at, created_at
FROM awa.cron_jobs
WHERE paused_at IS NULL AND retired_at IS NULL AND next_fire_at <= %(now)s
UNION ALL
SELECT name, cron_expr, timezone, missed_fire_policy, last_enqueued_at, next_fire_at, created_at
FROM awa.cron_jobs
WHERE paused_at IS NULL AND retired_at IS NULL AND next_fire_at IS NULL
"""

# S11: rows are locked in name order, skipping any an operator holds (it will be seen
# next pass, in its new state); the CAS and pause/retire guards sit in the UPDATE itself.
FIRE_BATCH_SQL = """
WITH plan AS (
    SELECT * FROM unnest(%(names)s::text[], %(expected)s::timestamptz[],
                         %(new_last)s::timestamptz[], %(next_hint)s::timestamptz[],
                         %(exprs)s::text[], %(zones)s::text[])
        AS p(name, expected, new_last, next_hint, cron_expr, timezone)
),
locked AS (
    SELECT c.name FROM awa.cron_jobs c
    WHERE c.name = ANY(%(names)s::text[])
    ORDER BY c.name
    FOR UPDATE SKIP LOCKED
),
mark AS (
    UPDATE awa.cron_jobs c
    SET last_enqueued_at = p.new_last, next_fire_at = p.next_hint
    FROM plan p
    WHERE c.name = p.name
      AND c.name IN (SELECT name FROM locked)
      AND c.last_enqueued_at IS NOT DISTINCT FROM p.expected
      AND c.paused_at IS NULL
      AND c.retired_at IS NULL
      AND c.cron_expr = p.cron_expr AND c.timezone = p.timezone
    RETURNING c.name, c.kind, c.queue, c.args, c.priority, c.max_attempts, c.tags, c.metadata
),
fires AS (
    SELECT * FROM unnest(%(fire_names)s::text[], %(fire_iso)s::text[], %(fire_seq)s::int[])
        AS f(name, fire_iso, seq)
)
INSERT INTO awa.jobs (kind, queue, args, state, priority, attempt, max_attempts, metadata, tags)
SELECT m.kind, m.queue, m.args, 'available', m.priority, 0, m.max_attempts,
       m.metadata || jsonb_build_object('cron_name', m.name, 'cron_fire_time', f.fire_iso),
       m.tags
FROM mark m JOIN fires f ON f.name = m.name
ORDER BY f.seq
RETURNING id, metadata ->> 'cron_name' AS name, metadata ->> 'cron_fire_time' AS fire_time
"""

# Hints for rows that are not due yet; guarded so a concurrent fire or edit wins.
HINT_SQL = """
UPDATE awa.cron_jobs c SET next_fire_at = h.next_hint
FROM unnest(%(names)s::text[], %(expected)s::timestamptz[], %(next_hint)s::timestamptz[],
            %(exprs)s::text[], %(zones)s::text[])
    AS h(name, expected, next_hint, cron_expr, timezone)
WHERE c.name = h.name
  AND c.last_enqueued_at IS NOT DISTINCT FROM h.expected
  AND c.cron_expr = h.cron_expr AND c.timezone = h.timezone
  AND c.next_fire_at IS NULL
"""


@dataclass
class FirePlan:
    name: str
    expected: datetime | None
    fires: list[Fire]
    next_hint: datetime
    cron_expr: str
    timezone: str


@dataclass
class FiredJob:
    id: int
    name: str
    fire_time: str


@dataclass
class PassResult:
    now: datetime
    examined: int = 0
    planned: int = 0
    jobs: list[FiredJob] = field(default_factory=list)
    lost_races: int = 0  # schedules whose CAS matched nothing (fired elsewhere, paused...)
    errors: list[str] = field(default_factory=list)

    @property
    def fired(self) -> int:
        return len(self.jobs)


def due_schedules(conn: psycopg.Connection[Any], now: datetime) -> list[dict[str, Any]]:
    return conn.execute(DUE_SQL, {"now": now}).fetchall()


def first_candidate(row: dict[str, Any]) -> datetime:
    """The instant after which fires are new (S13)."""
    if row["last_enqueued_at"] is not None:
        return row["last_enqueued_at"]
    # First fire: only fires in [created_at - 1 minute, now] count.
    return row["created_at"] - FIRST_FIRE_LOOKBACK - ONE_MICROSECOND


def plan_fires(row: dict[str, Any], now: datetime, catch_up_limit: int) -> tuple[FirePlan | None, datetime]:
    """Fires due for one row at `now`, and the row's next hint. Raises on a bad row."""
    expr, zone = row["cron_expr"], row["timezone"]
    parse_cron(expr)
    parse_timezone(zone)
    if row["missed_fire_policy"] not in ("coalesce", "catch_up"):
        raise ValidationError(f"missed_fire_policy: unknown policy {row['missed_fire_policy']!r}")
    hint = row["next_fire_at"] or next_fire(expr, zone, first_candidate(row)).at
    if hint > now:
        return None, hint
    last = row["last_enqueued_at"]
    if last is None or row["missed_fire_policy"] == "coalesce":
        # Coalesce and first fire: the most recent due fire, one computation (S13).
        latest = latest_fire(expr, zone, now)
        fires = [latest] if latest is not None and latest.at >= hint else []
    else:
        fires = fires_between(expr, zone, last, now, catch_up_limit)
    if not fires:
        return None, hint
    following = next_fire(expr, zone, fires[-1].at).at
    return FirePlan(row["name"], last, fires, following, expr, zone), following


def fire_batch(conn: psycopg.Connection[Any], plans: list[FirePlan]) -> list[FiredJob]:
    """CAS-mark every planned schedule and insert its jobs, in one statement (S11)."""
    if not plans:
        return []
    plans = sorted(plans, key=lambda p: p.name)
    fire_names: list[str] = []
    fire_iso: list[str] = []
    for plan in plans:
        for fire in plan.fires:
            fire_names.append(plan.name)
            fire_iso.append(iso_utc(fire.at))
    params = {
        "names": [p.name for p in plans],
        "expected": [p.expected for p in plans],
        "new_last": [p.fires[-1].at for p in plans],
        "next_hint": [p.next_hint for p in plans],
        "exprs": [p.cron_expr for p in plans],
        "zones": [p.timezone for p in plans],
        "fire_names": fire_names,
        "fire_iso": fire_iso,
        "fire_seq": list(range(len(fire_names))),
    }
    rows = conn.execute(FIRE_BATCH_SQL, params).fetchall()
    return [FiredJob(r["id"], r["name"], r["fire_time"]) for r in rows]


def write_hints(conn: psycopg.Connection[Any], hints: list[tuple[dict[str, Any], datetime]]) -> None:
    if not hints:
        return
    conn.execute(
        HINT_SQL,
        {
            "names": [r["name"] for r, _ in hints],
            "expected": [r["last_enqueued_at"] for r, _ in hints],
            "next_hint": [h for _, h in hints],
            "exprs": [r["cron_expr"] for r, _ in hints],
            "zones": [r["timezone"] for r, _ in hints],
        },
    )


def evaluate(
    conn: psycopg.Connection[Any],
    now: datetime | None = None,
    *,
    catch_up_limit: int = CATCH_UP_LIMIT,
    chunk: int = FIRE_CHUNK,
) -> PassResult:
    """One pass at `now` (DB time when omitted). `conn` must be in autocommit mode."""
    if now is None:
        row = conn.execute("SELECT clock_timestamp() AS now").fetchone()
        assert row is not None
        now = row["now"]
    result = PassResult(now=now)
    rows = due_schedules(conn, now)
    result.examined = len(rows)
    plans: list[FirePlan] = []
    hints: list[tuple[dict[str, Any], datetime]] = []
    for row in rows:
        try:
            plan, hint = plan_fires(row, now, catch_up_limit)
        except Exception as exc:  # S15: a bad row never stops the others
            message = f"schedule {row['name']!r} skipped: {exc}"
            log.error(message)
            result.errors.append(message)
            continue
        if plan is None:
            if row["next_fire_at"] is None:
                hints.append((row, hint))
        else:
            plans.append(plan)
    result.planned = len(plans)
    for start in range(0, len(plans), chunk):
        part = plans[start : start + chunk]
        jobs = fire_batch(conn, part)
        result.jobs.extend(jobs)
        result.lost_races += len(part) - len({j.name for j in jobs})
    write_hints(conn, hints)
    return result
