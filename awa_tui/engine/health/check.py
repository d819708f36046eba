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
from awa_tui.engine.core.errors import NotFound, SchemaError
from awa_tui.engine.core.freshness import fresh_sql
from awa_tui.engine.core.limits import HEALTH_INTERVAL_S
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
    UnservedKind,
    health_rank,
)
from awa_tui.engine.read import views
from awa_tui.instants import span_precise

# The leader's health evaluation counts as stalled when older than this.
STALE_AFTER = timedelta(seconds=3 * HEALTH_INTERVAL_S)

_SELECTION = """
    (%(owner)s::text IS NULL OR c.owner = %(owner)s)
    AND (%(schedule)s::text IS NULL OR c.name = %(schedule)s)
    AND (%(tag)s::text IS NULL OR %(tag)s = ANY(c.tags))"""

# The selected schedules, counted apart from the ones with a health other than ok (a
# schedule without a cron_health row is ok): at 1M schedules the count is an index-only
# scan and the join touches only the few recorded rows, where one LEFT JOIN of every
# schedule took half a second.
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
        WHERE r.schema_version > %(version)s AND {fresh_sql("%(now)s::timestamptz", "r")}) AS mismatched,
       -- A rolling deploy: runtimes of an older release still running beside the newer schema.
       (SELECT coalesce(array_agg(DISTINCT 'awa-tui ' || r.version || ' (schema ' || r.schema_version || ')'), '{{}}')
        FROM awa.runtime_instances r
        WHERE r.schema_version < %(version)s AND {fresh_sql("%(now)s::timestamptz", "r")}) AS older,
       (SELECT coalesce(array_agg(DISTINCT 'awa-tui ' || r.version), '{{}}')
        FROM awa.runtime_instances r
        WHERE r.schema_version = %(version)s AND {fresh_sql("%(now)s::timestamptz", "r")}) AS current
"""

# Waiting jobs (due for UNSERVED_AFTER) of kinds no live worker runs, while workers run at
# all: a schedule dropped from code, or a handler never deployed. Judged only when some
# fresh runtime says what it runs (a fleet of older runtimes says nothing).
UNSERVED_AFTER = timedelta(minutes=1)
UNSERVED_SQL = f"""
WITH served AS (
    SELECT DISTINCT unnest(r.handled_kinds) AS kind FROM awa.runtime_instances r
    WHERE r.handled_kinds IS NOT NULL AND {fresh_sql("%(now)s::timestamptz", "r")}
)
SELECT j.kind, count(*) AS n, array_agg(DISTINCT j.queue ORDER BY j.queue) AS queues
FROM awa.jobs j
WHERE j.state IN ('available', 'retryable') AND j.run_at <= %(now)s::timestamptz - %(grace)s
  AND EXISTS (SELECT 1 FROM awa.runtime_instances r
              WHERE r.handled_kinds IS NOT NULL AND {fresh_sql("%(now)s::timestamptz", "r")})
  AND j.kind NOT IN (SELECT kind FROM served)
GROUP BY j.kind ORDER BY j.kind
"""

# Jobs waiting past their run time for longer than this are a backlog `check` warns about
# (docs/alerts.yml's AwaJobsWaiting uses the same bound): workers behind, stopped, or paused
# on the queue. A paused queue is the operator's own choice and is left out.
WAITING_WARN_AFTER = timedelta(minutes=10)
WAITING_SQL = """
SELECT j.queue, count(*) AS n, min(j.run_at) AS oldest
FROM awa.jobs j
WHERE j.state IN ('available', 'retryable') AND j.run_at <= %(now)s::timestamptz - %(after)s
  AND NOT EXISTS (SELECT 1 FROM awa.queue_meta q WHERE q.queue = j.queue AND q.paused)
GROUP BY j.queue ORDER BY j.queue
"""

# Alert sinks with deliveries that failed at least once (S63, v023), through the partial
# index of pending deliveries: the oldest such alert, and the sink's newest error (never a
# URL: the deliverer keeps none in it). Older than ALERT_CRITICAL_AFTER: critical.
# Retention (v027): a walk over the finished jobs lasting this long while rounds still run has
# fallen behind (a healthy one, 20k jobs a round every 10 s, goes through a million in minutes).
RETENTION_LAP_WARN_AFTER = timedelta(hours=1)
RETENTION_RUNNING_WITHIN = timedelta(minutes=10)  # rounds recorded this recently: retention runs
RETENTION_SQL = """
SELECT awa.safe_ts(lap_started_at) AS lap_started_at, awa.safe_ts(walked_to) AS walked_to,
       awa.safe_ts(cutoff) AS cutoff, awa.safe_ts(updated_at) AS updated_at
FROM awa.retention_progress WHERE singleton
"""

ALERT_CRITICAL_AFTER = timedelta(minutes=10)
UNDELIVERED_SQL = """
SELECT d.sink, count(*) AS n, awa.safe_ts(min(o.at)) AS oldest,
       (array_agg(d.last_error ORDER BY d.last_attempt_at DESC NULLS LAST))[1] AS last_error
FROM awa.alert_deliveries d JOIN awa.alert_outbox o ON o.id = d.outbox_id
WHERE d.state = 'pending' AND d.attempts > 0
GROUP BY d.sink ORDER BY d.sink
"""

# The fleet's open alert (S70, v028): its last recorded transition, when to no_leader or
# stalled, and where it went (the outbox's partial index of fleet rows).
FLEET_ALERT_SQL = """
SELECT awa.safe_ts(t.at) AS at, t.to_state, t.reason,
       coalesce(array_agg(d.sink ORDER BY d.sink) FILTER (WHERE d.state = 'delivered'), '{}') AS sent,
       coalesce(array_agg(d.sink ORDER BY d.sink) FILTER (WHERE d.state = 'pending'), '{}') AS waiting
FROM (SELECT * FROM awa.fleet_transitions ORDER BY id DESC LIMIT 1) t
LEFT JOIN awa.alert_outbox o ON o.fleet AND o.transition_id = t.id
LEFT JOIN awa.alert_deliveries d ON d.outbox_id = o.id
WHERE t.to_state <> 'ok'
GROUP BY t.id, t.at, t.to_state, t.reason
"""
_FLEET_WORDS = {"no_leader": "no leader", "stalled": "leader stalled"}

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
    if row["older"]:
        beside = f" beside {', '.join(row['current'])}" if row["current"] else ""
        problems.append(FleetProblem(
            "schema_overlap", f"rolling deploy: {', '.join(row['older'])} still running{beside} on schema {version}; "
            "older runtimes do not lead", warning=True))
    for unserved in unserved_kinds(conn, now):
        problems.append(FleetProblem("unserved_kind", f"{unserved.waiting:,} job(s) of kind {unserved.kind} wait in "
                                     f"{', '.join(unserved.queues)}: no live runtime runs a handler for it"))
    for row in conn.execute(WAITING_SQL, {"now": now, "after": WAITING_WARN_AFTER}).fetchall():
        problems.append(FleetProblem(
            "jobs_waiting", f"{row['n']:,} job(s) on queue {row['queue']} waited over "
            f"{span_precise(WAITING_WARN_AFTER.total_seconds())} past their run time (the oldest "
            f"{span_precise((now - row['oldest']).total_seconds())}): workers are behind or not running",
            warning=True))
    for row in conn.execute(UNDELIVERED_SQL).fetchall():
        since = row["oldest"]
        problems.append(FleetProblem(
            "alert_delivery", f"alert sink {row['sink']}: {row['n']:,} alert(s) not delivered since {_iso(since)} "
            f"({row['last_error'] or 'no error recorded'})",
            warning=since is not None and now - since < ALERT_CRITICAL_AFTER))
    behind = _retention_behind(conn, now)
    if behind is not None:
        problems.append(behind)
    alert = _fleet_alert(conn)
    if alert is not None:
        problems.append(alert)
    if lead.held and not lead.stalled and lead.instance_id is not None:
        timed_out = _timed_out_pass(conn, lead.instance_id)
        if timed_out is not None:
            problems.append(timed_out)
    if any(p.code in ("no_leader", "stalled", "stale_health") for p in problems):
        # Nobody judges health: the recorded words stay ok while due fires pile up.
        from awa_tui.engine.health.overdue import overdue_problem

        overdue = overdue_problem(conn, now)
        if overdue is not None:
            problems.append(overdue)
    return problems, evaluated


def unserved_kinds(conn: psycopg.Connection[Any], now: datetime | None = None) -> list[UnservedKind]:
    """The kinds whose jobs wait (due for over a minute) while no live runtime runs their
    handler, judged only when some fresh runtime says what it runs; DB time when `now` is omitted."""
    at = now or views.db_time(conn)
    return [UnservedKind(row["kind"], row["n"], tuple(row["queues"]))
            for row in conn.execute(UNSERVED_SQL, {"now": at, "grace": UNSERVED_AFTER}).fetchall()]


def _retention_behind(conn: psycopg.Connection[Any], now: datetime) -> FleetProblem | None:
    """The leader's retention runs but its walk has not reached the end in an hour: the jobs
    table grows until it does (a retention that does not run at all is a choice, or a leader
    problem reported on its own)."""
    row = conn.execute(RETENTION_SQL).fetchone()
    if row is None or row["lap_started_at"] is None or row["updated_at"] is None:
        return None
    if now - row["updated_at"] > RETENTION_RUNNING_WITHIN or now - row["lap_started_at"] < RETENTION_LAP_WARN_AFTER:
        return None
    walked = "" if row["walked_to"] is None else (
        f"; it has reached jobs finished {_iso(row['walked_to'])}, the horizon is {_iso(row['cutoff'])}")
    return FleetProblem("retention_behind", f"retention has not been through the finished jobs since "
                        f"{_iso(row['lap_started_at'])} ({span_precise((now - row['lap_started_at']).total_seconds())})"
                        f"{walked}: the jobs table grows until it is", warning=True)


def _fleet_alert(conn: psycopg.Connection[Any]) -> FleetProblem | None:
    """The fleet's open alert, in operator words (a warning: the live problems above say
    how bad it is now; the alert is what reached, or waits to reach, a person)."""
    exists = conn.execute("SELECT to_regclass('awa.fleet_transitions') IS NOT NULL AS found").fetchone()
    if not exists or not exists["found"]:
        return None  # a schema before v028 (a rolled-back one): no fleet alerts
    row = conn.execute(FLEET_ALERT_SQL).fetchone()
    if row is None:
        return None
    where = []
    if row["sent"]:
        where.append(f"sent to {', '.join(row['sent'])}")
    if row["waiting"]:
        where.append(f"waiting to reach {', '.join(row['waiting'])}")
    return FleetProblem("fleet_alert", f"fleet alert open since {_iso(row['at'])}: "
                        f"{_FLEET_WORDS.get(row['to_state'], row['to_state'])}: {row['reason']}; "
                        f"{'; '.join(where) or 'no sink takes it'}", warning=True)


def _timed_out_pass(conn: psycopg.Connection[Any], instance_id: UUID) -> FleetProblem | None:
    """S59: the leader's newest pass (its snapshot) gave up on a lock or statement timeout."""
    from awa_tui.engine.read.fleet import describe
    from awa_tui.engine.read.passes import from_json

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
    if any(not p.warning for p in fleet) or any(s.health in CRITICAL or s.autopaused for s in unhealthy):
        status, code = "critical", EXIT_CRITICAL
    elif fleet or any(s.health in WARNING for s in unhealthy):
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
