"""S3 storage and S4 migrations."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest
from engine_helpers import at, fire_times, force
from psycopg.rows import dict_row

import awa_tui
from awa_tui import Client, SchemaError
from awa_tui.engine import migrations

REQUIRED_COLUMNS = {
    "cron_jobs": {
        "name", "cron_expr", "timezone", "kind", "queue", "args", "priority", "max_attempts", "tags",
        "metadata", "missed_fire_policy", "last_enqueued_at", "created_at", "updated_at", "paused_at",
        "paused_by", "exclude_dates", "exclude_calendars",  # S56 (v018)
    },
    "calendars": {"name", "dates", "created_at", "updated_at"},  # S56 (v018)
    "calendars_version": {"one", "version"},
    "jobs": {
        "id", "kind", "queue", "args", "state", "priority", "attempt", "max_attempts", "run_at",
        "created_at", "metadata", "tags",
    },
    "queue_meta": {"queue", "paused", "paused_at", "paused_by"},
    "runtime_instances": {
        "instance_id", "hostname", "pid", "version", "started_at", "last_seen_at", "snapshot_interval",
        "is_leader", "health",
    },
}


def _versions(conn: psycopg.Connection[Any]) -> list[int]:
    return [r["version"] for r in conn.execute("SELECT version FROM awa.schema_migrations ORDER BY version")]


@pytest.mark.parametrize("table", sorted(REQUIRED_COLUMNS))
def test_required_columns_exist(conn: psycopg.Connection[Any], table: str) -> None:
    rows = conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'awa' AND table_name = %s",
        (table,),
    ).fetchall()
    assert REQUIRED_COLUMNS[table] <= {r["column_name"] for r in rows}


def test_schedule_name_is_the_primary_key(conn: psycopg.Connection[Any]) -> None:
    row = conn.execute(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'awa.cron_jobs'::regclass AND i.indisprimary"
    ).fetchall()
    assert row == [{"attname": "name"}]


def test_hand_inserted_row_gets_defaults_and_fires(client: Client, conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind) VALUES ('by-hand', '*/5 * * * *', 'UTC', 'k')"
    )
    row = conn.execute("SELECT * FROM awa.cron_jobs WHERE name = 'by-hand'").fetchone()
    assert {k: row[k] for k in (
        "queue", "args", "priority", "max_attempts", "tags", "metadata", "missed_fire_policy",
        "last_enqueued_at", "paused_at", "paused_by",
    )} == {
        "queue": "default", "args": {}, "priority": 2, "max_attempts": 25, "tags": [], "metadata": {},
        "missed_fire_policy": "coalesce", "last_enqueued_at": None, "paused_at": None, "paused_by": None,
    }
    assert row["created_at"] == row["updated_at"]
    force(conn, "UPDATE awa.cron_jobs SET created_at = '2025-01-01T00:04:30Z' WHERE name = 'by-hand'")
    result = client.evaluate(now=at("2025-01-01T00:05:00"))
    assert [(j.name, j.fire_time) for j in result.jobs] == [("by-hand", "2025-01-01T00:05:00Z")]
    job = conn.execute("SELECT * FROM awa.jobs").fetchone()
    assert (job["kind"], job["queue"], job["args"], job["priority"], job["max_attempts"], job["tags"]) == (
        "k", "default", {}, 2, 25, [],
    )
    assert fire_times(conn, "by-hand") == ["2025-01-01T00:05:00Z"]


def test_migrate_is_idempotent(dsn: str, conn: psycopg.Connection[Any]) -> None:
    expected = [m.version for m in migrations.available()]
    assert _versions(conn) == expected
    assert migrations.migrate(dsn) == []
    assert migrations.migrate(dsn) == []
    assert _versions(conn) == expected
    assert migrations.check_version(conn) == expected[-1]


def test_concurrent_migrations_on_an_empty_database_apply_the_schema_once(empty_dsn: str) -> None:
    barrier = threading.Barrier(2)
    results: list[list[int]] = []
    failures: list[BaseException] = []

    def run() -> None:
        barrier.wait()
        try:
            results.append(migrations.migrate(empty_dsn))
        except BaseException as exc:  # reported below, with the other thread's outcome
            failures.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert failures == []
    expected = [m.version for m in migrations.available()]
    # Each migration is applied by exactly one of them, in order (S57: the lock is taken per
    # transaction, so the two may share the work).
    assert len(results) == 2 and sorted(results[0] + results[1]) == expected
    assert all(r == sorted(r) for r in results)
    with psycopg.connect(empty_dsn, row_factory=dict_row, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT version, count(*) AS n FROM awa.schema_migrations GROUP BY version ORDER BY version"
        ).fetchall()
        assert rows == [{"version": v, "n": 1} for v in expected]
        tables = conn.execute(
            "SELECT count(*) AS n FROM pg_class WHERE relname = 'cron_jobs' AND relkind = 'r'"
        ).fetchone()
        assert tables == {"n": 1}


def test_database_newer_than_the_code_is_refused(dsn: str, conn: psycopg.Connection[Any]) -> None:
    conn.execute("INSERT INTO awa.schema_migrations (version, name) VALUES (999, 'from_the_future')")
    mine = migrations.code_version()
    message = (
        f"this database is at schema 999, newer than this awa-tui {awa_tui.__version__} (which knows up to {mine}): "
        "upgrade awa-tui"
    )
    with pytest.raises(SchemaError) as caught:
        migrations.migrate(dsn)
    assert str(caught.value) == message
    with pytest.raises(SchemaError) as caught:
        migrations.check_version(conn)
    assert str(caught.value) == message
    # A runtime the newer schema's release policy no longer admits refuses to start...
    conn.execute("UPDATE awa.release_policy SET min_runtime_protocol = 5")  # v031: this release speaks 4
    client = Client(dsn, operator="tester@test")
    client.periodic("p", "* * * * *", "k")
    with pytest.raises(SchemaError) as refused:
        client.start(run_worker=False)
    assert str(refused.value) == (
        f"this database is at schema 999, which needs runtime protocol 5; this awa-tui {awa_tui.__version__} "
        "speaks 4: upgrade awa-tui")
    assert client.is_leader is False
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone() == {"n": 0}
    client.close()
    # ... one it admits runs within the compatibility window (and leads only if it may).
    conn.execute("UPDATE awa.release_policy SET min_runtime_protocol = 2")
    client = Client(dsn, operator="tester@test")
    client.periodic("p", "* * * * *", "k")
    try:
        client.start(run_worker=False)
        assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone() == {"n": 1}
    finally:
        client.close()


def test_missing_schema_is_reported(empty_dsn: str) -> None:
    with psycopg.connect(empty_dsn, row_factory=dict_row, autocommit=True) as conn:
        with pytest.raises(SchemaError, match=r"no awa schema; run `awa-tui migrate`"):
            migrations.check_version(conn)
    client = Client(empty_dsn)
    with pytest.raises(SchemaError, match=r"^the database has no awa schema; run `awa-tui migrate`$"):
        client.reads.list_schedules()
    client.close()


# Postgres vacuums a table once its dead rows pass threshold + scale_factor * rows, each
# read from the table's storage parameters, else from the server's settings.
TRIGGER_SQL = """
SELECT coalesce(max(split_part(o, '=', 2)) FILTER (WHERE o LIKE 'autovacuum_vacuum_threshold=%%'),
                current_setting('autovacuum_vacuum_threshold'))::float8
       + coalesce(max(split_part(o, '=', 2)) FILTER (WHERE o LIKE 'autovacuum_vacuum_scale_factor=%%'),
                  current_setting('autovacuum_vacuum_scale_factor'))::float8 * %(rows)s AS trigger
FROM pg_class c LEFT JOIN LATERAL unnest(c.reloptions) o ON true
WHERE c.oid = 'awa.cron_jobs'::regclass
"""


def test_cron_jobs_is_vacuumed_after_a_minute_of_fires_at_a_million(conn: psycopg.Connection[Any]) -> None:
    """S54: every fire leaves a dead entry in the due index that later due queries read
    until a vacuum; the table's own trigger keeps that to about one minute boundary."""
    options = conn.execute("SELECT reloptions FROM pg_class WHERE oid = 'awa.cron_jobs'::regclass").fetchone()
    assert sorted(options["reloptions"]) == ["autovacuum_vacuum_scale_factor=0.005",
                                             "autovacuum_vacuum_threshold=1000"]
    # A 1M fleet of the bench updates ~12,000 rows a minute boundary (1 % per-minute).
    assert conn.execute(TRIGGER_SQL, {"rows": 1_000_000}).fetchone()["trigger"] == 6000.0
    assert conn.execute(TRIGGER_SQL, {"rows": 10_000}).fetchone()["trigger"] == 1050.0
    # Negative control: the server's defaults (the table before v017) wait for 200k.
    conn.execute("ALTER TABLE awa.cron_jobs RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold)")
    try:
        assert conn.execute(TRIGGER_SQL, {"rows": 1_000_000}).fetchone()["trigger"] == 200050.0
    finally:
        conn.execute("ALTER TABLE awa.cron_jobs SET (autovacuum_vacuum_scale_factor = 0.005,"
                     " autovacuum_vacuum_threshold = 1000)")


def test_calendar_rows_keep_their_shape_and_every_change_moves_the_version(conn: psycopg.Connection[Any]) -> None:
    """v018: a calendar's name and dates are checked by the database; any write to the
    table, however made, moves the version the evaluator probes."""
    def version() -> int:
        row = conn.execute("SELECT version FROM awa.calendars_version").fetchone()
        assert row is not None
        return int(row["version"])

    assert version() == 0
    conn.execute("INSERT INTO awa.calendars (name, dates) VALUES ('h', '[]')")
    conn.execute("UPDATE awa.calendars SET dates = '[[\"2026-12-25\", \"2026-12-25\"]]'")
    conn.execute("DELETE FROM awa.calendars")
    conn.execute("TRUNCATE awa.calendars")
    assert version() == 4
    for bad in ("INSERT INTO awa.calendars (name, dates) VALUES ('bad name', '[]')",
                "INSERT INTO awa.calendars (name, dates) VALUES ('ok', '{}')",
                "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, exclude_dates) "
                "VALUES ('x', '* * * * *', 'UTC', 'k', '{}')",
                "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, exclude_calendars) "
                "VALUES ('x', '* * * * *', 'UTC', 'k', '\"h\"')"):
        with pytest.raises(psycopg.errors.CheckViolation):
            with conn.transaction():
                conn.execute(bad)
    assert version() == 4
