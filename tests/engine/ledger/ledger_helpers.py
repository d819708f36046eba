"""Helpers of the fire-ledger tests: exact instants, leadership terms, the DB clock."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from awa_tui import Client
from awa_tui.engine.core.db import LEADER_LOCK_KEY


def at(text: str) -> datetime:
    """An exact UTC instant from 'YYYY-MM-DDTHH:MM:SS'."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def force(conn: psycopg.Connection[Any], query: str, params: Any = None) -> None:
    """Write as an operator with psql would, bypassing awa's triggers (needs a superuser)."""
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(query, params)  # type: ignore[arg-type]  # literal test SQL


def register(client: Client, conn: psycopg.Connection[Any], name: str, cron_expr: str, created: datetime,
             **kwargs: Any) -> None:
    """Register and sync one schedule, created at `created`; leadership is recorded from a
    day before (the ledger knows nothing of leadership before its migration)."""
    client.periodic(name, cron_expr, kwargs.pop("kind", "test.job"), **kwargs)
    client.sync()
    force(conn, "UPDATE awa.cron_jobs SET created_at = %s, next_fire_at = NULL WHERE name = %s", (created, name))
    force(conn, "UPDATE awa.ledger_meta SET leadership_since = %s", (created - timedelta(days=1),))


def lead(conn: psycopg.Connection[Any], start: datetime, lease: timedelta = timedelta(hours=1)) -> int:
    """Take leadership in this session at `start` (a new term, held for `lease`), through
    the engine's own acquisition function; returns the term."""
    row = conn.execute(
        "SELECT got, term FROM awa.leader_acquire(%s, %s, %s, %s)", (LEADER_LOCK_KEY, uuid.uuid4(), lease, start)
    ).fetchone()
    assert row is not None and row["got"], row
    return int(row["term"])


def db_now(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("SELECT clock_timestamp() AS t").fetchone()
    assert row is not None
    return row["t"]


def whole_second_after(t: datetime) -> datetime:
    """The first whole second strictly after `t`."""
    return t.replace(microsecond=0) + timedelta(seconds=1)


def job_created(conn: psycopg.Connection[Any], job_id: int) -> datetime:
    row = conn.execute("SELECT created_at FROM awa.jobs WHERE id = %s", (job_id,)).fetchone()
    assert row is not None
    return row["created_at"]


def audit_at(conn: psycopg.Connection[Any], target: str, action: str) -> datetime:
    """When the database recorded the last `action` on `target`."""
    row = conn.execute(
        "SELECT at FROM awa.audit_log WHERE target = %s AND action = %s ORDER BY id DESC LIMIT 1", (target, action)
    ).fetchone()
    assert row is not None, (target, action)
    return row["at"]
