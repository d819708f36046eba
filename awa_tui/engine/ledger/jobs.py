"""Job outcomes (read models) and the operator's job actions: retry and cancel, audited."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg

from awa_tui.engine.core.audit import begin_action
from awa_tui.engine.core.db import db_now
from awa_tui.engine.core.errors import Conflict, NotFound, ValidationError
from awa_tui.engine.core.guards import check_operator
from awa_tui.engine.core.scope import unseen_job
from awa_tui.engine.filtering.sql import job_condition
from awa_tui.engine.ledger.models import (
    FINISHED_STATES,
    JOB_STATES,
    WAITING_STATES,
    Attempt,
    JobChange,
    JobDetail,
    JobsPage,
    JobSummary,
    LastResult,
    job_result,
    stored_instant,
)
from awa_tui.filters import Filter

MAX_LIMIT = 10000

# A job row as the ledger reads it. Instants go through awa.safe_ts / try_timestamptz: a
# hand-written value Python cannot load shows as unknown instead of failing the view (S15).
JOB_COLUMNS = """j.id, j.metadata ->> 'cron_name' AS schedule, j.kind, j.queue, j.state, j.attempt,
       j.max_attempts, awa.try_timestamptz(j.metadata ->> 'cron_fire_time') AS fire_time,
       coalesce(j.metadata ->> 'triggered_manually' = 'true', false) AS manual,
       j.metadata ->> 'triggered_by' AS triggered_by,
       awa.safe_ts(j.created_at) AS created_at, awa.safe_ts(j.run_at) AS run_at,
       awa.safe_ts(j.attempted_at) AS attempted_at, awa.safe_ts(j.finalized_at) AS finalized_at,
       CASE WHEN jsonb_typeof(j.errors) = 'array' THEN j.errors -> -1 ->> 'error' END AS last_error,
       j.claimed_by::text AS runtime, coalesce(q.paused, false) AS queue_paused"""

JOB_FROM = "awa.jobs j LEFT JOIN awa.queue_meta q ON q.queue = j.queue"


def summary(row: dict[str, Any]) -> JobSummary:
    duration = None
    if row["finalized_at"] is not None and row["attempted_at"] is not None:
        duration = (row["finalized_at"] - row["attempted_at"]).total_seconds()
    return JobSummary(
        id=row["id"], schedule=row["schedule"], kind=row["kind"], queue=row["queue"], state=row["state"],
        result=job_result(row["state"]), attempt=row["attempt"], max_attempts=row["max_attempts"],
        fire_time=None if row["manual"] else row["fire_time"], manual=row["manual"],
        triggered_by=row["triggered_by"], created_at=row["created_at"], run_at=row["run_at"],
        attempted_at=row["attempted_at"], finalized_at=row["finalized_at"], duration_s=duration,
        runtime=row["runtime"], last_error=row["last_error"], queue_paused=row["queue_paused"],
    )


def check_state(state: str | None) -> str | None:
    if state is not None and state not in JOB_STATES:
        raise ValidationError(f"state: expected one of {', '.join(JOB_STATES)}, got {state!r}")
    return state


def check_limit(limit: int) -> int:
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(f"limit: expected 1..{MAX_LIMIT}, got {limit!r}")
    return limit


def _known_schedule(conn: psycopg.Connection[Any], name: str) -> None:
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM awa.cron_jobs WHERE name = %(n)s) OR EXISTS ("
        "SELECT 1 FROM awa.jobs WHERE metadata ? 'cron_name' AND metadata ->> 'cron_name' = %(n)s) AS known",
        {"n": name},
    ).fetchone()
    if not row or not row["known"]:
        raise NotFound(f"unknown schedule {name!r}")


def list_jobs(
    conn: psycopg.Connection[Any],
    *,
    schedule: str | None = None,
    queue: str | None = None,
    state: str | None = None,
    since: datetime | None = None,
    limit: int = 50,
) -> list[JobSummary]:
    """Recent jobs, newest first, filtered; `since` bounds created_at."""
    check_state(state)
    check_limit(limit)
    if schedule is not None:
        _known_schedule(conn, schedule)
    rows = conn.execute(
        f"SELECT {JOB_COLUMNS} FROM {JOB_FROM} "
        "WHERE (%(schedule)s::text IS NULL OR (j.metadata ? 'cron_name' AND j.metadata ->> 'cron_name' = %(schedule)s))"
        " AND (%(queue)s::text IS NULL OR j.queue = %(queue)s)"
        " AND (%(state)s::text IS NULL OR j.state = %(state)s)"
        " AND (%(since)s::timestamptz IS NULL OR j.created_at >= %(since)s)"
        " ORDER BY j.id DESC LIMIT %(limit)s",
        {"schedule": schedule, "queue": queue, "state": state, "since": since, "limit": limit},
    ).fetchall()
    return [summary(r) for r in rows]


def jobs_page(conn: psycopg.Connection[Any], where: Filter | None = None, *, limit: int = 200,
              now: datetime | None = None, oldest: bool = False) -> JobsPage:
    """The newest `limit` jobs matching a jobs filter (awa_tui/filters.py), newest first:
    the jobs index walked backwards, stopping at `limit` matches. `oldest`: the oldest
    `limit` instead (the end of the list: the console's G), still newest first; `more` then
    says newer ones exist."""
    check_limit(limit)
    now = now or db_now(conn)
    condition = job_condition(where)
    rows = conn.execute(
        f"SELECT {JOB_COLUMNS} FROM {JOB_FROM} WHERE {condition.sql} "
        f"ORDER BY j.id {'ASC' if oldest else 'DESC'} LIMIT %(limit)s",
        {**condition.params, "limit": limit + 1},  # one more: are there others beyond?
    ).fetchall()
    page = rows[:limit]
    return JobsPage(now=now, rows=tuple(summary(r) for r in (reversed(page) if oldest else page)),
                    more=len(rows) > limit, oldest=oldest)


def _attempts(errors: Any) -> tuple[Attempt, ...]:
    if not isinstance(errors, list):
        return ()
    out = []
    for entry in errors:
        if not isinstance(entry, dict):
            continue
        out.append(Attempt(
            attempt=number if isinstance(number := entry.get("attempt"), int) else 0,
            error=str(entry.get("error", "")),
            traceback=entry.get("traceback") if isinstance(entry.get("traceback"), str) else None,
            started_at=stored_instant(entry.get("started_at")),
            ended_at=stored_instant(entry.get("at")),
            runtime=entry.get("runtime") if isinstance(entry.get("runtime"), str) else None,
        ))
    return tuple(out)


def job_detail(conn: psycopg.Connection[Any], job_id: int) -> JobDetail:
    row = conn.execute(
        f"SELECT {JOB_COLUMNS}, j.args, j.metadata, j.tags, j.errors FROM {JOB_FROM} WHERE j.id = %s",
        (job_id,),
    ).fetchone()
    if row is None:
        raise NotFound(f"unknown job {job_id}")
    job = summary(row)
    lateness = None
    if job.fire_time is not None and job.created_at is not None:
        lateness = (job.created_at - job.fire_time).total_seconds()
    return JobDetail(job=job, args=row["args"], metadata=row["metadata"], tags=list(row["tags"]),
                     attempts=_attempts(row["errors"]), lateness_s=lateness)


LAST_RESULTS_SQL = """
SELECT c.name, j.id, j.state, awa.safe_ts(j.created_at) AS created_at,
       CASE WHEN jsonb_typeof(j.errors) = 'array' THEN j.errors -> -1 ->> 'error' END AS error
FROM awa.cron_jobs c
LEFT JOIN LATERAL (
    SELECT jb.id, jb.state, jb.created_at, jb.errors FROM awa.jobs jb
    WHERE jb.metadata ? 'cron_name' AND jb.metadata ->> 'cron_name' = c.name
    ORDER BY jb.metadata ->> 'cron_name' DESC, jb.id DESC LIMIT 1
) j ON true
WHERE %(names)s::text[] IS NULL OR c.name = ANY(%(names)s::text[])
"""


def last_results(conn: psycopg.Connection[Any], names: list[str] | None = None) -> dict[str, LastResult]:
    """Each schedule's last result (its latest job, manual ones included): ok, failed,
    running, waiting, cancelled, or none. One index probe per schedule."""
    out = {}
    for r in conn.execute(LAST_RESULTS_SQL, {"names": names}).fetchall():
        result = "none" if r["id"] is None else job_result(r["state"])
        error = r["error"] if result == "failed" else None
        out[r["name"]] = LastResult(r["name"], result, r["id"], r["created_at"], error)
    return out


def fails_since(conn: psycopg.Connection[Any], since: datetime) -> dict[str, int]:
    """Per schedule, jobs created since `since` whose latest attempt failed."""
    rows = conn.execute(
        "SELECT metadata ->> 'cron_name' AS name, count(*) AS n FROM awa.jobs "
        "WHERE metadata ? 'cron_name' AND state IN ('retryable', 'discarded') AND created_at >= %s "
        "GROUP BY 1",
        (since,),
    ).fetchall()
    return {r["name"]: int(r["n"]) for r in rows}


def fails_24h(conn: psycopg.Connection[Any], now: datetime | None = None) -> dict[str, int]:
    return fails_since(conn, (now or db_now(conn)) - timedelta(hours=24))


# A job's change as the schema's functions (v035) return it: they lock the job, check its
# state again, change it and write the audit event; no role but the runtime writes awa.jobs.
_CHANGE = "id, state, attempt, max_attempts, queue, metadata ->> 'cron_name' AS schedule"


def _read_job(conn: psycopg.Connection[Any], job_id: int) -> dict[str, Any]:
    row = conn.execute(
        f"SELECT {_CHANGE} FROM awa.jobs WHERE id = %s",
        (job_id,),
    ).fetchone()
    if row is None:
        raise unseen_job(conn, job_id)
    return row


def retry_job(conn: psycopg.Connection[Any], job_id: int, operator: str) -> JobChange:
    """Run a failed, discarded or cancelled job again, now (one more attempt). Audited."""
    operator = check_operator(operator)
    with conn.transaction():
        begin_action(conn, operator, "job_retry")
        before = _read_job(conn, job_id)
        if before["state"] not in ("retryable", "discarded", "cancelled"):
            why = {"completed": "it completed", "running": "it is running",
                   "available": "it is already waiting to run"}.get(before["state"], before["state"])
            raise Conflict(f"job {job_id} cannot be retried: {why} (state {before['state']})")
        after = conn.execute(f"SELECT {_CHANGE} FROM awa.retry_job(%s)", (job_id,)).fetchone()
        assert after is not None
    return JobChange(**after)


def cancel_job(conn: psycopg.Connection[Any], job_id: int, operator: str) -> JobChange:
    """Cancel a job. A waiting one (available or retryable) is cancelled at once; for a
    running one the cancel is asked of the runtime running it (it stays `running` until
    its handler stops: an async one is cancelled at its next await, a sync one sees
    `job.cancelled`), then ends cancelled. Audited."""
    operator = check_operator(operator)
    with conn.transaction():
        begin_action(conn, operator, "job_cancel")
        before = _read_job(conn, job_id)
        if before["state"] not in (*WAITING_STATES, "running"):
            finished = "finished" if before["state"] in FINISHED_STATES else before["state"]
            raise Conflict(f"job {job_id} is {finished} (state {before['state']}): only a waiting or running job "
                           "can be cancelled")
        after = conn.execute(f"SELECT {_CHANGE} FROM awa.cancel_job(%s)", (job_id,)).fetchone()
        assert after is not None
    return JobChange(**after)
