"""Read models the console and the CLI show (awa_tui/engine/read/models.py), DB time, no side effects.

Each read imports the models, parsers and compilers it uses (start-up time): `runtime list`
builds no schedule model and loads no cron parser, `cron show` no filter compiler."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg

from awa_tui.engine.core.db import LEADER_LOCK_KEY
from awa_tui.engine.core.errors import NotFound, ValidationError
from awa_tui.engine.core.freshness import fresh_sql
from awa_tui.engine.core.health_words import UNHEALTHY
from awa_tui.engine.core.limits import OVERDUE_AFTER_S
from awa_tui.engine.core.standby import read_time
from awa_tui.engine.schedules.columns import FAULT_SQL, VIEW_ROW, safe_listed

if TYPE_CHECKING:
    from awa_tui.engine.ledger.models import AuditEntry
    from awa_tui.engine.read.fleet import Leadership, QueueRow, RuntimeRow
    from awa_tui.engine.read.models import Fire, NextFire, ScheduleInfo, ScheduleRow
    from awa_tui.engine.read.page import Attention, PageQuery, ScheduleDetail, SchedulePage
    from awa_tui.engine.schedules.definition import Schedule
    from awa_tui.filters import Filter

# S15: a row written by hand can hold instants Python cannot load (infinity, BC dates):
# they arrive as NULL and `fault` says why, so one poison row never fails a whole view.
# schedule.row_fault completes the verdict (the `fault` key) with the parser's: BROKEN.
SCHEDULE_COLUMNS = f"{safe_listed(VIEW_ROW)}, {FAULT_SQL} AS fault"

# A job row as the console reads it: a hand-written cron_fire_time that is no instant, or
# an unloadable created_at, shows as unknown instead of failing the view.
_JOB_CREATED = "awa.safe_ts({j}.created_at)"
_JOB_FIRE = "awa.try_timestamptz({j}.metadata ->> 'cron_fire_time')"

# A finished schedule (past end_at or max_fires, v009) fires nothing more; paused or
# not, FINISHED is what an operator needs to know about it.
STATE_SQL = (
    "CASE WHEN c.retired_at IS NOT NULL THEN 'retired' WHEN c.finished_at IS NOT NULL THEN 'finished' "
    "WHEN c.paused_at IS NOT NULL THEN 'paused' ELSE 'active' END"
)

SCHEDULES_SQL = f"""
SELECT {SCHEDULE_COLUMNS},
       coalesce(q.paused, false) AS queue_paused, q.paused_by AS queue_paused_by,
       {STATE_SQL} AS state
FROM awa.cron_jobs c
LEFT JOIN awa.queue_meta q ON q.queue = c.queue
WHERE {{text}} AND {{condition}}
ORDER BY c.name
LIMIT %(limit)s
"""


def db_time(conn: psycopg.Connection[Any]) -> datetime:
    """The time reads are judged at: the database's clock, or on a standby replaying behind,
    the time of the newest change it replayed (core/standby.py)."""
    return read_time(conn)


def _like(text: str | None) -> str | None:
    if not text:
        return None
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _text_filter(text: str | None) -> tuple[str, dict[str, Any]]:
    """The plain free text (the console's `/`, `filter_text`) as a condition over `c` and
    its parameter: a substring of the name, kind, queue or owner, any case
    (filter_sql.text_sql); no text, no condition."""
    from awa_tui.engine.filtering.sql import text_sql

    pattern = _like(text)
    if pattern is None:
        return "true", {}
    return text_sql("%(pattern)s", pattern), {"pattern": pattern}


def list_schedules(
    conn: psycopg.Connection[Any], *, filter_text: str | None = None, limit: int = 100000,
    where: Filter | None = None, now: datetime | None = None,
) -> list[ScheduleRow]:
    """Every schedule with its state and queue pause (S18 badge), name order; `fault` is
    why it is BROKEN (S15), or None. `where` is a parsed filter (awa_tui/filters.py),
    judged at `now` (DB time when omitted), on top of the free text."""
    from awa_tui.engine.filtering.sql import schedule_condition
    from awa_tui.engine.read.models import ScheduleRow
    from awa_tui.engine.schedules.definition import row_fault

    condition = schedule_condition(conn, where, now)
    text, text_params = _text_filter(filter_text)
    rows = conn.execute(
        SCHEDULES_SQL.format(text=text, condition=condition.sql),
        {**text_params, "limit": limit, **condition.params},
    ).fetchall()
    return [ScheduleRow(**{**row, "fault": row_fault(row)}) for row in rows]


def _json_value(text: str) -> Any:
    """A stored JSON document as Python; one Python cannot hold (a number of more than
    4300 digits, nesting deeper than the recursion limit) stays its text."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def get_schedule(conn: psycopg.Connection[Any], name: str) -> ScheduleInfo:
    from awa_tui.engine.read.models import ScheduleInfo
    from awa_tui.engine.schedules.definition import row_fault

    row = conn.execute(
        f"SELECT {SCHEDULE_COLUMNS}, c.args::text AS args, c.metadata::text AS metadata, "
        "array_replace(c.tags, NULL, 'NULL') AS tags, "
        "coalesce(q.paused, false) AS queue_paused, q.paused_by AS queue_paused_by, "
        f"{STATE_SQL} AS state "
        "FROM awa.cron_jobs c LEFT JOIN awa.queue_meta q ON q.queue = c.queue WHERE c.name = %s",
        (name,),
    ).fetchone()
    if row is None:
        raise NotFound(f"unknown schedule {name!r}")
    row["args"], row["metadata"] = _json_value(row["args"]), _json_value(row["metadata"])
    row["fault"] = row_fault(row)
    return ScheduleInfo(**row)


def definition_fires(conn: psycopg.Connection[Any], schedule: Schedule, count: int = 5, *,
                     after: datetime | None = None, fired: int = 0) -> list[NextFire]:
    """The next fires of a definition not (or not yet) stored: a dry run's preview of a
    schedule made or edited at run time (S64), exclusions and DST marks included, from
    `after` (default: now, DB time); `fired`: the scheduled fires an edited schedule has
    made already, which its max_fires counts."""
    from awa_tui.engine.calendars.store import refuse_unknown_calendars
    from awa_tui.engine.read.models import ScheduleInfo

    refuse_unknown_calendars(conn, [schedule])
    d = schedule.definition()
    row = ScheduleInfo(
        name=schedule.name, cron_expr=d["cron_expr"], timezone=d["timezone"], kind=d["kind"], queue=d["queue"],
        priority=d["priority"], max_attempts=d["max_attempts"], missed_fire_policy=d["missed_fire_policy"],
        last_enqueued_at=None, next_fire_at=None, created_at=None, updated_at=None, paused_at=None,
        paused_by=None, owner=None, retired_at=None, retired_by=None, fault=None, args=d["args"],
        metadata=d["metadata"], tags=d["tags"], queue_paused=False, queue_paused_by=None, state="active",
        start_at=schedule.start_at, end_at=schedule.end_at, max_fires=schedule.max_fires, fires_count=fired,
        exclude_dates=d.get("exclude_dates"), exclude_calendars=d.get("exclude_calendars"),
    )
    return _upcoming(row, after or db_time(conn), count, conn)


def _refuse_broken(row: ScheduleInfo) -> None:
    if row.fault:
        raise ValidationError(row.fault)  # the reason alone, as the evaluator words it


def next_fires(
    conn: psycopg.Connection[Any], name: str, count: int = 5, *, after: datetime | None = None
) -> list[NextFire]:
    """The next fires after `after` (default: now in DB time, or the last fire if later),
    in UTC and the schedule's zone, with DST marks."""
    row = get_schedule(conn, name)
    _refuse_broken(row)  # S15: a one-line error naming the fault, not a crash
    now = db_time(conn)
    start = max(now, row.last_enqueued_at) if row.last_enqueued_at else now
    if after is None:
        after = start
    elif row.max_fires is not None and after > start:
        # A later page: the fires between the first page's start and `after` use up max_fires too.
        before = _upcoming(row, start, max(row.max_fires - row.fires_count, 0), conn)
        shown = sum(1 for fire in before if fire.excluded is None and fire.utc <= after)
        row = replace(row, fires_count=row.fires_count + shown)
    return _upcoming(row, after, count, conn)


EXCLUDED_SHOWN_LIMIT = 1000  # instants scanned past the excluded ones for the next fires


def _upcoming(row: ScheduleInfo, after: datetime, count: int,
              conn: psycopg.Connection[Any] | None = None) -> list[NextFire]:
    """The next `count` fires, within the schedule's bounds (v009): none once finished.
    With exclusions (S56), the excluded instants among them are listed too, marked with
    the rule (at most `count` of them), and `count` fires are still sought."""
    from awa_tui.engine.cron.expression import parse_timezone, upcoming_fires
    from awa_tui.engine.read.models import NextFire

    if row.state == "finished":
        return []
    if row.start_at is not None and after < row.start_at:
        after = row.start_at - timedelta(microseconds=1)
    if row.max_fires is not None:
        count = max(0, min(count, row.max_fires - row.fires_count))
    if not count:
        return []
    zone = parse_timezone(row.timezone)
    rules = _exclusions(conn, row)
    if rules is None:
        return [NextFire(utc=f.at, local=f.at.astimezone(zone), timezone=row.timezone, dst=f.mark)
                for f in upcoming_fires(row.cron_expr, row.timezone, after, count, row.start_at)
                if row.end_at is None or f.at <= row.end_at]
    out: list[NextFire] = []
    fired = excluded = scanned = 0
    while fired < count and scanned < count + EXCLUDED_SHOWN_LIMIT:
        batch = upcoming_fires(row.cron_expr, row.timezone, after, max(count, 50), row.start_at)  # fires in batches
        for f in batch:
            scanned += 1
            if (row.end_at is not None and f.at > row.end_at) or scanned > count + EXCLUDED_SHOWN_LIMIT:
                return out
            rule = rules.rule_for(f.at, zone)
            if rule is None:
                fired += 1
            else:
                excluded += 1
            if rule is None or excluded <= count:
                out.append(NextFire(utc=f.at, local=f.at.astimezone(zone), timezone=row.timezone, dst=f.mark,
                                    excluded=rule))
            if fired == count:
                return out
        if not batch:
            break  # the end of the calendar
        after = batch[-1].at
    return out


def _exclusions(conn: psycopg.Connection[Any] | None, row: ScheduleInfo) -> Any:
    """The row's exclusions (S56), or None; an unreadable one is the row's fault, shown as such."""
    if conn is None or (row.exclude_dates is None and row.exclude_calendars is None):
        return None
    from awa_tui.engine.calendars.store import row_exclusions

    return row_exclusions(conn, {"exclude_dates": row.exclude_dates, "exclude_calendars": row.exclude_calendars})


def recent_fires(conn: psycopg.Connection[Any], name: str, limit: int = 10) -> list[Fire]:
    """Recent jobs written for a schedule, with their states and lateness."""
    rows = conn.execute(
        f"SELECT id, state, attempt, {_JOB_CREATED.format(j='j')} AS created_at, "
        "j.metadata ->> 'cron_fire_time' AS fire_time, "
        "coalesce(j.metadata ->> 'triggered_manually' = 'true', false) AS manual, "
        f"{_JOB_CREATED.format(j='j')} - {_JOB_FIRE.format(j='j')} AS lateness, "
        "CASE WHEN jsonb_typeof(j.metadata -> 'cron_replaced') = 'array' THEN j.metadata -> 'cron_replaced' END "
        "AS replaced, CASE WHEN jsonb_typeof(j.metadata -> 'cron_replaced_by') = 'number' "
        "THEN (j.metadata ->> 'cron_replaced_by')::bigint END AS replaced_by "
        "FROM awa.jobs j WHERE j.metadata ? 'cron_name' AND j.metadata ->> 'cron_name' = %s "
        "ORDER BY id DESC LIMIT %s",
        (name, limit),
    ).fetchall()
    from awa_tui.engine.ledger.states import replaced_ids
    from awa_tui.engine.read.models import Fire

    return [Fire(**{**row, "replaced": replaced_ids(row["replaced"])}) for row in rows]


def list_queues(conn: psycopg.Connection[Any]) -> list[QueueRow]:
    """Queues known from pause rows, schedules or jobs, with pause state and counts."""
    rows = conn.execute(
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
    from awa_tui.engine.read.fleet import QueueRow

    return [QueueRow(**row) for row in rows]


# The backend holding the leader lock. A standby sees no lock of its primary's sessions:
# there the replicated lease stands for it while it is live (a lease that expired there
# reads as no leader, since a stalled holder and a released lease look alike without the
# lock), judged at the standby's clock against replayed data (S58).
LEADER_PID_SQL = """CASE WHEN pg_is_in_recovery()
    THEN (SELECT backend_pid FROM awa.leader_lease
          WHERE singleton AND expires_at > coalesce(%(now)s::timestamptz, now()))
    ELSE awa.leader_lock_pid(%(key)s) END"""

# The leader lock's holder (pg_locks), its session (pg_stat_activity), and, when the lease
# names that session, the lease and the holder's runtime snapshot.
LEADERSHIP_SQL = f"""
SELECT l.pid AS backend_pid, a.application_name, host(a.client_addr) AS client_addr,
       ls.instance_id, ls.expires_at AS lease_expires_at, r.hostname, r.pid
FROM (SELECT {LEADER_PID_SQL} AS pid) l
LEFT JOIN pg_stat_activity a ON a.pid = l.pid
LEFT JOIN awa.leader_lease ls ON ls.singleton AND ls.backend_pid = l.pid
LEFT JOIN awa.runtime_instances r ON r.instance_id = ls.instance_id
WHERE l.pid IS NOT NULL
"""


def leadership(conn: psycopg.Connection[Any], now: datetime | None = None) -> Leadership:
    """Who holds the leader lock at `now` (DB time when omitted) and its lease state."""
    from awa_tui.engine.read.fleet import Leadership

    now = now or db_time(conn)
    row = conn.execute(LEADERSHIP_SQL, {"key": LEADER_LOCK_KEY, "now": now}).fetchone()
    return Leadership(now=now, **row) if row else Leadership(now=now)


def list_runtimes(conn: psycopg.Connection[Any], now: datetime | None = None) -> list[RuntimeRow]:
    """Runtime snapshots with freshness judged in DB time (S21), or at `now` if given.

    `role` is 'leader' for the runtime whose lease names the lock's holding session,
    'stalled' when that lease has expired at `now`, else 'follower'; `is_leader` is only
    what the snapshot last reported (it lags, and a runtime killed with -9 keeps it)."""
    now = now or db_time(conn)
    rows = conn.execute(
        f"""
        WITH ls AS MATERIALIZED (
            SELECT instance_id, expires_at FROM awa.leader_lease
            WHERE singleton AND backend_pid = {LEADER_PID_SQL}
        )
        SELECT r.instance_id, r.hostname, r.pid, r.version, r.protocol_version,
               awa.safe_ts(r.started_at) AS started_at, awa.safe_ts(r.last_seen_at) AS last_seen_at,
               CASE WHEN r.snapshot_interval BETWEEN interval '-1 year' AND interval '1 year'
                    THEN r.snapshot_interval END AS snapshot_interval,  -- S15: loadable or NULL
               r.is_leader, r.health, awa.safe_ts(r.stopped_at) AS stopped_at, r.owner, r.authoritative,
               r.manifest_hash, {fresh_sql("coalesce(%(now)s::timestamptz, now())", "r")} AS fresh,
               CASE WHEN ls.instance_id IS NULL THEN 'follower'
                    WHEN ls.expires_at > coalesce(%(now)s::timestamptz, now()) THEN 'leader'
                    ELSE 'stalled' END AS role,
               awa.safe_ts(ls.expires_at) AS lease_expires_at, r.recent_passes, r.schema_version,
               -- by name from the row: a schema rolled back below v019 (v034) has no such column
               coalesce((j.row ->> 'leader_protocol')::int,
                        CASE WHEN r.schema_version IS NOT NULL THEN 1 END) AS leader_protocol,
               j.row ->> 'lead_refusal' AS lead_refusal
        FROM awa.runtime_instances r
        CROSS JOIN LATERAL (SELECT to_jsonb(r) - 'manifest' - 'recent_events' AS row) j
        LEFT JOIN ls ON ls.instance_id = r.instance_id
        ORDER BY (r.stopped_at IS NULL) DESC, r.last_seen_at DESC
        """,
        {"now": now, "key": LEADER_LOCK_KEY},
    ).fetchall()
    return [_runtime_row(row) for row in rows]


def _runtime_row(row: dict[str, Any]) -> RuntimeRow:
    from awa_tui.engine.read.fleet import RuntimeRow
    from awa_tui.engine.read.passes import from_json as passes_from_json

    passes = passes_from_json(row.pop("recent_passes"))
    return RuntimeRow(**row, passes=passes)


def list_audit(
    conn: psycopg.Connection[Any], *, target: str | None = None, limit: int = 100
) -> list[AuditEntry]:
    rows = conn.execute(
        "SELECT id, at, operator, action, target, before, after, detail, db_user FROM awa.audit_log "
        "WHERE %(target)s::text IS NULL OR target = %(target)s ORDER BY id DESC LIMIT %(limit)s",
        {"target": target, "limit": limit},
    ).fetchall()
    from awa_tui.engine.ledger.models import AuditEntry

    return [AuditEntry(**row) for row in rows]


# --- console read models: one page of schedules, one schedule in detail ------------------
# Callers may pass `now` (tests inject a fixed clock); otherwise DB time is used (S9).

_UNHEALTHY_LIST = ", ".join(f"'{h}'" for h in UNHEALTHY)
HEALTH_RANK_SQL = "(CASE h.health {} ELSE {} END)".format(
    " ".join(f"WHEN '{h}' THEN {i}" for i, h in enumerate(UNHEALTHY)), len(UNHEALTHY))
UNHEALTHY_COUNTS_SQL = (
    "SELECT health, count(*) AS n FROM awa.cron_health "
    f"WHERE health <> 'ok' AND health IN ({_UNHEALTHY_LIST}) GROUP BY health"
)
WORST_SQL = (
    "SELECT h.name, h.health, awa.safe_ts(h.since) AS since, h.reason FROM awa.cron_health h "
    f"WHERE h.health <> 'ok' AND h.health IN ({_UNHEALTHY_LIST}) ORDER BY {HEALTH_RANK_SQL}, h.since, h.name LIMIT 1"
)


# No health row: ok once the leader has judged at all (rows are written on change), else
# not judged yet (NULL).
_JUDGED_OK = "(SELECT 'ok' FROM awa.health_meta WHERE evaluated_at IS NOT NULL)"

SCHEDULE_SORTS = {
    "name": "c.name",
    "next": "c.next_fire_at",
    "last": "c.last_enqueued_at",
    "state": "(CASE WHEN c.retired_at IS NOT NULL THEN 0 WHEN c.finished_at IS NOT NULL THEN 1 "
             "WHEN c.paused_at IS NOT NULL THEN 2 ELSE 3 END)",
    "queue": "c.queue",
    "owner": "c.owner",
    # S42: worst first (broken, failing, missed, late), then the rest.
    "health": HEALTH_RANK_SQL,
    # The ledger's columns (S39): failed first, then running, waiting, ok, cancelled, none.
    "result": "(CASE o.last_state WHEN 'retryable' THEN 0 WHEN 'discarded' THEN 0 WHEN 'running' THEN 1 "
              "WHEN 'available' THEN 2 WHEN 'completed' THEN 3 WHEN 'cancelled' THEN 4 ELSE 5 END)",
    "fails": "coalesce(f.n, 0)",
}

SCHEDULE_COUNTS_SQL = """
SELECT count(*) AS total,
       count(*) FILTER (WHERE c.paused_at IS NOT NULL AND c.retired_at IS NULL) AS paused,
       count(*) FILTER (WHERE c.retired_at IS NOT NULL) AS retired,
       count(*) FILTER (WHERE {text} AND {condition}) AS matched,
       count(*) FILTER (WHERE c.next_fire_at < %(overdue_before)s AND c.paused_at IS NULL
                          AND c.retired_at IS NULL AND c.finished_at IS NULL) AS overdue
FROM awa.cron_jobs c
"""

# The page is cut server-side (filter, sort, limit) so 100k schedules never cross the wire
# at once; the last fire's job is probed per row of the page only (jobs_cron_name_idx).
SCHEDULE_PAGE_SQL = f"""
WITH fails AS (  -- failed jobs of the last 24 h: few, found through jobs_state_queue_idx
    SELECT jf.metadata ->> 'cron_name' AS name, count(*) AS n FROM awa.jobs jf
    WHERE jf.state IN ('retryable', 'discarded') AND jf.metadata ? 'cron_name'
      AND jf.created_at >= %(fails_since)s
    GROUP BY 1
)
SELECT {SCHEDULE_COLUMNS},
       coalesce(q.paused, false) AS queue_paused, q.paused_by AS queue_paused_by,
       q.paused_at AS queue_paused_at,
       {STATE_SQL} AS state,
       j.state AS last_job_state,
       {_JOB_CREATED.format(j="j")} - {_JOB_FIRE.format(j="j")} AS lateness,
       coalesce(h.health, {_JUDGED_OK}) AS health, awa.safe_ts(h.since) AS health_since,
       h.reason AS health_reason,
       o.last_state, o.last_error, coalesce(f.n, 0) AS fails_24h
FROM awa.cron_jobs c
LEFT JOIN awa.queue_meta q ON q.queue = c.queue
LEFT JOIN awa.cron_health h ON h.name = c.name
LEFT JOIN fails f ON f.name = c.name
LEFT JOIN LATERAL (  -- the latest job (manual ones too), one index probe per row of the page
    SELECT jo.state AS last_state,
           CASE WHEN jsonb_typeof(jo.errors) = 'array' THEN jo.errors -> -1 ->> 'error' END AS last_error
    FROM awa.jobs jo
    WHERE jo.metadata ? 'cron_name' AND jo.metadata ->> 'cron_name' = c.name
    ORDER BY jo.metadata ->> 'cron_name' DESC, jo.id DESC LIMIT 1
) o ON true
LEFT JOIN LATERAL (
    SELECT jb.state, jb.created_at, jb.metadata FROM awa.jobs jb
    WHERE jb.metadata ? 'cron_name' AND jb.metadata ->> 'cron_name' = c.name
      AND jb.metadata ? 'cron_fire_time'
    ORDER BY jb.id DESC LIMIT 1
) j ON c.last_enqueued_at IS NOT NULL
WHERE {{filter}}
ORDER BY {{order}} {{direction}} NULLS {{nulls}}, c.name {{direction}}
LIMIT %(limit)s
"""


def _next_fire_for(row: dict[str, Any], now: datetime, cache: dict[tuple[Any, ...], Any]) -> tuple[Any, bool]:
    """(next fire instant, due?) for one schedule row, as the evaluator would see it.

    The stored hint is the first fire that is new; a hint at or before `now` means a fire
    is due (or, for a paused schedule, will fire on resume). Without a hint the next fire
    after `now` is computed, once per (expression, zone) for the whole page.
    """
    if row["state"] in ("retired", "finished") or row["fault"]:
        return None, False  # a BROKEN row (S15) fires nothing until it is repaired
    hint = row["next_fire_at"]
    if hint is not None:
        return hint, hint <= now
    key = (row["cron_expr"], row["timezone"], row.get("start_at"))  # an interval's anchor
    if key not in cache:
        from awa_tui.engine.cron.expression import next_fire

        try:
            cache[key] = next_fire(row["cron_expr"], row["timezone"], now, row.get("start_at")).at
        except (ValueError, LookupError):  # a hand-written bad row (S15) has no next fire
            cache[key] = None
    return cache[key], False


def schedule_page(conn: psycopg.Connection[Any], query: PageQuery) -> SchedulePage:
    """One page of schedules for the console: rows with next fire and last-fire lateness,
    plus counts (all, matching the filter, paused, retired; None without `counts`) and the
    `now` used. `where` is a parsed filter (awa_tui/filters.py), on top of the free text."""
    from awa_tui.engine.filtering.sql import schedule_condition
    from awa_tui.engine.ledger.models import job_result
    from awa_tui.engine.ledger.strips import strips
    from awa_tui.engine.read.page import SchedulePage, SchedulePageRow
    from awa_tui.engine.schedules.definition import row_fault

    filter_text, sort, descending, limit, where, counts = (
        query.filter_text, query.sort, query.descending, query.limit, query.where, query.counts)
    # The last page (the console's G): the same order reversed, its first `limit` rows
    # turned back; nothing between the first and the last page is read.
    backwards = descending != query.from_end
    if sort not in SCHEDULE_SORTS:
        raise ValueError(f"sort: expected one of {', '.join(SCHEDULE_SORTS)}, got {sort!r}")
    now = query.now or db_time(conn)
    condition = schedule_condition(conn, where, now)
    text, text_params = _text_filter(filter_text)
    params = {**text_params, "limit": max(1, limit), **condition.params, "fails_since": now - timedelta(hours=24),
              "overdue_before": now - timedelta(seconds=OVERDUE_AFTER_S)}
    counted = (conn.execute(SCHEDULE_COUNTS_SQL.format(text=text, condition=condition.sql), params).fetchone()
               if counts else dict.fromkeys(("total", "paused", "retired", "matched", "overdue")))
    sql = SCHEDULE_PAGE_SQL.format(
        filter=f"{text} AND {condition.sql}", order=SCHEDULE_SORTS[sort], direction="DESC" if backwards else "ASC",
        nulls="FIRST" if query.from_end else "LAST",
    )
    rows = conn.execute(sql, params).fetchall()
    if query.from_end:
        rows.reverse()
    cache: dict[tuple[Any, ...], Any] = {}
    for row in rows:
        row["fault"] = row_fault(row)
    # The outcome strips: the ledger's verdicts of each row's last due instants, for the
    # whole page at once (ledger/strips.py).
    outcomes = strips(conn, rows, now)
    page = []
    for row in rows:
        row["next_fire"], row["next_fire_due"] = _next_fire_for(row, now, cache)
        last_state = row.pop("last_state")
        row["last_result"] = "none" if last_state is None else job_result(last_state)
        row["last_error"] = row["last_error"] if row["last_result"] == "failed" else None
        row["outcomes"] = outcomes.get(row["name"], ())
        page.append(SchedulePageRow(**row))
    assert counted is not None  # an aggregate without GROUP BY always returns its row
    return SchedulePage(now=now, rows=page, **counted, **_unhealthy_summary(conn), from_end=query.from_end)


def _unhealthy_summary(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """The unhealthy schedules counted by health, and the worst one (S42), through the
    partial index of awa.cron_health (unhealthy rows only)."""
    from awa_tui.engine.read.page import Attention

    rows = conn.execute(UNHEALTHY_COUNTS_SQL).fetchall()
    worst = conn.execute(WORST_SQL).fetchone()
    return {"unhealthy": {r["health"]: r["n"] for r in rows},
            "attention": Attention(**worst) if worst else None}


def schedule_health(conn: psycopg.Connection[Any], name: str) -> Attention | None:
    """The recorded health of one schedule; ok (since unknown) when the leader has judged
    but found nothing to record, None when it has not judged yet."""
    from awa_tui.engine.read.page import Attention

    row = conn.execute(
        f"SELECT %(n)s AS name, coalesce(h.health, {_JUDGED_OK}) AS health, awa.safe_ts(h.since) AS since, "
        "h.reason FROM (SELECT 1) one LEFT JOIN awa.cron_health h ON h.name = %(n)s", {"n": name},
    ).fetchone()
    return Attention(**row) if row and row["health"] else None


def schedule_detail(
    conn: psycopg.Connection[Any],
    name: str,
    *,
    now: datetime | None = None,
    fires: int = 5,
    recent: int = 10,
    audit: int = 20,
) -> ScheduleDetail:
    """Everything the console's detail view shows about one schedule."""
    from awa_tui.engine.read.page import ScheduleDetail

    now = now or db_time(conn)
    row = get_schedule(conn, name)
    start = max(now, row.last_enqueued_at) if row.last_enqueued_at else now
    # A retired, finished or BROKEN row has no next fires.
    upcoming = _upcoming(row, start, fires, conn) if row.state not in ("retired", "finished") and not row.fault else []
    return ScheduleDetail(
        now=now,
        schedule=row,
        next=upcoming,
        recent=recent_fires(conn, name, recent),
        audit=list_audit(conn, target=name, limit=audit),
        health=schedule_health(conn, name),
    )
