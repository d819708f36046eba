"""The worker (S19): claims available jobs, skips paused queues at dispatch (S18),
runs the handler registered for the kind, records completion or retry with backoff."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

log = logging.getLogger("awa_tui.worker")

CLAIM_SQL = """
WITH claim AS (
    SELECT j.id FROM awa.jobs j
    WHERE j.state IN ('available', 'retryable') AND j.run_at <= now()
      AND j.kind = ANY(%(kinds)s::text[])
      AND (%(queues)s::text[] IS NULL OR j.queue = ANY(%(queues)s::text[]))
      AND NOT EXISTS (SELECT 1 FROM awa.queue_meta q WHERE q.queue = j.queue AND q.paused)
    ORDER BY j.priority, j.run_at, j.id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE awa.jobs j SET state = 'running', attempt = j.attempt + 1, attempted_at = now()
FROM claim WHERE j.id = claim.id
RETURNING j.id, j.kind, j.queue, j.args, j.attempt, j.max_attempts, j.metadata, j.tags
"""


@dataclass(frozen=True)
class Job:
    id: int
    kind: str
    queue: str
    args: dict[str, Any]
    attempt: int
    max_attempts: int
    metadata: dict[str, Any]
    tags: list[str]


Handler = Callable[[Job], Any]


def backoff(attempt: int) -> timedelta:
    """Exponential backoff, capped at one hour."""
    return timedelta(seconds=min(2 ** attempt, 3600))


def claim_jobs(
    conn: psycopg.Connection[Any], kinds: list[str], limit: int, queues: list[str] | None = None
) -> list[Job]:
    rows = conn.execute(CLAIM_SQL, {"kinds": kinds, "queues": queues, "limit": limit}).fetchall()
    return [Job(**row) for row in rows]


def complete_job(conn: psycopg.Connection[Any], job: Job) -> None:
    conn.execute(
        "UPDATE awa.jobs SET state = 'completed', finalized_at = now() WHERE id = %s AND state = 'running'",
        (job.id,),
    )


def fail_job(conn: psycopg.Connection[Any], job: Job, error: str) -> str:
    """Retry with backoff while attempts remain, else discard. Returns the new state."""
    final = job.attempt >= job.max_attempts
    state = "discarded" if final else "retryable"
    conn.execute(
        "UPDATE awa.jobs SET state = %(state)s, "
        "run_at = CASE WHEN %(final)s THEN run_at ELSE now() + %(delay)s END, "
        "finalized_at = CASE WHEN %(final)s THEN now() END, "
        "errors = errors || %(error)s WHERE id = %(id)s AND state = 'running'",
        {
            "state": state,
            "final": final,
            "delay": backoff(job.attempt),
            "error": Jsonb([{"attempt": job.attempt, "error": error[:2000]}]),
            "id": job.id,
        },
    )
    return state


def work_once(
    conn: psycopg.Connection[Any],
    handlers: dict[str, Handler],
    *,
    limit: int = 10,
    queues: list[str] | None = None,
) -> list[tuple[Job, str]]:
    """Claim up to `limit` jobs, run them, record outcomes. Returns (job, final state)."""
    if not handlers:
        return []
    outcomes: list[tuple[Job, str]] = []
    for job in claim_jobs(conn, sorted(handlers), limit, queues):
        try:
            handlers[job.kind](job)
        except Exception as exc:  # a handler's failure is the job's, not the worker's
            message = f"{type(exc).__name__}: {exc}"
            log.warning("job %s (%s) failed: %s", job.id, job.kind, message)
            log.debug("%s", traceback.format_exc())
            outcomes.append((job, fail_job(conn, job, message)))
        else:
            complete_job(conn, job)
            outcomes.append((job, "completed"))
    return outcomes
