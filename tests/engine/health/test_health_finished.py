"""A schedule past its bounds (S46) is `finished` (S42): not late, not failing, and not
unhealthy for `awa-tui check`. Exact instants, a real Postgres."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
from engine_helpers import at
from health_helpers import finish, health, register


def test_max_fires_reached_reads_finished_with_the_count(client: Any, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "twice", "* * * * *", at("2025-01-01T00:00:00"), max_fires=2)
    client.evaluate(now=at("2025-01-01T00:01:00"))
    client.evaluate(now=at("2025-01-01T00:02:00"))  # the second scheduled fire finishes it
    row = conn.execute("SELECT fires_count, finished_at FROM awa.cron_jobs WHERE name = 'twice'").fetchone()
    assert (row["fires_count"], row["finished_at"]) == (2, at("2025-01-01T00:02:00"))
    # Its last job failed and no fire came for ten minutes: still finished, never failing nor late.
    job = conn.execute("SELECT max(id) AS id FROM awa.jobs WHERE metadata ->> 'cron_name' = 'twice'").fetchone()
    finish(conn, job["id"], "discarded", at("2025-01-01T00:02:05"))
    client.runtime.evaluate_health(now=at("2025-01-01T00:12:00"))
    assert health(conn, "twice") == ("finished", "finished at 2025-01-01T00:02:00Z: 2 of max_fires 2")


def test_past_end_at_reads_finished_past_end_at(client: Any, conn: psycopg.Connection[Any]) -> None:
    end = datetime(2025, 1, 1, 0, 1, 30, tzinfo=UTC)
    register(client, conn, "ends", "* * * * *", at("2025-01-01T00:00:00"), end_at=end)
    client.evaluate(now=at("2025-01-01T00:01:00"))  # fires 00:01; the next instant (00:02) is past end_at
    finished = conn.execute("SELECT finished_at FROM awa.cron_jobs WHERE name = 'ends'").fetchone()["finished_at"]
    assert finished == at("2025-01-01T00:01:00")
    client.runtime.evaluate_health(now=at("2025-01-01T00:05:00"))
    assert health(conn, "ends") == ("finished", "finished at 2025-01-01T00:01:00Z: past end_at")
