"""Read and operate an upstream Awa (awa-pg) database through upstream's own tables.

What is read, and where (upstream schema v040 = awa-pg 0.6.x):
- schedules: awa.cron_jobs (name, cron_expr, timezone, kind, queue, priority, max_attempts,
  missed_fire_policy, last_enqueued_at, paused_at/paused_by since v026, created_at, updated_at);
  the next fire is computed by awa-tui's arithmetic (cron.expression.next_fire), not stored upstream.
- fires: the public awa.jobs view (live and terminal jobs of both of upstream's storage
  engines), matched on metadata.cron_name as upstream's leader and trigger stamp it.
- runtimes: awa.runtime_instances; queues: awa.queue_meta plus the counts of awa.jobs.

What is written is what upstream's own processes honour, in the shape its own code writes:
- pause/resume: awa.cron_jobs.paused_at/paused_by/updated_at (its leader fires only rows with
  paused_at IS NULL, re-checked inside its atomic enqueue);
- trigger: one job through awa.insert_job_compat() with the row's kind, queue, args, priority,
  max_attempts, tags and metadata || {cron_name, triggered_manually: true}, exactly as its own
  trigger does, so its workers claim and run it; last_enqueued_at is not touched;
- queue pause/resume: awa.queue_meta.paused (its workers claim nothing from a paused queue).

awa-tui's audit trail for these actions lives in its own schema, awa_tui_audit, created only
by an explicit init_audit(); upstream's schema is never altered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from awa_tui.engine.core.db import ConnectionSource, connect, translate
from awa_tui.engine.core.errors import Conflict, NotFound, SchemaError, ValidationError
from awa_tui.engine.core.guards import check_operator, require_writable
from awa_tui.engine.core.standby import ServerRole
from awa_tui.engine.cron.expression import next_fire, parse_timezone, refuse_interval_upstream, upcoming_fires
from awa_tui.engine.migrations.detect import detect_schema
from awa_tui.engine.read.fleet import ReadWait
from awa_tui.engine.read.results import TriggeredJob
from awa_tui.engine.upstream.models import (
    ActionOutcome,
    AuditEntry,
    SchemaInfo,
    UpcomingFire,
    UpstreamCapabilities,
    UpstreamFire,
    UpstreamQueue,
    UpstreamRuntime,
    UpstreamSchedule,
    UpstreamScheduleDetail,
)

# The queue_meta state an audit entry records before and after a queue action.
QUEUE_STATE = "jsonb_build_object('paused', paused, 'paused_at', paused_at, 'paused_by', paused_by)"

CAPABILITIES_SQL = """
SELECT EXISTS (SELECT 1 FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
                 JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'awa' AND c.relname = 'cron_jobs' AND a.attname = 'paused_at'
                  AND NOT a.attisdropped) AS schedule_pause,
       EXISTS (SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = 'awa' AND p.proname = 'insert_job_compat') AS trigger,
       EXISTS (SELECT 1 FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
                 JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'awa' AND c.relname = 'queue_meta' AND a.attname = 'paused'
                  AND NOT a.attisdropped) AS queue_pause
"""

AUDIT_PRESENT_SQL = """
SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'awa_tui_audit' AND c.relname = 'audit_log' AND c.relkind = 'r') AS present
"""

AUDIT_DDL = """
CREATE SCHEMA IF NOT EXISTS awa_tui_audit;
CREATE TABLE IF NOT EXISTS awa_tui_audit.audit_log (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    operator  text NOT NULL,
    action    text NOT NULL,
    target    text NOT NULL,
    before    jsonb,
    after     jsonb,
    detail    jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX IF NOT EXISTS audit_log_target_idx ON awa_tui_audit.audit_log (target, id);
CREATE OR REPLACE FUNCTION awa_tui_audit.append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'awa_tui_audit.audit_log is append-only' USING ERRCODE = 'insufficient_privilege';
END;
$$;
DROP TRIGGER IF EXISTS audit_log_append_only ON awa_tui_audit.audit_log;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON awa_tui_audit.audit_log
    FOR EACH ROW EXECUTE FUNCTION awa_tui_audit.append_only();
DROP TRIGGER IF EXISTS audit_log_no_truncate ON awa_tui_audit.audit_log;
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON awa_tui_audit.audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION awa_tui_audit.append_only();
"""

SCHEDULES_SQL = """
SELECT c.name, c.cron_expr, c.timezone, c.kind, c.queue, c.priority, c.max_attempts,
       c.last_enqueued_at, c.created_at, c.updated_at, c.tags,
       -- Older upstream schemas lack these columns (policy: v015, pause: v026); to_jsonb reads
       -- them where they exist and yields NULL where they do not.
       coalesce(to_jsonb(c) ->> 'missed_fire_policy', 'coalesce') AS missed_fire_policy,
       (to_jsonb(c) ->> 'paused_at')::timestamptz AS paused_at, to_jsonb(c) ->> 'paused_by' AS paused_by,
       coalesce(q.paused, false) AS queue_paused, q.paused_at AS queue_paused_at, q.paused_by AS queue_paused_by
FROM awa.cron_jobs c LEFT JOIN awa.queue_meta q ON q.queue = c.queue
WHERE %(name)s::text IS NULL OR c.name = %(name)s
ORDER BY c.name
"""

FIRES_SQL = """
SELECT id, state::text AS state, attempt, queue, created_at, finalized_at,
       metadata ->> 'cron_fire_time' AS fire_time, metadata -> 'triggered_manually' AS manual
FROM awa.jobs
WHERE metadata ->> 'cron_name' = %s
ORDER BY id DESC
LIMIT %s
"""

LAST_FIRES_SQL = """
SELECT DISTINCT ON (metadata ->> 'cron_name')
       metadata ->> 'cron_name' AS cron_name, id, state::text AS state, attempt, queue, created_at, finalized_at,
       metadata ->> 'cron_fire_time' AS fire_time, metadata -> 'triggered_manually' AS manual
FROM awa.jobs
WHERE metadata ->> 'cron_name' IS NOT NULL
ORDER BY metadata ->> 'cron_name', id DESC
"""

WRITE_ACCESS_SQL = """
SELECT current_user AS role, pg_is_in_recovery() AS standby,
       has_table_privilege('awa.cron_jobs', 'UPDATE') AS schedules,
       has_table_privilege('awa.queue_meta', 'UPDATE') AS queues
"""

RUNTIMES_SQL = """
SELECT instance_id::text AS instance_id, hostname, pid, version, started_at, last_seen_at,
       snapshot_interval_ms, healthy, leader, shutting_down, {capability} AS storage_capability,
       ARRAY(SELECT q ->> 'queue' FROM jsonb_array_elements(
                 CASE WHEN jsonb_typeof(queues) = 'array' THEN queues ELSE '[]'::jsonb END) AS q
             WHERE q ->> 'queue' IS NOT NULL) AS queue_names,
       -- upstream's own staleness rule (RuntimeInstance::stale_cutoff)
       last_seen_at + make_interval(secs => greatest(3 * greatest(snapshot_interval_ms, 1000), 30000) / 1000.0)
           < coalesce(%(now)s::timestamptz, clock_timestamp()) AS stale
FROM awa.runtime_instances
ORDER BY leader DESC, last_seen_at DESC, started_at DESC
"""

QUEUES_SQL = """
WITH counts AS (
    SELECT queue,
           count(*) FILTER (WHERE state = 'available') AS available,
           count(*) FILTER (WHERE state IN ('scheduled', 'retryable')) AS scheduled,
           count(*) FILTER (WHERE state = 'running') AS running,
           count(*) FILTER (WHERE state = 'failed') AS failed,
           count(*) FILTER (WHERE state = 'completed') AS completed
    FROM awa.jobs GROUP BY queue
),
snapshot_queues AS (
    SELECT DISTINCT q ->> 'queue' AS queue
    FROM awa.runtime_instances r,
         jsonb_array_elements(CASE WHEN jsonb_typeof(r.queues) = 'array' THEN r.queues ELSE '[]'::jsonb END) AS q
),
names AS (
    SELECT queue FROM awa.queue_meta
    UNION SELECT queue FROM awa.cron_jobs
    UNION SELECT queue FROM counts
    UNION SELECT queue FROM snapshot_queues WHERE queue IS NOT NULL
)
SELECT n.queue, coalesce(m.paused, false) AS paused, m.paused_at, m.paused_by,
       coalesce(c.available, 0) AS available, coalesce(c.scheduled, 0) AS scheduled,
       coalesce(c.running, 0) AS running, coalesce(c.failed, 0) AS failed,
       coalesce(c.completed, 0) AS completed,
       (SELECT count(*) FROM awa.cron_jobs j WHERE j.queue = n.queue) AS schedules
FROM names n
LEFT JOIN awa.queue_meta m ON m.queue = n.queue
LEFT JOIN counts c ON c.queue = n.queue
ORDER BY n.queue
"""


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)  # repr: names from the database may hold control bytes
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _parse_instant(text: str | None) -> datetime | None:
    """metadata.cron_fire_time as upstream writes it ('2026-11-30 22:33:28+00'); None if unreadable."""
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return None  # one unreadable stamp must not hide the other fires
    return value if value.tzinfo is not None else None


def _fire(r: dict[str, Any]) -> UpstreamFire:
    return UpstreamFire(
        job_id=r["id"], state=r["state"], attempt=r["attempt"], queue=r["queue"],
        created_at=r["created_at"], finalized_at=r["finalized_at"],
        fire_time=_parse_instant(r["fire_time"]), manual=r["manual"] is True,
    )


def init_audit(dsn: str) -> bool:
    """Create awa-tui's audit trail for upstream mode (schema awa_tui_audit); idempotent.

    Returns True if the table was created now, False if it existed. Upstream's own `awa`
    schema is not touched.
    """
    conn = connect(dsn, application_name="awa-tui init-audit")
    try:
        with conn.transaction():
            existed = bool(conn.execute(AUDIT_PRESENT_SQL).fetchone()["present"])  # type: ignore[index]
            conn.execute(AUDIT_DDL)
        return not existed
    except psycopg.Error as exc:
        raise translate(exc) from None
    finally:
        conn.close()


class UpstreamAdapter:
    """Operations on an upstream Awa database; every result is a frozen dataclass.

    `now` parameters are UTC instants to compute at (tests inject them); by default the
    database clock is used, like everywhere else in awa-tui.
    """

    def __init__(self, dsn: str, *, read_only: bool = False, application_name: str = "awa-tui upstream") -> None:
        self.read_only = read_only
        self._source = ConnectionSource(dsn, application_name, read_only=read_only)
        self._info: SchemaInfo | None = None
        self._caps: UpstreamCapabilities | None = None

    def close(self) -> None:
        self._source.close_all()

    def read_wait(self, thread_id: int, bound: timedelta) -> ReadWait | None:
        """What this adapter's statement on thread `thread_id` waits on (S75), read on another
        of its connections within `bound`; None when that thread holds none."""
        from awa_tui.engine.read.blockers import thread_wait

        return thread_wait(self._source, thread_id, bound)

    # --- schema ---------------------------------------------------------------------------

    def schema(self) -> SchemaInfo:
        """The database's schema (re-read each call)."""
        with self._source.connection() as conn:
            return detect_schema(conn)

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection to a database checked (once) to hold an upstream Awa schema."""
        with self._source.connection() as conn:
            if self._info is None:
                info = detect_schema(conn)
                if info.kind != "upstream":
                    raise SchemaError(f"not an upstream Awa database: {info.detail}")
                row = conn.execute(CAPABILITIES_SQL).fetchone()
                assert row is not None
                self._caps = UpstreamCapabilities(bool(row["schedule_pause"]), bool(row["trigger"]),
                                                  bool(row["queue_pause"]))
                self._info = info
            yield conn

    def capabilities(self) -> UpstreamCapabilities:
        with self._conn():
            assert self._caps is not None
            return self._caps

    def info(self) -> SchemaInfo:
        """The upstream schema found at the first connection (its version names refusals)."""
        with self._conn():
            assert self._info is not None
            return self._info

    def audited(self) -> bool:
        """Whether actions are recorded (awa_tui_audit.audit_log exists; see init_audit)."""
        with self._conn() as conn:
            return _audit_present(conn)

    # --- reads ----------------------------------------------------------------------------

    @staticmethod
    def _schedule_rows(conn: psycopg.Connection[Any], name: str | None) -> list[dict[str, Any]]:
        return conn.execute(SCHEDULES_SQL, {"name": name}).fetchall()

    @staticmethod
    def _now(conn: psycopg.Connection[Any], now: datetime | None) -> datetime:
        if now is not None:
            if now.tzinfo is None:
                raise ValidationError(f"now: an aware UTC instant is required, got {now!r}")
            return now
        row = conn.execute("SELECT clock_timestamp() AS now").fetchone()
        assert row is not None
        return row["now"]

    @staticmethod
    def _schedule(row: dict[str, Any], now: datetime) -> UpstreamSchedule:
        after = max(now, row["last_enqueued_at"]) if row["last_enqueued_at"] else now
        fire_at: datetime | None = None
        mark: str | None = None
        problem: str | None = None
        try:
            refuse_interval_upstream(row["cron_expr"])  # croner has no @every: upstream never fires it
            fire = next_fire(row["cron_expr"], row["timezone"], after)
            fire_at, mark = fire.at, fire.mark
        except ValidationError as exc:
            # croner parses a few expressions awa-tui refuses (L in the hour field, which never
            # fires): this row gets no next fire and says why; the others are unaffected.
            problem = exc.message
        return UpstreamSchedule(
            name=row["name"], cron_expr=row["cron_expr"], timezone=row["timezone"], kind=row["kind"],
            queue=row["queue"], priority=row["priority"], max_attempts=row["max_attempts"],
            missed_fire_policy=row["missed_fire_policy"], last_enqueued_at=row["last_enqueued_at"],
            paused_at=row["paused_at"], paused_by=row["paused_by"], created_at=row["created_at"],
            updated_at=row["updated_at"], queue_paused=row["queue_paused"], next_fire=fire_at,
            next_fire_mark=mark, problem=problem, tags=tuple(row["tags"] or ()),
            queue_paused_at=row["queue_paused_at"] if row["queue_paused"] else None,
            queue_paused_by=row["queue_paused_by"] if row["queue_paused"] else None,
        )

    def list_schedules(self, now: datetime | None = None) -> list[UpstreamSchedule]:
        """Every schedule in name order, with its next fire after `now` (or its last fire)."""
        with self._conn() as conn:
            at = self._now(conn, now)
            return [self._schedule(row, at) for row in self._schedule_rows(conn, None)]

    def show(
        self, name: str, *, now: datetime | None = None, count: int = 5, recent: int = 10
    ) -> UpstreamScheduleDetail:
        """One schedule: definition, next `count` fires (DST-marked), `recent` latest fires."""
        with self._conn() as conn:
            at = self._now(conn, now)
            rows = self._schedule_rows(conn, name)
            if not rows:
                raise NotFound(f"unknown schedule {_short(name)}")
            schedule = self._schedule(rows[0], at)
            extra = conn.execute("SELECT args, tags, metadata FROM awa.cron_jobs WHERE name = %s", (name,)).fetchone()
            upcoming: tuple[UpcomingFire, ...] = ()
            if schedule.problem is None:
                zone = parse_timezone(schedule.timezone)
                after = max(at, schedule.last_enqueued_at) if schedule.last_enqueued_at else at
                upcoming = tuple(UpcomingFire(f.at, f.at.astimezone(zone), f.mark)
                                 for f in upcoming_fires(schedule.cron_expr, schedule.timezone, after, count))
            fires = self._fires(conn, name, recent)
        return UpstreamScheduleDetail(
            schedule=schedule, args=extra["args"] if extra else None,
            tags=tuple(extra["tags"]) if extra else (), metadata=extra["metadata"] if extra else None,
            upcoming=upcoming, recent=tuple(fires),
        )

    @staticmethod
    def _fires(conn: psycopg.Connection[Any], name: str, limit: int) -> list[UpstreamFire]:
        return [_fire(r) for r in conn.execute(FIRES_SQL, (name, limit)).fetchall()]

    def last_fires(self) -> dict[str, UpstreamFire]:
        """Each schedule's latest job (a fire or a trigger), by schedule name."""
        with self._conn() as conn:
            rows = conn.execute(LAST_FIRES_SQL).fetchall()
        return {r["cron_name"]: _fire(r) for r in rows}

    def db_time(self) -> datetime:
        with self._conn() as conn:
            return self._now(conn, None)

    def server_role(self) -> ServerRole:
        from awa_tui.engine.core.standby import server_role

        with self._conn() as conn:
            return server_role(conn)

    def write_refusal(self) -> str | None:
        """Why this session cannot pause, resume or trigger (one line), or None if it can."""
        if self.read_only:
            return "this client is read-only"
        from awa_tui.engine.core.standby import server_where, standby_message

        with self._conn() as conn:
            row = conn.execute(WRITE_ACCESS_SQL).fetchone()
            where = server_where(conn)
        assert row is not None
        if row["standby"]:
            return standby_message(where)
        missing = [what for what, ok in (("UPDATE on awa.cron_jobs", row["schedules"]),
                                         ("UPDATE on awa.queue_meta", row["queues"])) if not ok]
        return f"role {row['role']} lacks {', '.join(missing)}" if missing else None

    def recent_fires(self, name: str, limit: int = 10) -> list[UpstreamFire]:
        """The latest jobs written for a schedule (fires and triggers), newest first."""
        with self._conn() as conn:
            return self._fires(conn, name, limit)

    def runtimes(self, now: datetime | None = None) -> list[UpstreamRuntime]:
        """Upstream's runtime snapshots, leader first; staleness judged at `now` (DB time by default)."""
        with self._conn() as conn:
            has_capability = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'awa' "
                "AND c.relname = 'runtime_instances' AND a.attname = 'storage_capability' "
                "AND NOT a.attisdropped) AS present"
            ).fetchone()["present"]  # type: ignore[index]
            sql = RUNTIMES_SQL.format(capability="storage_capability" if has_capability else "NULL::text")
            rows = conn.execute(sql, {"now": now}).fetchall()  # type: ignore[arg-type]
        return [
            UpstreamRuntime(
                instance_id=r["instance_id"], hostname=r["hostname"], pid=r["pid"], version=r["version"],
                started_at=r["started_at"], last_seen_at=r["last_seen_at"],
                snapshot_interval_ms=r["snapshot_interval_ms"], healthy=r["healthy"], leader=r["leader"],
                shutting_down=r["shutting_down"], storage_capability=r["storage_capability"],
                queues=tuple(r["queue_names"]), stale=r["stale"],
            )
            for r in rows
        ]

    def queues(self) -> list[UpstreamQueue]:
        """Every known queue with its pause state and job counts."""
        with self._conn() as conn:
            rows = conn.execute(QUEUES_SQL).fetchall()
        return [
            UpstreamQueue(
                queue=r["queue"], paused=r["paused"], paused_at=r["paused_at"], paused_by=r["paused_by"],
                available=r["available"], scheduled=r["scheduled"], running=r["running"], failed=r["failed"],
                completed=r["completed"], schedules=r["schedules"],
            )
            for r in rows
        ]

    def audit_entries(self, target: str | None = None, limit: int = 100) -> list[AuditEntry]:
        """awa-tui's audit entries, newest first; [] when the trail was never initialised."""
        with self._conn() as conn:
            if not _audit_present(conn):
                return []
            rows = conn.execute(
                "SELECT id, at, operator, action, target, before, after, detail FROM awa_tui_audit.audit_log "
                "WHERE %(t)s::text IS NULL OR target = %(t)s ORDER BY id DESC LIMIT %(n)s",
                {"t": target, "n": limit},
            ).fetchall()
        return [AuditEntry(**r) for r in rows]

    # --- actions --------------------------------------------------------------------------

    def _check_action(self, action: str, operator: str) -> str:
        require_writable(self.read_only, action)
        return check_operator(operator)

    def _need(self, capability: str) -> None:
        assert self._caps is not None and self._info is not None
        if not getattr(self._caps, capability):
            raise Conflict(f"{capability.replace('_', ' ')} is not supported by this {self._info.detail}")

    def pause(self, name: str, operator: str) -> ActionOutcome:
        """Set paused_at/paused_by: upstream's leader stops firing the schedule."""
        operator = self._check_action("pause", operator)
        return self._change_pause(
            "pause", operator, name, "schedule_pause", lambda conn: _lock_schedule(conn, name),
            lambda before: None if before is None or before["paused_at"] is None
            else f"schedule {_short(name)} is already paused (by {_short(before['paused_by'])})",
            "UPDATE awa.cron_jobs SET paused_at = now(), paused_by = %s, updated_at = now() WHERE name = %s "
            "RETURNING jsonb_build_object('paused_at', paused_at, 'paused_by', paused_by) AS state",
            (operator, name), f"paused schedule {name!r}",
        )

    def resume(self, name: str, operator: str) -> ActionOutcome:
        """Clear the pause; upstream's missed_fire_policy decides what fires next."""
        operator = self._check_action("resume", operator)
        return self._change_pause(
            "resume", operator, name, "schedule_pause", lambda conn: _lock_schedule(conn, name),
            lambda before: f"schedule {_short(name)} is not paused"
            if before is None or before["paused_at"] is None else None,
            "UPDATE awa.cron_jobs SET paused_at = NULL, paused_by = NULL, updated_at = now() WHERE name = %s "
            "RETURNING jsonb_build_object('paused_at', paused_at, 'paused_by', paused_by) AS state",
            (name,), f"resumed schedule {name!r}",
        )

    def trigger(self, name: str, operator: str) -> ActionOutcome:
        """One job now (also while paused), written as upstream's own trigger writes it."""
        operator = self._check_action("trigger", operator)
        with self._conn() as conn, conn.transaction():
            self._need("trigger")
            # FOR SHARE: the definition cannot change under the insert; fires are not blocked.
            if conn.execute("SELECT 1 FROM awa.cron_jobs WHERE name = %s FOR SHARE", (name,)).fetchone() is None:
                raise NotFound(f"unknown schedule {_short(name)}")
            job = conn.execute(
                """
                SELECT inserted.id, inserted.queue, c.kind, now() AS created_at,
                       c.metadata || jsonb_build_object('cron_name', c.name, 'triggered_manually', true) AS metadata
                FROM awa.cron_jobs c
                CROSS JOIN LATERAL awa.insert_job_compat(
                    c.kind, c.queue, c.args, 'available'::awa.job_state, c.priority, c.max_attempts, NULL,
                    c.metadata || jsonb_build_object('cron_name', c.name, 'triggered_manually', true),
                    c.tags, NULL, NULL) AS inserted
                WHERE c.name = %s
                """,
                (name,),
            ).fetchone()
            assert job is not None
            audit_id = _audit(conn, operator, "trigger", name, None, {"job_id": job["id"]})
        made = TriggeredJob(id=job["id"], kind=job["kind"], queue=job["queue"], state="available",
                            metadata=job["metadata"], created_at=job["created_at"])
        return ActionOutcome("trigger", name, f"triggered schedule {name!r}: job {job['id']} on queue {job['queue']!r}",
                             audit_id is not None, audit_id, job_id=job["id"], job=made)

    def queue_pause(self, queue: str, operator: str) -> ActionOutcome:
        """awa.queue_meta.paused = true: upstream's workers claim nothing from the queue."""
        operator = self._check_action("queue pause", operator)
        _check_queue(queue)
        # Upstream's own pause_queue upserts the row the same way.
        return self._change_pause(
            "queue_pause", operator, f"queue:{queue}", "queue_pause", lambda conn: _lock_queue(conn, queue),
            lambda before: f"queue {_short(queue)} is already paused (by {_short(before['state']['paused_by'])})"
            if before is not None and before["paused"] else None,
            "INSERT INTO awa.queue_meta (queue, paused, paused_at, paused_by) VALUES (%(q)s, true, now(), %(o)s) "
            "ON CONFLICT (queue) DO UPDATE SET paused = true, paused_at = now(), paused_by = %(o)s "
            f"RETURNING {QUEUE_STATE} AS state",
            {"q": queue, "o": operator}, f"paused queue {queue!r}",
        )

    def queue_resume(self, queue: str, operator: str) -> ActionOutcome:
        operator = self._check_action("queue resume", operator)
        _check_queue(queue)
        return self._change_pause(
            "queue_resume", operator, f"queue:{queue}", "queue_pause", lambda conn: _lock_queue(conn, queue),
            lambda before: f"queue {_short(queue)} is not paused" if before is None or not before["paused"] else None,
            "UPDATE awa.queue_meta SET paused = false, paused_at = NULL, paused_by = NULL WHERE queue = %s "
            f"RETURNING {QUEUE_STATE} AS state",
            (queue,), f"resumed queue {queue!r}",
        )

    def _change_pause(
        self, action: str, operator: str, target: str, capability: str,
        lock: Callable[[psycopg.Connection[Any]], dict[str, Any] | None],
        refusal: Callable[[dict[str, Any] | None], str | None],
        sql: str, params: tuple[Any, ...] | dict[str, Any], summary: str,
    ) -> ActionOutcome:
        """One pause or resume (of a schedule or a queue) in one transaction: lock the row,
        refuse a change that changes nothing, write it, and audit its state before and after."""
        with self._conn() as conn, conn.transaction():
            self._need(capability)
            before = lock(conn)
            problem = refusal(before)
            if problem is not None:
                raise Conflict(problem)
            after = conn.execute(sql, params).fetchone()
            assert after is not None
            audit_id = _audit(conn, operator, action, target, before["state"] if before else None, after["state"])
        return ActionOutcome(action, target, summary, audit_id is not None, audit_id)


def _check_queue(queue: str) -> None:
    if not isinstance(queue, str) or not 1 <= len(queue) <= 200:
        raise ValidationError(f"queue: must be 1..200 characters, got {_short(queue)}")


def _lock_schedule(conn: psycopg.Connection[Any], name: str) -> dict[str, Any]:
    """Lock the schedule row to change its pause (the caller checked the columns exist), or NotFound."""
    row = conn.execute(
        "SELECT paused_at, paused_by, jsonb_build_object('paused_at', paused_at, 'paused_by', paused_by) AS state "
        "FROM awa.cron_jobs WHERE name = %s FOR UPDATE",
        (name,),
    ).fetchone()
    if row is None:
        raise NotFound(f"unknown schedule {_short(name)}")
    return row


def _lock_queue(conn: psycopg.Connection[Any], queue: str) -> dict[str, Any] | None:
    """The queue_meta row, locked; None when upstream has no row for the queue yet."""
    known = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM awa.queue_meta WHERE queue = %(q)s)"
        " OR EXISTS (SELECT 1 FROM awa.cron_jobs WHERE queue = %(q)s)"
        " OR EXISTS (SELECT 1 FROM awa.jobs WHERE queue = %(q)s) AS known",
        {"q": queue},
    ).fetchone()
    if not known or not known["known"]:
        raise NotFound(f"unknown queue {_short(queue)} (no schedule, job or pause row uses it)")
    return conn.execute(
        f"SELECT paused, {QUEUE_STATE} AS state FROM awa.queue_meta WHERE queue = %s FOR UPDATE",
        (queue,),
    ).fetchone()


def _audit_present(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(AUDIT_PRESENT_SQL).fetchone()
    return bool(row and row["present"])


def _audit(
    conn: psycopg.Connection[Any], operator: str, action: str, target: str, before: Any, after: Any
) -> int | None:
    """Append to awa_tui_audit.audit_log inside the action's transaction; None when it does not exist.

    A trail that exists but refuses the insert (no privilege) fails the action: an operator
    who initialised auditing never gets an unaudited change.
    """
    if not _audit_present(conn):
        return None
    row = conn.execute(
        "INSERT INTO awa_tui_audit.audit_log (operator, action, target, before, after) "
        "VALUES (%s, %s, %s, %s, %s) RETURNING id",
        (operator, action, target, Jsonb(before), Jsonb(after)),
    ).fetchone()
    assert row is not None
    return int(row["id"])
