"""Read models the console and the CLI show. Plain dicts, DB time, no side effects."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg

from awa_tui.engine.errors import NotFound
from awa_tui.engine.schedule import upcoming_fires

FRESH_MIN = timedelta(seconds=30)

SCHEDULES_SQL = """
SELECT c.name, c.cron_expr, c.timezone, c.kind, c.queue, c.priority, c.max_attempts,
       c.missed_fire_policy, c.last_enqueued_at, c.next_fire_at, c.created_at, c.updated_at,
       c.paused_at, c.paused_by, c.owner, c.retired_at, c.retired_by,
       coalesce(q.paused, false) AS queue_paused, q.paused_by AS queue_paused_by,
       CASE WHEN c.retired_at IS NOT NULL THEN 'retired'
            WHEN c.paused_at IS NOT NULL THEN 'paused'
            ELSE 'active' END AS state
FROM awa.cron_jobs c
LEFT JOIN awa.queue_meta q ON q.queue = c.queue
WHERE (%(pattern)s::text IS NULL OR c.name ILIKE %(pattern)s OR c.kind ILIKE %(pattern)s
       OR c.queue ILIKE %(pattern)s OR c.owner ILIKE %(pattern)s)
ORDER BY c.name
LIMIT %(limit)s
"""


def db_time(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("SELECT clock_timestamp() AS now").fetchone()
    assert row is not None
    return row["now"]


def _like(text: str | None) -> str | None:
    if not text:
        return None
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def list_schedules(
    conn: psycopg.Connection[Any], *, filter_text: str | None = None, limit: int = 100000
) -> list[dict[str, Any]]:
    """Every schedule with its state and queue pause (S18 badge), name order."""
    return conn.execute(SCHEDULES_SQL, {"pattern": _like(filter_text), "limit": limit}).fetchall()


def get_schedule(conn: psycopg.Connection[Any], name: str) -> dict[str, Any]:
    row = conn.execute(
        "SELECT c.*, coalesce(q.paused, false) AS queue_paused, q.paused_by AS queue_paused_by "
        "FROM awa.cron_jobs c LEFT JOIN awa.queue_meta q ON q.queue = c.queue WHERE c.name = %s",
        (name,),
    ).fetchone()
    if row is None:
        raise NotFound(f"unknown schedule {name!r}")
    row["state"] = "retired" if row["retired_at"] else "paused" if row["paused_at"] else "active"
    return row


def next_fires(conn: psycopg.Connection[Any], name: str, count: int = 5) -> list[dict[str, Any]]:
    """The next fires after now (DB time) in UTC and the schedule's zone, with DST marks."""
    row = get_schedule(conn, name)
    now = db_time(conn)
    start = max(now, row["last_enqueued_at"]) if row["last_enqueued_at"] else now
    from zoneinfo import ZoneInfo

    zone = ZoneInfo(row["timezone"])
    return [
        {"utc": f.at, "local": f.at.astimezone(zone), "dst": f.mark}
        for f in upcoming_fires(row["cron_expr"], row["timezone"], start, count)
    ]


def recent_fires(conn: psycopg.Connection[Any], name: str, limit: int = 10) -> list[dict[str, Any]]:
    """Recent jobs written for a schedule, with their states and lateness."""
    return conn.execute(
        "SELECT id, state, attempt, created_at, metadata ->> 'cron_fire_time' AS fire_time, "
        "coalesce((metadata ->> 'triggered_manually')::boolean, false) AS manual, "
        "created_at - (metadata ->> 'cron_fire_time')::timestamptz AS lateness "
        "FROM awa.jobs WHERE metadata ? 'cron_name' AND metadata ->> 'cron_name' = %s "
        "ORDER BY id DESC LIMIT %s",
        (name, limit),
    ).fetchall()


def list_queues(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Queues known from pause rows, schedules or jobs, with pause state and counts."""
    return conn.execute(
        """
        WITH names AS (
            SELECT queue FROM awa.queue_meta
            UNION SELECT queue FROM awa.cron_jobs
            UNION SELECT DISTINCT queue FROM awa.jobs WHERE state IN ('available', 'retryable', 'running')
        )
        SELECT n.queue, coalesce(q.paused, false) AS paused, q.paused_at, q.paused_by,
               (SELECT count(*) FROM awa.jobs j
                 WHERE j.queue = n.queue AND j.state IN ('available', 'retryable')) AS available,
               (SELECT count(*) FROM awa.jobs j WHERE j.queue = n.queue AND j.state = 'running') AS running,
               (SELECT count(*) FROM awa.cron_jobs c WHERE c.queue = n.queue) AS schedules
        FROM names n LEFT JOIN awa.queue_meta q ON q.queue = n.queue
        ORDER BY n.queue
        """
    ).fetchall()


def list_runtimes(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Runtime snapshots with freshness judged in DB time (S21)."""
    return conn.execute(
        """
        SELECT instance_id, hostname, pid, version, protocol_version, started_at, last_seen_at,
               snapshot_interval, is_leader, health, stopped_at, owner, authoritative, manifest_hash,
               (stopped_at IS NULL AND now() - last_seen_at
                   <= greatest(%(fresh_min)s::interval, 3 * snapshot_interval)) AS fresh
        FROM awa.runtime_instances
        ORDER BY (stopped_at IS NULL) DESC, last_seen_at DESC
        """,
        {"fresh_min": FRESH_MIN},
    ).fetchall()


def list_audit(
    conn: psycopg.Connection[Any], *, target: str | None = None, limit: int = 100
) -> list[dict[str, Any]]:
    return conn.execute(
        "SELECT id, at, operator, action, target, before, after, detail FROM awa.audit_log "
        "WHERE %(target)s::text IS NULL OR target = %(target)s ORDER BY id DESC LIMIT %(limit)s",
        {"target": target, "limit": limit},
    ).fetchall()
