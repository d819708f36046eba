"""v019 to v021 on a database whose role layout was applied before it: the runtime role keeps
syncing (the sync notes' pruning is no longer PUBLIC's) and may reconcile, nobody else
gains anything, and old blocker reports lose their statement text. v025 on the same layout:
the runtime syncs the catch-up window (S66) and may end pauses, the operator may write a
pause's end and reason (S65)."""

from __future__ import annotations

import json

import psycopg
import pytest
from audit_helpers import drop_layout, logins_for, unique_prefix
from psycopg.rows import dict_row

from awa_tui import Client
from awa_tui.engine import migrations
from awa_tui.engine.actions import grants

SECRET = "Hunter2-S3cret"


def _before_v019(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA awa")
        conn.execute("CREATE TABLE awa.schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
                     " applied_at timestamptz NOT NULL DEFAULT now())")
        for m in migrations.available():
            if m.version < 19:
                conn.execute(m.applied_sql())  # type: ignore[arg-type]  # trusted file
                conn.execute("INSERT INTO awa.schema_migrations (version, name) VALUES (%s, %s)",
                             (m.version, m.name))
        passes = [{"at": "2025-01-01T00:00:00+00:00", "duration_ms": 2001.0, "due": 0, "fired": 0, "errors": 0,
                   "timed_out": True, "blockers": [{"pid": 7, "application": "psql", "state": "idle in transaction",
                                                    "query": f"ALTER ROLE ro1 PASSWORD '{SECRET}'",
                                                    "waited_for": "table awa.cron_jobs"}]}]
        conn.execute("INSERT INTO awa.runtime_instances (instance_id, hostname, pid, version, started_at, "
                     "recent_passes) VALUES (gen_random_uuid(), 'h', 1, 'old', now(), %s)", (json.dumps(passes),))


def test_a_layout_applied_before_v019_keeps_its_runtime_working(empty_dsn: str) -> None:
    _before_v019(empty_dsn)
    layout = grants.role_layout(unique_prefix())
    # What today's layout grants on that v018 (0.1.0) did not have: v019's and v021's functions, later
    # tables and columns.
    new_functions = ("begin_reconcile", "fence_", "prune_cron_jobs_changes", "may_lead", "awa.alert_", "end_pauses",
                     "retention_progress", "fleet_transitions", "awa.trigger_job", "awa.backfill_jobs",
                     "awa.retry_job", "awa.cancel_job", "awa.drain_queue", "awa.prune_jobs")
    old = [s.replace(", paused_until, pause_reason", "").replace(", catchup_window", "")
           for s in layout.statements if not s.startswith("--") and not any(f in s for f in new_functions)]
    admin = psycopg.connect(empty_dsn, autocommit=True, row_factory=dict_row)
    try:
        with admin.transaction():
            for statement in old:  # the layout as it was: the new functions did not exist
                admin.execute(statement)  # type: ignore[arg-type]  # built from a checked prefix
        logins = logins_for(admin, layout)
        assert migrations.migrate(empty_dsn) == [m.version for m in migrations.available() if m.version >= 19]
        with Client(logins.dsns["runtime"]) as runtime:
            runtime.periodic("tick", "* * * * *", "test.job", catchup_window="1h")
            assert runtime.sync() == {"inserted": 1, "updated": 0}  # prunes the sync notes
        # v025 gave the pause's end and reason to whoever may pause, the end of pauses to the runtime.
        may = admin.execute(
            "SELECT has_column_privilege(%(o)s, 'awa.cron_jobs', 'paused_until', 'UPDATE') AS o_until,"
            " has_column_privilege(%(o)s, 'awa.cron_jobs', 'pause_reason', 'UPDATE') AS o_reason,"
            " has_column_privilege(%(r)s, 'awa.cron_jobs', 'paused_until', 'UPDATE') AS r_until,"
            " has_function_privilege(%(r)s, 'awa.end_pauses(timestamptz, integer, text)', 'EXECUTE') AS r_end,"
            " has_function_privilege(%(o)s, 'awa.end_pauses(timestamptz, integer, text)', 'EXECUTE') AS o_end,"
            " has_function_privilege(%(r)s, 'awa.may_lead(uuid)', 'EXECUTE') AS r_lead,"
            " has_function_privilege(%(o)s, 'awa.may_lead(uuid)', 'EXECUTE') AS o_lead,"
            " has_table_privilege(%(r)s, 'awa.retention_progress', 'UPDATE') AS r_progress,"
            " has_table_privilege(%(o)s, 'awa.retention_progress', 'UPDATE') AS o_progress,"
            " has_table_privilege(%(ro)s, 'awa.retention_progress', 'SELECT') AS ro_progress",
            {"o": layout.operator, "r": layout.runtime, "ro": layout.readonly}).fetchone()
        # v021 gave the runtime (and nobody else) the election's question, whether it may lead.
        assert may == {"o_until": True, "o_reason": True, "r_until": False, "r_end": True, "o_end": False,
                       "r_lead": True, "o_lead": False,
                       # v027: the runtime records retention's progress, every reader reads it.
                       "r_progress": True, "o_progress": False, "ro_progress": True}
        assert admin.execute("SELECT catchup_window FROM awa.cron_jobs").fetchone() == {"catchup_window": 3600}
        with logins.connect("runtime") as session, session.transaction():
            session.execute("SELECT awa.begin_reconcile('billing')")
        for key in ("operator", "readonly"):
            with logins.connect(key) as session, pytest.raises(psycopg.errors.InsufficientPrivilege):
                session.execute("SELECT awa.begin_reconcile('billing')")
        stored = admin.execute("SELECT recent_passes::text AS p FROM awa.runtime_instances").fetchone()
        assert stored is not None and SECRET not in stored["p"] and '"waited_for": "table awa.cron_jobs"' in stored["p"]
    finally:
        drop_layout(admin, layout.prefix)
        admin.close()
