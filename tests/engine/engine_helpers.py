"""Helpers shared by the engine scenario tests: exact instants, hand edits, job reads."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg

if TYPE_CHECKING:
    from awa_tui import Client
    from awa_tui.engine.firing.evaluator import PassResult


def at(text: str) -> datetime:
    """An exact UTC instant from 'YYYY-MM-DDTHH:MM:SS' (with or without a trailing Z)."""
    return datetime.fromisoformat(text.removesuffix("Z")).replace(tzinfo=UTC)


def force(conn: psycopg.Connection[Any], query: str, params: Any = None) -> None:
    """Write a row by hand, as an operator with psql would, bypassing awa's triggers.

    Tests use it to set columns that the engine itself only sets through guarded paths
    (created_at, owner, retired_at...). Needs a superuser, which the test server gives.
    """
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(query, params)  # type: ignore[arg-type]  # literal test SQL


def schedule_row(conn: psycopg.Connection[Any], name: str) -> dict[str, Any]:
    row = conn.execute(
        "SELECT *, xmin::text AS xmin FROM awa.cron_jobs WHERE name = %s", (name,)
    ).fetchone()
    assert row is not None, f"no schedule {name!r}"
    return row


def fire_times(conn: psycopg.Connection[Any], name: str) -> list[str]:
    """cron_fire_time of every job a schedule fired, in insertion (id) order."""
    rows = conn.execute(
        "SELECT metadata ->> 'cron_fire_time' AS fire FROM awa.jobs "
        "WHERE metadata ->> 'cron_name' = %s ORDER BY id",
        (name,),
    ).fetchall()
    return [r["fire"] for r in rows]


def job_count(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT count(*) AS n FROM awa.jobs").fetchone()
    assert row is not None
    return int(row["n"])


def race(clients: list[Client], nows: list[Any]) -> list[PassResult]:
    """Every client evaluates each `now` at the same moment (a barrier per instant)."""
    barrier = threading.Barrier(len(clients))
    results: list[PassResult] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def run(client: Client) -> None:
        try:
            for now in nows:
                barrier.wait(30)
                result = client.evaluate(now=now)
                with lock:
                    results.append(result)
        except BaseException as exc:  # surfaced by the assertion below
            failures.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(c,)) for c in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == []
    return results


def seed_jobs(conn: psycopg.Connection[Any], count: int = 1, *, kind: str, queue: str = "default",
              max_attempts: int = 25) -> list[int]:
    """`count` waiting jobs inserted by hand, as an application's own INSERT would; their ids."""
    rows = conn.execute(
        "INSERT INTO awa.jobs (kind, queue, args, max_attempts) "
        "SELECT %s, %s, jsonb_build_object('n', n), %s FROM generate_series(1, %s) AS n RETURNING id",
        (kind, queue, max_attempts, count),
    ).fetchall()
    return [r["id"] for r in rows]


def job_states(conn: psycopg.Connection[Any], queue: str | None = None) -> dict[str, int]:
    """How many jobs are in each state (of one queue when named)."""
    rows = conn.execute("SELECT state, count(*) AS n FROM awa.jobs WHERE %(queue)s::text IS NULL "
                        "OR queue = %(queue)s GROUP BY state", {"queue": queue}).fetchall()
    return {r["state"]: r["n"] for r in rows}
