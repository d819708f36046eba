"""`awa-tui check` (S43): the schedules the leader last judged unhealthy, and the fleet
(exactly one leader with a live lease, its health evaluation fresh, every runtime on this
schema version), as one report with a Nagios exit code. Reads only: what the leader
recorded (awa.cron_health, health_meta) and the leadership views."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import psycopg

from awa_tui.engine import migrations
from awa_tui.engine.errors import NotFound, SchemaError
from awa_tui.engine.health.models import (
    AUTOPAUSE,
    CRITICAL,
    EXIT_CRITICAL,
    EXIT_OK,
    EXIT_WARNING,
    HEALTHS,
    WARNING,
    CheckReport,
    FleetProblem,
    RegisteredRuntime,
    ScheduleHealth,
    Transition,
    health_rank,
)
from awa_tui.engine.limits import HEALTH_INTERVAL_S
from awa_tui.engine.read import views
from awa_tui.engine.read.freshness import fresh_sql

# The leader's health evaluation counts as stalled when older than this.
STALE_AFTER = timedelta(seconds=3 * HEALTH_INTERVAL_S)

_SELECTION = """
    (%(owner)s::text IS NULL OR c.owner = %(owner)s)
    AND (%(schedule)s::text IS NULL OR c.name = %(schedule)s)
    AND (%(tag)s::text IS NULL OR %(tag)s = ANY(c.tags))"""

# The selected schedules, counted apart from the ones with a health other than ok (a
# schedule without a cron_health row is ok): at 1M schedules the count is an index-only
# scan and the join touches only the few recorded rows, where one LEFT JOIN of every
# schedule took half a second (issue 18).
TOTAL_SQL = f"SELECT count(*) AS n FROM awa.cron_jobs c WHERE {_SELECTION}"
COUNTS_SQL = f"""
SELECT h.health, count(*) AS n
FROM awa.cron_health h JOIN awa.cron_jobs c ON c.name = h.name
WHERE h.health <> 'ok' AND {_SELECTION}
GROUP BY 1
"""

# The unhealthy ones through the partial index (1% of 100k: about a thousand rows); an
# automatic pause is reported too (the schedule stopped because it kept failing).
UNHEALTHY_SQL = f"""
SELECT c.name, c.owner, c.queue, h.health, awa.safe_ts(h.since) AS since, h.reason,
       h.consecutive_failures, c.paused_by
FROM awa.cron_health h JOIN awa.cron_jobs c ON c.name = h.name
WHERE h.health <> 'ok'
  AND (h.health IN ('late', 'failing', 'missed', 'broken')
       OR (h.health = 'paused' AND c.paused_by = '{AUTOPAUSE}'))
  AND {_SELECTION}
ORDER BY c.name
"""

FLEET_SQL = f"""
SELECT (SELECT awa.safe_ts(evaluated_at) FROM awa.health_meta WHERE singleton) AS evaluated_at,
       (SELECT count(*) FROM awa.runtime_instances r WHERE r.is_leader AND {fresh_sql("%(now)s::timestamptz", "r")})
           AS claiming,
       (SELECT coalesce(array_agg(r.hostname || ':' || r.pid || ' runs schema ' || r.schema_version
                                  ORDER BY r.hostname, r.pid), '{{}}')
        FROM awa.runtime_instances r
        WHERE r.schema_version IS DISTINCT FROM %(version)s AND r.schema_version IS NOT NULL
          AND {fresh_sql("%(now)s::timestamptz", "r")}) AS mismatched
"""

# `check --registered`: the runtimes of one host with a fresh snapshot (S21, DB time).
REGISTERED_SQL = f"""
SELECT r.instance_id::text AS instance_id, r.hostname, r.pid, awa.safe_ts(r.last_seen_at) AS last_seen_at
FROM awa.runtime_instances r
WHERE r.hostname = %(hostname)s AND {fresh_sql("%(now)s::timestamptz", "r")}
ORDER BY r.last_seen_at DESC, r.pid
"""


def _schedule_health(row: dict[str, Any]) -> ScheduleHealth:
    return ScheduleHealth(**row)


def fleet_problems(conn: psycopg.Connection[Any], now: datetime,
                   version: int | None = None) -> tuple[list[FleetProblem], datetime | None]:
    """What is wrong with the runtimes as a whole (each one critical); `version` is the
    database's schema version when the caller has read it already."""
    problems = []
    lead = views.leadership(conn, now)
    if not lead.held:
        problems.append(FleetProblem("no_leader", "no live leader: no runtime holds the leader lock"))
    elif lead.stalled:
        problems.append(FleetProblem("stalled", f"leader stalled: its lease expired at {_iso(lead.lease_expires_at)}"))
    if version is None:
        version = migrations.current_version(conn)
    row = conn.execute(FLEET_SQL, {"now": now, "version": version}).fetchone()
    assert row is not None
    if row["claiming"] > 1:
        problems.append(FleetProblem("several_leaders", f"{row['claiming']} fresh runtimes report being leader"))
    evaluated = row["evaluated_at"]
    if lead.held and not lead.stalled:
        if evaluated is None:
            problems.append(FleetProblem("stale_health", "the leader has not evaluated health yet"))
        elif now - evaluated > STALE_AFTER:
            age = int((now - evaluated).total_seconds())
            problems.append(FleetProblem("stale_health", f"leader stalled: health last evaluated {age} s ago"))
    for text in row["mismatched"]:
        problems.append(FleetProblem("schema", f"runtime {text}, the database is at {version}"))
    if lead.held and not lead.stalled and lead.instance_id is not None:
        timed_out = _timed_out_pass(conn, lead.instance_id)
        if timed_out is not None:
            problems.append(timed_out)
    return problems, evaluated


def _timed_out_pass(conn: psycopg.Connection[Any], instance_id: UUID) -> FleetProblem | None:
    """S59: the leader's newest pass (its snapshot) gave up on a lock or statement timeout."""
    from awa_tui.engine.runtime.blockers import describe
    from awa_tui.engine.runtime.passes import from_json

    row = conn.execute("SELECT recent_passes FROM awa.runtime_instances WHERE instance_id = %s",
                       (instance_id,)).fetchone()
    passes = from_json(row["recent_passes"]) if row else ()
    if not passes or not passes[0].timed_out:
        return None
    last = passes[0]
    why = f"; blocked by {describe(last.blockers)}" if last.blockers else ""
    return FleetProblem("pass_timed_out", f"the leader's last pass ({_iso(last.at)}) gave up after "
                        f"{last.duration_ms / 1000:.1f} s waiting{why}", blockers=last.blockers)


def check(
    conn: psycopg.Connection[Any],
    *,
    owner: str | None = None,
    schedule: str | None = None,
    tag: str | None = None,
    now: datetime | None = None,
) -> CheckReport:
    version = migrations.check_version(conn)  # no schema, or another version: cannot tell (exit 3)
    now = now or views.db_time(conn)
    params = {"owner": owner, "schedule": schedule, "tag": tag}
    counts = {h: 0 for h in HEALTHS}
    total = conn.execute(TOTAL_SQL, params).fetchone()
    assert total is not None
    checked = total["n"]
    for row in conn.execute(COUNTS_SQL, params).fetchall():
        counts[row["health"]] = counts.get(row["health"], 0) + row["n"]
    counts["ok"] += checked - sum(counts.values())
    if schedule is not None and checked == 0:
        raise NotFound(f"unknown schedule {schedule!r}")
    unhealthy = sorted(
        (_schedule_health(r) for r in conn.execute(UNHEALTHY_SQL, params).fetchall()),
        key=lambda s: (health_rank(s.health), s.name),
    )
    fleet, evaluated = fleet_problems(conn, now, version)
    if fleet or any(s.health in CRITICAL or s.autopaused for s in unhealthy):
        status, code = "critical", EXIT_CRITICAL
    elif any(s.health in WARNING for s in unhealthy):
        status, code = "warning", EXIT_WARNING
    else:
        status, code = "ok", EXIT_OK
    return CheckReport(now=now, status=status, exit_code=code, checked=checked, unhealthy=unhealthy,
                       counts=counts, fleet=fleet, evaluated_at=evaluated)


def registered(conn: psycopg.Connection[Any], hostname: str, now: datetime | None = None) -> list[RegisteredRuntime]:
    """The runtimes on `hostname` whose snapshot is fresh (started, not stopped, reporting).
    Any schema version will do: during a rolling upgrade the runtimes of the older release
    keep running beside a newer schema (docs/operations.md), and stay ready."""
    if migrations.current_version(conn) is None:
        raise SchemaError("the database has no awa schema; run `awa-tui migrate`")
    now = now or views.db_time(conn)
    rows = conn.execute(REGISTERED_SQL, {"hostname": hostname, "now": now}).fetchall()
    return [RegisteredRuntime(**r) for r in rows]


def transitions(conn: psycopg.Connection[Any], name: str, *, limit: int = 20) -> list[Transition]:
    rows = conn.execute(
        "SELECT name, awa.safe_ts(at) AS at, from_health, to_health, reason FROM awa.health_transitions "
        "WHERE name = %s ORDER BY id DESC LIMIT %s", (name, limit),
    ).fetchall()
    return [Transition(**r) for r in rows]


def _iso(value: datetime | None) -> str:
    return value.isoformat() if value else "unknown"
