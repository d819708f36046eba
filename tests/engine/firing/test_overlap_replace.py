"""S-NEW: the overlap policy replace, exact instants, a real worker (placeholder smoke)."""

from __future__ import annotations

from typing import Any

import psycopg
from engine_helpers import at, fire_times

from awa_tui import Client


def test_smoke(client: Client, conn: psycopg.Connection[Any], register: Any) -> None:
    register("rep", "* * * * *", last="2025-01-01T00:00:00", overlap="replace")
    r1 = client.evaluate(now=at("2025-01-01T00:01:00"))
    r2 = client.evaluate(now=at("2025-01-01T00:02:00"))
    print(r1, r2)
    rows = conn.execute("SELECT id, state, metadata, errors, finalized_at IS NOT NULL AS fin FROM awa.jobs ORDER BY id").fetchall()
    print(rows)
    print(fire_times(conn, "rep"))
    assert 0
