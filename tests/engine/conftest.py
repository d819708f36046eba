"""Fixtures of the engine scenario tests: `register` one schedule; the `fleet` of the filter
and bulk-action tests, one small set of schedules in every state a filter can name at a fixed
`now`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest
from bulk_helpers import NOW
from engine_helpers import at, force

from awa_tui import Client


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


@pytest.fixture
def fleet(client: Client, conn: psycopg.Connection[Any]) -> Client:
    """Seven schedules; `tick` is late at NOW (due 5 minutes ago), `tock` due 30 s ago."""
    client.periodic("nightly-billing", "30 2 * * *", "billing.run", timezone="America/New_York",
                    queue="billing", tags=["finance", "EU"], missed_fire_policy="catch_up")
    client.periodic("billing-report", "0 6 * * 1", "report.run", queue="billing")
    client.periodic("sync-users", "*/5 * * * *", "users.sync", queue="q1")
    client.periodic("tick", "* * * * *", "tick", queue="q1")
    client.periodic("tock", "* * * * *", "tick", queue="q1")
    client.periodic("bad-zone", "* * * * *", "tick", queue="q1")
    client.periodic("100%_off", "0 0 * * *", "promo")
    client.sync()
    force(conn, "UPDATE awa.cron_jobs SET owner = 'billing' WHERE name IN ('nightly-billing', 'billing-report')")
    force(conn, "UPDATE awa.cron_jobs SET owner = 'payments' WHERE name = %s", ("100%_off",))
    force(conn, "UPDATE awa.cron_jobs SET retired_at = %s, retired_by = 'carol@ops' WHERE name = 'sync-users'",
          (NOW - timedelta(days=1),))
    force(conn, "UPDATE awa.cron_jobs SET timezone = 'Mars/Olympus' WHERE name = 'bad-zone'")
    for name, due in (("tick", NOW - timedelta(minutes=5)), ("tock", NOW - timedelta(seconds=30)),
                      ("bad-zone", NOW - timedelta(minutes=5)), ("nightly-billing", NOW + timedelta(hours=3))):
        force(conn, "UPDATE awa.cron_jobs SET next_fire_at = %s WHERE name = %s", (due, name))
    client.actions.pause("billing-report", operator="alice@ops")
    return client
