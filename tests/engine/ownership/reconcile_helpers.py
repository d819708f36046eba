"""Helpers of the reconciliation scenarios: declaring runtimes, DB time, plan lookups."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg

from awa_tui import Client
from awa_tui.engine.read.models import OwnerPlan

HOURLY = "0 * * * *"


def declare(
    dsn: str,
    owner: str,
    names: list[str] | dict[str, str],
    *,
    grace: timedelta = timedelta(0),
    interval: timedelta = timedelta(seconds=10),
    kind: str = "test.job",
) -> Client:
    """An authoritative Client for `owner` declaring `names` (a list, or name -> cron expr)."""
    client = Client(dsn, owner=owner, authoritative=True, retire_grace=grace, snapshot_interval=interval,
                    operator="tester@test")
    exprs = names if isinstance(names, dict) else dict.fromkeys(names, HOURLY)
    for name, expr in exprs.items():
        client.periodic(name, expr, kind)
    return client


def db_now(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("SELECT clock_timestamp() AS now").fetchone()
    assert row is not None
    return row["now"]


def row(conn: psycopg.Connection[Any], name: str) -> dict[str, Any]:
    found = conn.execute("SELECT * FROM awa.cron_jobs WHERE name = %s", (name,)).fetchone()
    assert found is not None, f"no schedule {name!r}"
    return found


def owned(conn: psycopg.Connection[Any]) -> dict[str, tuple[str | None, bool]]:
    """name -> (owner, retired) of every schedule."""
    rows = conn.execute("SELECT name, owner, retired_at IS NOT NULL AS retired FROM awa.cron_jobs").fetchall()
    return {r["name"]: (r["owner"], r["retired"]) for r in rows}


def retired_names(conn: psycopg.Connection[Any]) -> set[str]:
    rows = conn.execute("SELECT name FROM awa.cron_jobs WHERE retired_at IS NOT NULL").fetchall()
    return {r["name"] for r in rows}


def owner_plan(client: Client, owner: str, now: datetime | None = None) -> OwnerPlan:
    (plan,) = client.reads.plan(owner, now=now)
    return plan


def codes(plan: OwnerPlan) -> set[str]:
    return {b["code"] for b in plan.blockers}


def result_for(results: list[dict[str, Any]], owner: str) -> dict[str, Any]:
    return next(r for r in results if r["owner"] == owner)


def job_count(conn: psycopg.Connection[Any]) -> int:
    found = conn.execute("SELECT count(*) AS n FROM awa.jobs").fetchone()
    assert found is not None
    return int(found["n"])
