"""What the upstream tests read and write on upstream's own tables, independently of the
adapter under test: the oracles and the rows they seed."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg


def every_second(name: str, args_class: str, queue: str = "q1") -> dict[str, Any]:
    return {"name": name, "cron": "* * * * * *", "args_class": args_class, "queue": queue}


def jobs(conn: psycopg.Connection[Any], cron_name: str) -> list[dict[str, Any]]:
    """The oracle: upstream's public awa.jobs view, read directly."""
    return conn.execute(
        "SELECT id, kind, queue, state::text AS state, attempt, metadata FROM awa.jobs "
        "WHERE metadata ->> 'cron_name' = %s ORDER BY id", (cron_name,)
    ).fetchall()


def fired_after(conn: psycopg.Connection[Any], cron_name: str, instant: datetime) -> list[dict[str, Any]]:
    """Jobs of fires upstream's leader stamped (cron_fire_time) strictly after `instant`.

    Counting by fire instant, not by rows: with a live runtime, upstream's awa.jobs view was
    seen to omit an existing job on one read and show it on the next.
    """
    return conn.execute(
        "SELECT id, state::text AS state, attempt FROM awa.jobs WHERE metadata ->> 'cron_name' = %s "
        "AND (metadata ->> 'cron_fire_time')::timestamptz > %s ORDER BY id", (cron_name, instant)
    ).fetchall()


def insert_schedule(conn: psycopg.Connection[Any], name: str, queue: str = "q1") -> None:
    """A row as upstream's upsert_cron_job writes it (for tests that need no running engine)."""
    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue) "
                 "VALUES (%s, '0 0 1 1 *', 'UTC', 'up_rare', %s)", (name, queue))
