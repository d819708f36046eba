"""S27, S32, S33: the database itself keeps tombstones inert and owned definitions managed,
even against older clients that know nothing of ownership."""

from __future__ import annotations

import re
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from helpers import wait_for
from psycopg.rows import dict_row
from reconcile_helpers import declare, job_count, row

from awa_tui import Client, Conflict
from awa_tui.engine.core.db import PROTOCOL_LOCK_KEY

# What an upstream binary runs: a plain UPSERT of every definition column...
OLD_UPSERT = """
INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, args, priority, max_attempts,
                           tags, metadata, missed_fire_policy)
VALUES (%(name)s, '* * * * *', 'Europe/Paris', 'old.kind', 'old-queue', '{"old": 1}', 4, 3,
        '{old}', '{"old": true}', 'catch_up')
ON CONFLICT (name) DO UPDATE SET
    cron_expr = EXCLUDED.cron_expr, timezone = EXCLUDED.timezone, kind = EXCLUDED.kind,
    queue = EXCLUDED.queue, args = EXCLUDED.args, priority = EXCLUDED.priority,
    max_attempts = EXCLUDED.max_attempts, tags = EXCLUDED.tags, metadata = EXCLUDED.metadata,
    missed_fire_policy = EXCLUDED.missed_fire_policy, updated_at = now()
RETURNING name
"""

# ...and its atomic enqueue: CAS on last_enqueued_at, pause guard, no retirement guard.
OLD_ENQUEUE = """
WITH mark AS (
    UPDATE awa.cron_jobs
    SET last_enqueued_at = %(fire)s, updated_at = now()
    WHERE name = %(name)s
      AND last_enqueued_at IS NOT DISTINCT FROM %(expected)s
      AND paused_at IS NULL
    RETURNING name, kind, queue, args, priority, max_attempts, tags, metadata
)
INSERT INTO awa.jobs (kind, queue, args, state, priority, attempt, max_attempts, metadata, tags)
SELECT kind, queue, args, 'available', priority, 0, max_attempts,
       metadata || jsonb_build_object('cron_name', name, 'cron_fire_time', %(fire)s::text), tags
FROM mark
RETURNING id
"""

STATE = ("cron_expr", "timezone", "kind", "queue", "args", "priority", "max_attempts", "tags", "metadata",
         "missed_fire_policy", "last_enqueued_at", "next_fire_at", "updated_at", "paused_at", "owner",
         "retired_at", "retired_by")


def _state(conn, name):
    found = row(conn, name)
    return {k: found[k] for k in STATE}


@pytest.fixture
def retired(client, conn):
    client.periodic("tomb", "0 * * * *", "test.job")
    client.sync()
    client.actions.retire("tomb")
    return _state(conn, "tomb")


def test_old_upsert_leaves_a_retired_row_unchanged(conn, retired):
    assert conn.execute(OLD_UPSERT, {"name": "tomb"}).fetchall() == []
    assert _state(conn, "tomb") == retired


def test_old_atomic_enqueue_of_a_retired_row_returns_no_row_and_inserts_no_job(conn, retired):
    before = job_count(conn)
    fire = datetime.now(UTC).replace(microsecond=0)
    rows = conn.execute(OLD_ENQUEUE, {"name": "tomb", "fire": fire, "expected": retired["last_enqueued_at"]})
    assert rows.fetchall() == []
    assert job_count(conn) == before
    assert _state(conn, "tomb") == retired


def test_old_atomic_enqueue_still_fires_an_active_row(client, conn):
    client.periodic("live", "0 * * * *", "test.job")
    client.sync()
    fire = datetime(2025, 1, 1, tzinfo=UTC)
    assert len(conn.execute(OLD_ENQUEUE, {"name": "live", "fire": fire, "expected": None}).fetchall()) == 1


def test_delete_of_a_retired_row_is_rejected_by_the_database(conn, retired):
    with pytest.raises(psycopg.errors.RaiseException, match="retired"):
        conn.execute("DELETE FROM awa.cron_jobs WHERE name = 'tomb'")
    assert row(conn, "tomb")["retired_at"] is not None


def test_remove_of_a_retired_row_is_refused(client, retired):
    with pytest.raises(Conflict, match="retired"):
        client.actions.remove("tomb")


def test_reviving_a_tombstone_without_the_operator_context_is_a_no_op(conn, retired):
    conn.execute("UPDATE awa.cron_jobs SET retired_at = NULL, retired_by = NULL WHERE name = 'tomb'")
    assert _state(conn, "tomb") == retired


def test_retired_rows_never_fire_and_cannot_be_triggered(client, conn, retired):
    conn.execute("UPDATE awa.cron_jobs SET next_fire_at = NULL WHERE name = 'tomb'")
    result = client.evaluate(now=datetime.now(UTC) + timedelta(hours=3))
    assert result.fired == 0
    with pytest.raises(Conflict, match="retired"):
        client.actions.trigger("tomb")
    assert job_count(conn) == 0


def test_pause_and_resume_of_a_retired_row_keep_it_retired(client, conn, retired):
    client.actions.pause("tomb")
    assert row(conn, "tomb")["paused_at"] is not None
    client.actions.resume("tomb")
    assert row(conn, "tomb")["retired_at"] is not None


def test_owned_definition_update_needs_the_manager_context(dsn, conn):
    billing = declare(dsn, "billing", ["invoice"])
    billing.sync()
    before = _state(conn, "invoice")
    # An older binary's UPSERT and a hand-written UPDATE are quiet no-ops on an owned row.
    assert conn.execute(OLD_UPSERT, {"name": "invoice"}).fetchall() == []
    conn.execute("UPDATE awa.cron_jobs SET cron_expr = '* * * * *' WHERE name = 'invoice'")
    assert _state(conn, "invoice") == before
    # Setting the manager's label grants nothing (anyone may set it); the matching
    # reconciliation capability (granted by awa.begin_reconcile) may, another owner's may not.
    with conn.transaction():
        conn.execute("SELECT set_config('awa.manager', 'billing', true)")
        conn.execute("UPDATE awa.cron_jobs SET cron_expr = '*/5 * * * *' WHERE name = 'invoice'")
    assert _state(conn, "invoice") == before
    for manager, expected in (("payments", "0 * * * *"), ("billing", "*/5 * * * *")):
        with conn.transaction():
            conn.execute("SELECT awa.begin_reconcile(%s)", (manager,))
            conn.execute("UPDATE awa.cron_jobs SET cron_expr = '*/5 * * * *' WHERE name = 'invoice'")
        assert row(conn, "invoice")["cron_expr"] == expected
    billing.close()


def test_lifecycle_change_without_the_operator_context_is_refused(dsn, conn, client):
    client.periodic("loose", "0 * * * *", "test.job")
    client.sync()
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="requires an operator action"):
        conn.execute("UPDATE awa.cron_jobs SET owner = 'billing' WHERE name = 'loose'")
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="requires an operator action"):
        conn.execute("UPDATE awa.cron_jobs SET retired_at = now() WHERE name = 'loose'")
    # The operator's label set by hand grants nothing.
    with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
        conn.execute("SELECT set_config('awa.operator', 'ops@test', true)")
        conn.execute("UPDATE awa.cron_jobs SET owner = 'billing' WHERE name = 'loose'")
    # The capability is transaction-local: after the transaction it is gone and refused again.
    with conn.transaction():
        conn.execute("SELECT awa.begin_action('ops@test', 'adopt')")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("UPDATE awa.cron_jobs SET owner = 'billing' WHERE name = 'loose'")


def test_engine_paths_still_work_on_owned_and_unowned_rows(dsn, conn, client):
    """Fire batch, next-fire hints, pause/resume and the additive UPSERT pass the fence."""
    billing = declare(dsn, "billing", ["owned-tick"])
    billing.sync()
    client.periodic("free-tick", "0 * * * *", "test.job")
    client.sync()
    conn.execute("UPDATE awa.cron_jobs SET created_at = '2025-01-01T00:00:00Z'")
    assert client.evaluate(now=datetime(2025, 1, 1, 0, 0, 30, tzinfo=UTC)).fired == 2
    first = client.evaluate(now=datetime(2025, 1, 1, 0, 30, tzinfo=UTC))  # writes no fire, keeps hints
    assert first.fired == 0
    assert row(conn, "owned-tick")["next_fire_at"] == datetime(2025, 1, 1, 1, tzinfo=UTC)
    client.actions.pause("owned-tick")
    client.actions.resume("owned-tick")
    assert client.evaluate(now=datetime(2025, 1, 1, 1, 0, 1, tzinfo=UTC)).fired == 2
    # The additive sync still redefines an unowned row.
    other = Client(dsn, operator="tester@test")
    other.periodic("free-tick", "*/10 * * * *", "test.job")
    assert other.sync() == {"inserted": 0, "updated": 1}
    assert row(conn, "free-tick")["cron_expr"] == "*/10 * * * *"
    other.close()
    billing.close()


def test_migration_lock_key_matches_the_engine():
    sql = (Path(__file__).parents[3] / "awa_tui/engine/migrations/v002_ownership.sql").read_text()
    assert set(re.findall(r"pg_advisory_xact_lock\((\d+)\)", sql)) == {str(PROTOCOL_LOCK_KEY)}


def test_an_older_snapshot_writer_is_pulled_under_the_protocol_lock(dsn, conn):
    """S32: a plain INSERT into runtime_instances waits while the protocol lock is held."""
    holder = psycopg.connect(dsn, autocommit=True, row_factory=dict_row)
    holder.execute("BEGIN")
    holder.execute("SELECT pg_advisory_xact_lock(%s)", (PROTOCOL_LOCK_KEY,))
    done = threading.Event()
    errors: list[BaseException] = []

    def old_writer() -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as old:
                old.execute(
                    "INSERT INTO awa.runtime_instances (instance_id, hostname, pid, version, started_at) "
                    "VALUES (gen_random_uuid(), 'old-host', 1, '0.6.7', now())"
                )
        except BaseException as exc:  # reported below
            errors.append(exc)
        done.set()

    thread = threading.Thread(target=old_writer)
    thread.start()
    wait_for(lambda: conn.execute(
        "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
    ).fetchone()["n"] == 1, what="the old writer to wait on the protocol lock")
    assert not done.is_set()
    holder.execute("COMMIT")
    thread.join(10)
    holder.close()
    assert done.is_set() and not errors
    assert conn.execute("SELECT protocol_version FROM awa.runtime_instances").fetchone()["protocol_version"] == 0
