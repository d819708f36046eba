"""v006 applies on top of a v003 database with its data, beside a writer of owner state
(which holds an owners row, then reads cron_jobs) without deadlocking with it."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
from helpers import wait_for
from psycopg.rows import dict_row

from awa_tui.engine import migrations
from awa_tui.engine.core.db import PROTOCOL_LOCK_KEY


def _at_v003(dsn: str) -> None:
    """The schema an awa-tui that knew up to v003 left behind, with some data."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA awa")
        conn.execute("CREATE TABLE awa.schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
                     " applied_at timestamptz NOT NULL DEFAULT now())")
        for m in migrations.available():
            if m.version <= 3:
                conn.execute(m.sql)  # type: ignore[arg-type]  # trusted file
                conn.execute("INSERT INTO awa.schema_migrations (version, name) VALUES (%s, %s)",
                             (m.version, m.name))
        conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind) VALUES ('old', '* * * * *', 'k')")
        conn.execute("INSERT INTO awa.audit_log (at, operator, action, target) "
                     "VALUES ('2025-01-01T00:00:00Z', 'ops', 'pause', 'old')")


def test_v006_waits_for_an_owner_state_writer_instead_of_deadlocking(empty_dsn: str) -> None:
    _at_v003(empty_dsn)
    writer = psycopg.connect(empty_dsn, autocommit=True, row_factory=dict_row)
    watcher = psycopg.connect(empty_dsn, autocommit=True, row_factory=dict_row)
    outcome: dict[str, Any] = {}

    def run_migration() -> None:
        try:
            outcome["applied"] = migrations.migrate(empty_dsn)
        except Exception as exc:  # reported by the assertion below, with its message
            outcome["error"] = exc

    with writer.transaction():
        # What reconciliation and a publication do: protocol lock, an owners row, then cron_jobs.
        writer.execute("SELECT pg_advisory_xact_lock(%s)", (PROTOCOL_LOCK_KEY,))
        writer.execute("INSERT INTO awa.owners (owner) VALUES ('billing')")
        thread = threading.Thread(target=run_migration)
        thread.start()
        wait_for(lambda: watcher.execute(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'awa-tui migrate' "
            "AND wait_event_type = 'Lock'").fetchone()["n"] == 1, what="the migration waiting for a lock")
        writer.execute("SELECT count(*) FROM awa.cron_jobs WHERE owner = 'billing'")
    thread.join(30)
    assert outcome == {"applied": [m.version for m in migrations.available() if m.version > 3]}
    old = watcher.execute("SELECT at, operator, action, db_user FROM awa.audit_log").fetchall()
    assert [(str(r["at"].date()), r["operator"], r["action"], r["db_user"]) for r in old] == [
        ("2025-01-01", "ops", "pause", None)]  # history kept as it was
    watcher.execute("UPDATE awa.cron_jobs SET paused_at = now(), paused_by = 'x' WHERE name = 'old'")
    assert watcher.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone()["n"] == 2
    writer.close()
    watcher.close()
