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
