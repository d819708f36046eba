"""The job rows a worker touches: the claim, each attempt's outcome, the cancellations it
polls, the release of what it gives back, and the rescue of what a dead runtime left."""

from __future__ import annotations

import traceback
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from awa_tui.engine.core.freshness import fresh_sql
from awa_tui.engine.jobs.context import Job
from awa_tui.printable import printable_logger

# The due jobs, best first (priority, run_at, id), read from jobs_claim_idx one queue at a
# time: `waiting` finds the queues that have waiting jobs by skipping through that index
# (one probe per queue, however long the backlog), each queue gives its best `limit` (locked,
# skipping those another worker holds) and the best `limit` of those are claimed. Its cost
# follows the number of queues, never the backlog; the rows locked and not claimed are free
# again when the statement commits.
# `exclude`: queues served by slots of their own (a capped queue), left out of the shared claim.
CLAIM_SQL = """
WITH RECURSIVE waiting(queue) AS (
    (SELECT j.queue FROM awa.jobs j WHERE j.state IN ('available', 'retryable') ORDER BY j.queue LIMIT 1)
    UNION ALL
    SELECT (SELECT j.queue FROM awa.jobs j
            WHERE j.state IN ('available', 'retryable') AND j.queue > w.queue ORDER BY j.queue LIMIT 1)
    FROM waiting w WHERE w.queue IS NOT NULL
),
eligible AS (
    SELECT q.queue FROM (
        SELECT w.queue FROM waiting w WHERE w.queue IS NOT NULL AND %(queues)s::text[] IS NULL
        UNION ALL
        SELECT DISTINCT unnest(%(queues)s::text[])
    ) q
    WHERE NOT (q.queue = ANY(%(exclude)s::text[]))
      AND NOT EXISTS (SELECT 1 FROM awa.queue_meta m WHERE m.queue = q.queue AND m.paused)
),
claim AS (
    SELECT c.id FROM eligible e CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.run_at FROM awa.jobs j
        WHERE j.queue = e.queue AND j.state IN ('available', 'retryable') AND j.run_at <= now()
          AND j.kind = ANY(%(kinds)s::text[])
        ORDER BY j.priority, j.run_at, j.id
        LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED
    ) c
    ORDER BY c.priority, c.run_at, c.id
    LIMIT %(limit)s
)
UPDATE awa.jobs j SET state = 'running', attempt = j.attempt + 1, attempted_at = now(),
    claimed_by = %(claimed_by)s, cancel_requested_at = NULL
FROM claim WHERE j.id = claim.id
RETURNING j.id, j.kind, j.queue, j.args, j.attempt, j.max_attempts, j.metadata, j.tags, j.priority,
    j.created_at, j.run_at
"""


def claim_jobs(
    conn: psycopg.Connection[Any],
    kinds: list[str],
    limit: int,
    queues: list[str] | None = None,
    claimed_by: UUID | None = None,
    *,
    exclude: Sequence[str] = (),
    resources: Mapping[str, Any] | None = None,
) -> list[Job]:
    """Claim up to `limit` due jobs of `kinds` (in `queues`, all when None), best first."""
    if limit <= 0:
        return []
    params = {"kinds": kinds, "queues": queues, "limit": limit, "claimed_by": claimed_by, "exclude": list(exclude)}
    rows = conn.execute(CLAIM_SQL, params).fetchall()
    rows.sort(key=lambda r: (r["priority"], r["run_at"], r["id"]))  # RETURNING keeps no order
    return [Job.from_row(row, resources) for row in rows]


# Every outcome names the attempt it ends: a job rescued and claimed again by another runtime
# is that runtime's now, and a late outcome of the first leaves it alone.
_MINE = "id = %(id)s AND state = 'running' AND attempt = %(attempt)s AND claimed_by IS NOT DISTINCT FROM %(by)s"


def complete_jobs(conn: psycopg.Connection[Any], jobs: Sequence[Job], claimed_by: UUID | None) -> None:
    """Record `jobs` completed, in one statement."""
    if not jobs:
        return
    conn.execute(
        "UPDATE awa.jobs j SET state = 'completed', finalized_at = now() "
        "FROM unnest(%(ids)s::bigint[], %(attempts)s::smallint[]) AS d(id, attempt) "
        "WHERE j.id = d.id AND j.state = 'running' AND j.attempt = d.attempt "
        "AND j.claimed_by IS NOT DISTINCT FROM %(by)s",
        {"ids": [j.id for j in jobs], "attempts": [j.attempt for j in jobs], "by": claimed_by},
    )


def complete_job(conn: psycopg.Connection[Any], job: Job, claimed_by: UUID | None = None) -> None:
    complete_jobs(conn, [job], claimed_by)


TRACE_FRAMES = 5  # an attempt keeps the last frames of its traceback (the raising end)
TRACE_CHARS = 4000


def trace_tail(exc: BaseException, frames: int = TRACE_FRAMES, limit: int = TRACE_CHARS) -> str:
    """The last `frames` frames of `exc`'s traceback, at most `limit` characters (the end kept)."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-frames))
    return text if len(text) <= limit else "..." + text[-(limit - 3):]


def fail_job(
    conn: psycopg.Connection[Any],
    job: Job,
    error: str,
    trace: str | None = None,
    *,
    delay: timedelta | None = None,
    final: bool | None = None,
    state: str | None = None,
    reason: str = "failed",
    claimed_by: UUID | None = None,
) -> str:
    """End an attempt that did not complete: retried after `delay` while attempts remain (and
    `final` is not forced), else discarded; `state` forces the end state (cancelled).
    Returns the new state.

    The attempt's entry in `errors` also keeps why it ended (`reason`: failed, timed_out,
    cancelled, interrupted), when it started and ended (DB time), which runtime ran it, and
    the traceback's last frames: the fire ledger's job outcomes."""
    from awa_tui.engine.jobs.handlers import backoff

    if final is None:
        final = job.attempt >= job.max_attempts
    new_state = state or ("discarded" if final else "retryable")
    done = new_state in ("discarded", "cancelled")
    entry: dict[str, Any] = {"attempt": job.attempt, "error": error[:2000]}
    if reason != "failed":
        entry["reason"] = reason
    if trace:
        entry["traceback"] = trace[-TRACE_CHARS:]
    conn.execute(
        "UPDATE awa.jobs SET state = %(state)s, "
        "run_at = CASE WHEN %(done)s THEN run_at ELSE now() + %(delay)s END, "
        "finalized_at = CASE WHEN %(done)s THEN now() END, "
        "errors = errors || jsonb_build_array(%(error)s::jsonb || jsonb_build_object("
        "'started_at', attempted_at, 'at', now(), 'runtime', claimed_by::text)) "
        f"WHERE {_MINE}",
        {"state": new_state, "done": done, "delay": delay if delay is not None else backoff(job.attempt),
         "error": Jsonb(entry), "id": job.id, "attempt": job.attempt, "by": claimed_by},
    )
    return new_state


def release_unstarted(conn: psycopg.Connection[Any], jobs: Sequence[Job], claimed_by: UUID | None) -> int:
    """Give back jobs claimed but never started: waiting again at once, the attempt unspent."""
    if not jobs:
        return 0
    rows = conn.execute(
        "UPDATE awa.jobs j SET state = 'available', attempt = j.attempt - 1, attempted_at = NULL, "
        "claimed_by = NULL, run_at = now() "
        "FROM unnest(%(ids)s::bigint[], %(attempts)s::smallint[]) AS d(id, attempt) "
        "WHERE j.id = d.id AND j.state = 'running' AND j.attempt = d.attempt "
        "AND j.claimed_by IS NOT DISTINCT FROM %(by)s RETURNING j.id",
        {"ids": [j.id for j in jobs], "attempts": [j.attempt for j in jobs], "by": claimed_by},
    ).fetchall()
    return len(rows)


def cancel_requests(conn: psycopg.Connection[Any], ids: Sequence[int], claimed_by: UUID | None
                    ) -> dict[int, int | None]:
    """Which of this runtime's running jobs `ids` were asked to cancel, each with the job
    that replaced it (the overlap policy replace, metadata `cron_replaced_by`) or None (an
    operator's cancel)."""
    if not ids:
        return {}
    rows = conn.execute(
        "SELECT id, CASE WHEN jsonb_typeof(metadata -> 'cron_replaced_by') = 'number' "
        "THEN (metadata ->> 'cron_replaced_by')::bigint END AS replaced_by "
        "FROM awa.jobs WHERE state = 'running' AND claimed_by IS NOT DISTINCT FROM %s "
        "AND id = ANY(%s::bigint[]) AND cancel_requested_at IS NOT NULL ORDER BY id",
        (claimed_by, list(ids)),
    ).fetchall()
    return {r["id"]: r["replaced_by"] for r in rows}


# Jobs left running by a runtime that stopped or went stale (S21 freshness, DB time): the
# worker died with them, so they go back to the queue (or are discarded when spent, or
# cancelled when an operator had asked to).
RESCUE_SQL = f"""
WITH orphan AS (
    SELECT j.id FROM awa.jobs j
    WHERE j.state = 'running' AND j.claimed_by IS NOT NULL
      AND NOT EXISTS (
          SELECT 1 FROM awa.runtime_instances r
          WHERE r.instance_id = j.claimed_by AND {fresh_sql(alias="r")})
    ORDER BY j.id
    FOR UPDATE SKIP LOCKED
)
UPDATE awa.jobs j SET
    state = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
                 WHEN j.attempt >= j.max_attempts THEN 'discarded' ELSE 'retryable' END,
    run_at = now(),
    finalized_at = CASE WHEN j.cancel_requested_at IS NOT NULL OR j.attempt >= j.max_attempts THEN now() END,
    errors = j.errors || jsonb_build_array(jsonb_build_object(
        'attempt', j.attempt, 'error', 'rescued: the runtime running it stopped or went stale',
        'runtime', j.claimed_by::text))
FROM orphan WHERE j.id = orphan.id
RETURNING j.id, j.state
"""


def rescue_orphaned_jobs(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Return stranded running jobs to the queue; returns (id, new state) rows."""
    return conn.execute(RESCUE_SQL).fetchall()


def rescued(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rescue's rows, with one warning when there were any."""
    if rows:
        printable_logger("awa_tui").warning("rescued %d job(s) stranded by a dead runtime", len(rows))
    return rows
