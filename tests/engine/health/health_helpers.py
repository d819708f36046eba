"""Shared steps of the health tests: a schedule at an exact creation instant, jobs that
fail or succeed at exact instants."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
from engine_helpers import force


def register(client: Any, conn: psycopg.Connection[Any], name: str, cron_expr: str, created: datetime,
             **kwargs: Any) -> None:
    client.periodic(name, cron_expr, kwargs.pop("kind", "test.job"), **kwargs)
    client.sync()
    force(conn, "UPDATE awa.cron_jobs SET created_at = %s, next_fire_at = NULL WHERE name = %s", (created, name))


def finish(conn: psycopg.Connection[Any], job_id: int, state: str, at: datetime) -> None:
    """The job ends `state` at `at`, through an ordinary UPDATE (the outcome trigger runs,
    as it does for the worker's own statement)."""
    conn.execute(
        "UPDATE awa.jobs SET state = %s, attempt = 1, attempted_at = %s, finalized_at = %s WHERE id = %s",
        (state, at, at, job_id),
    )


def health(conn: psycopg.Connection[Any], name: str) -> tuple[str, str | None]:
    """(health, reason) as recorded; a schedule that never left ok has no row: ok."""
    row = conn.execute("SELECT health, reason FROM awa.cron_health WHERE name = %s", (name,)).fetchone()
    return (row["health"], row["reason"]) if row else ("ok", None)


def failures(conn: psycopg.Connection[Any], name: str) -> int:
    row = conn.execute("SELECT consecutive_failures FROM awa.cron_health WHERE name = %s", (name,)).fetchone()
    return int(row["consecutive_failures"]) if row else 0
