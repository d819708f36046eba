"""Helpers of the filter and bulk-action tests: the fixed clock, the fleet's names, and
reads of what a write would change."""

from __future__ import annotations

from typing import Any

import psycopg
from engine_helpers import at

NOW = at("2025-06-01T12:00:00")
FLEET = ["100%_off", "bad-zone", "billing-report", "nightly-billing", "sync-users", "tick", "tock"]


def audit_rows(conn: psycopg.Connection[Any], operator: str) -> list[tuple[str, str]]:
    rows = conn.execute(
        "SELECT action, target FROM awa.audit_log WHERE operator = %s ORDER BY target, id", (operator,)
    ).fetchall()
    return [(r["action"], r["target"]) for r in rows]


def row_states(conn: psycopg.Connection[Any]) -> dict[str, tuple[Any, ...]]:
    rows = conn.execute(
        "SELECT name, paused_by, retired_by, owner FROM awa.cron_jobs ORDER BY name").fetchall()
    return {r["name"]: (r["paused_by"], r["retired_by"], r["owner"]) for r in rows}


def footprint(conn: psycopg.Connection[Any]) -> tuple[Any, ...]:
    """Everything a write would change: each row's version, the audit trail, the jobs."""
    rows = conn.execute("SELECT name, xmin::text AS x FROM awa.cron_jobs ORDER BY name").fetchall()
    counts = conn.execute("SELECT (SELECT count(*) FROM awa.audit_log) AS a, (SELECT count(*) FROM awa.jobs) AS j, "
                          "(SELECT count(*) FROM awa.owners) AS o").fetchone()
    return tuple((r["name"], r["x"]) for r in rows), counts
