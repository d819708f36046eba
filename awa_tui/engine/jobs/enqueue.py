"""Enqueueing a one-off or delayed job, on the engine's connection or inside the caller's
own transaction (their psycopg connection): the job exists exactly when their writes do."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from awa_tui.engine.core.db import ConnectionSource
from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.jobs.handlers import check_kind
from awa_tui.engine.jobs.tracing import propagated

MAX_KEY = 512

# A key already held by a waiting or running job adds nothing: that job's id is returned.
# (jobs_unique_key_idx, v020; a finished job frees its key.)
ENQUEUE_SQL = """
INSERT INTO awa.jobs (kind, queue, args, priority, max_attempts, run_at, tags, metadata, unique_key)
VALUES (%(kind)s, %(queue)s, %(args)s, %(priority)s, %(max_attempts)s,
        coalesce(%(run_at)s, now() + %(delay)s), %(tags)s, %(metadata)s, %(key)s)
ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ('available', 'running', 'retryable')
DO NOTHING
RETURNING id
"""

HELD_SQL = """
SELECT id FROM awa.jobs WHERE unique_key = %s AND state IN ('available', 'running', 'retryable')
"""


def check(kind: str, args: Mapping[str, Any] | None, queue: str, priority: int, max_attempts: int,
          run_at: datetime | None, delay: timedelta | None, unique_key: str | None) -> None:
    check_kind(kind)
    if args is not None and not isinstance(args, Mapping):
        raise ValidationError(f"args: a mapping (JSON object), got {type(args).__name__}")
    if not isinstance(queue, str) or not queue:
        raise ValidationError(f"queue: a non-empty name, got {queue!r}")
    if isinstance(priority, bool) or not isinstance(priority, int) or not 1 <= priority <= 4:
        raise ValidationError(f"priority: 1 (first) to 4, got {priority!r}")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or not 1 <= max_attempts <= 1000:
        raise ValidationError(f"max_attempts: 1 to 1000, got {max_attempts!r}")
    if run_at is not None and delay is not None:
        raise ValidationError("run_at, delay: give one of them, not both")
    if run_at is not None and (not isinstance(run_at, datetime) or run_at.tzinfo is None):
        raise ValidationError("run_at: an aware datetime (with its zone)")
    if delay is not None and (not isinstance(delay, timedelta) or delay < timedelta(0)):
        raise ValidationError(f"delay: a timedelta of 0 or more, got {delay!r}")
    if unique_key is not None and (not isinstance(unique_key, str) or not 0 < len(unique_key) <= MAX_KEY):
        raise ValidationError(f"unique_key: a non-empty string of at most {MAX_KEY} characters")


def enqueue(
    conn: psycopg.Connection[Any],
    kind: str,
    args: Mapping[str, Any] | None = None,
    *,
    queue: str = "default",
    run_at: datetime | None = None,
    delay: timedelta | None = None,
    priority: int = 2,
    max_attempts: int = 25,
    unique_key: str | None = None,
    tags: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
) -> int:
    """Add a job on `conn`, in its current transaction if one is open (nothing is committed
    here when the caller holds one). Returns its id, or the id of the waiting or running job
    already holding `unique_key`. Inside an OpenTelemetry span, the job's metadata carries its
    W3C trace context (traceparent): its attempts' spans continue that trace."""
    check(kind, args, queue, priority, max_attempts, run_at, delay, unique_key)
    params = {"kind": kind, "queue": queue, "args": Jsonb(dict(args or {})), "priority": priority,
              "max_attempts": max_attempts, "run_at": run_at, "delay": delay or timedelta(0),
              "tags": list(tags), "key": unique_key,
              "metadata": Jsonb({**(metadata or {}), **propagated(metadata), "enqueued": True})}
    for _ in range(3):  # the holder may finish between the insert and the read: try again
        row = conn.execute(ENQUEUE_SQL, params).fetchone()
        if row is None and unique_key is not None:
            row = conn.execute(HELD_SQL, (unique_key,)).fetchone()
        if row is not None:
            return int(row["id"] if isinstance(row, Mapping) else row[0])
    raise ValidationError(f"unique_key: {unique_key!r} is taken and freed too fast to settle; try again")


def enqueue_via(db: ConnectionSource, kind: str, args: Mapping[str, Any] | None = None, *,
                conn: psycopg.Connection[Any] | None = None, **options: Any) -> int:
    """`enqueue` on the caller's connection (`conn`: in their transaction) or, without one,
    on a pooled connection of the engine's (committed at once)."""
    if conn is not None:
        return enqueue(conn, kind, args, **options)
    with db.connection() as own:
        return enqueue(own, kind, args, **options)
