"""Fixtures of the engine scenario tests."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from engine_helpers import at, force


@pytest.fixture
def register(client: Any, conn: psycopg.Connection[Any]) -> Any:
    """Register one schedule, sync it, and pin its created_at (and optionally last fire)."""

    def _register(
        name: str,
        cron_expr: str,
        *,
        created: str = "2025-01-01T00:00:00",
        last: str | None = None,
        **kwargs: Any,
    ) -> None:
        kind = kwargs.pop("kind", "test.job")
        client.periodic(name, cron_expr, kind, **kwargs)
        client.sync()
        force(
            conn,
            "UPDATE awa.cron_jobs SET created_at = %s, last_enqueued_at = %s, next_fire_at = NULL WHERE name = %s",
            (at(created), at(last) if last else None, name),
        )

    return _register
