"""The worker (S19): claims available jobs, skips paused queues at dispatch (S18),
runs the handler registered for the kind, records completion or retry with backoff."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from awa_tui.engine.errors import ValidationError
from awa_tui.engine.read.freshness import fresh_sql
from awa_tui.printable import printable_logger

log = printable_logger("awa_tui.worker")

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
UPDATE awa.jobs j SET state = 'running', attempt = j.attempt + 1, attempted_at = now(),
    claimed_by = %(claimed_by)s
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
    conn: psycopg.Connection[Any],
    kinds: list[str],
    limit: int,
    queues: list[str] | None = None,
    claimed_by: UUID | None = None,
) -> list[Job]:
    params = {"kinds": kinds, "queues": queues, "limit": limit, "claimed_by": claimed_by}
    rows = conn.execute(CLAIM_SQL, params).fetchall()
    return [Job(**row) for row in rows]


def complete_job(conn: psycopg.Connection[Any], job: Job) -> None:
    conn.execute(
        "UPDATE awa.jobs SET state = 'completed', finalized_at = now() WHERE id = %s AND state = 'running'",
        (job.id,),
    )


TRACE_FRAMES = 5  # an attempt keeps the last frames of its traceback (the raising end)
TRACE_CHARS = 4000


def trace_tail(exc: BaseException, frames: int = TRACE_FRAMES, limit: int = TRACE_CHARS) -> str:
    """The last `frames` frames of `exc`'s traceback, at most `limit` characters (the end kept)."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-frames))
    return text if len(text) <= limit else "..." + text[-(limit - 3):]


def fail_job(conn: psycopg.Connection[Any], job: Job, error: str, trace: str | None = None) -> str:
    """Retry with backoff while attempts remain, else discard. Returns the new state.

    The attempt's entry in `errors` also keeps when it started and ended (DB time), which
    runtime ran it, and the traceback's last frames: the fire ledger's job outcomes."""
    final = job.attempt >= job.max_attempts
    state = "discarded" if final else "retryable"
    entry: dict[str, Any] = {"attempt": job.attempt, "error": error[:2000]}
    if trace:
        entry["traceback"] = trace[-TRACE_CHARS:]
    conn.execute(
        "UPDATE awa.jobs SET state = %(state)s, "
        "run_at = CASE WHEN %(final)s THEN run_at ELSE now() + %(delay)s END, "
        "finalized_at = CASE WHEN %(final)s THEN now() END, "
        "errors = errors || jsonb_build_array(%(error)s::jsonb || jsonb_build_object("
        "'started_at', attempted_at, 'at', now(), 'runtime', claimed_by::text)) "
        "WHERE id = %(id)s AND state = 'running'",
        {
            "state": state,
            "final": final,
            "delay": backoff(job.attempt),
            "error": Jsonb(entry),
            "id": job.id,
        },
    )
    return state


def check_kind(kind: str) -> str:
    """A handler's kind: a non-empty string, or one line saying what is wrong."""
    if not isinstance(kind, str) or not kind:
        raise ValidationError(f"kind: a handler needs a non-empty kind, got {kind!r}")
    return kind


def work_once(
    conn: psycopg.Connection[Any],
    handlers: dict[str, Handler],
    *,
    limit: int = 10,
    queues: list[str] | None = None,
    claimed_by: UUID | None = None,
) -> list[tuple[Job, str]]:
    """Claim up to `limit` jobs, run them, record outcomes. Returns (job, final state)."""
    if not handlers:
        return []
    outcomes: list[tuple[Job, str]] = []
    for job in claim_jobs(conn, sorted(handlers), limit, queues, claimed_by):
        try:
            handlers[job.kind](job)
        except Exception as exc:  # a handler's failure is the job's, not the worker's
            message = f"{type(exc).__name__}: {exc}"
            log.warning("job %s (%s) failed: %s", job.id, job.kind, message)
            log.debug("%s", traceback.format_exc())
            outcomes.append((job, fail_job(conn, job, message, trace_tail(exc))))
        else:
            complete_job(conn, job)
            outcomes.append((job, "completed"))
    return outcomes


def announce(outcomes: list[tuple[Job, str]], on_job: Sequence[Callable[[Job, str], None]]) -> list[tuple[Job, str]]:
    """Tell each callback every outcome of a round (after its connection went back)."""
    for job, state in outcomes:
        for callback in on_job:
            callback(job, state)
    return outcomes


# Jobs left running by a runtime that stopped or went stale (S21 freshness, DB time): the
# worker died with them, so they go back to the queue (or are discarded when spent).
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
    state = CASE WHEN j.attempt >= j.max_attempts THEN 'discarded' ELSE 'retryable' END,
    run_at = now(),
    finalized_at = CASE WHEN j.attempt >= j.max_attempts THEN now() END,
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
