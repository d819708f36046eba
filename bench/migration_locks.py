"""How long each migration holds its locks at 100k and 1M schedules (docs/operations.md,
"Upgrading"). Every migration runs in one transaction that takes awa.cron_jobs and awa.jobs
ACCESS EXCLUSIVE first, so its duration is how long fires and claims wait.

A scratch database per size on the server of AWA_TEST_DATABASE_URL (else the embedded one):
v001..v003 applied, N schedules and N finished jobs inserted, then every later migration
applied and timed one by one, then v019 undone (`migrate --down-to 18`) and timed too.

    AWA_TEST_DATABASE_URL=... python -m bench.migration_locks [--sizes 100000,1000000]

Prints a Markdown table and writes bench/results/migration-locks.json.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

from awa_tui.engine import migrations
from awa_tui.engine.core.db import MIGRATION_LOCK_KEY
from awa_tui.engine.migrations import _lock_in_enqueue_order, down_sql, schema_doc
from bench.common import RESULTS_DIR

SEEDED_AFTER = 3  # the rows go in once the schema has schedules, owners and hints


def _with_db(dsn: str, name: str) -> str:
    params = conninfo_to_dict(dsn)
    params["dbname"] = name
    return make_conninfo(**params)


def _apply(conn: psycopg.Connection[Any], migration: migrations.Migration) -> float:
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
        started = time.perf_counter()
        _lock_in_enqueue_order(conn)
        conn.execute(migration.applied_sql())  # type: ignore[arg-type]
        conn.execute("INSERT INTO awa.schema_migrations (version, name) VALUES (%s, %s)",
                     (migration.version, migration.name))
    return time.perf_counter() - started


def measure(admin: str, size: int) -> dict[str, float]:
    name = f"awa_bench_mig_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        with psycopg.connect(_with_db(admin, name), autocommit=True, row_factory=dict_row) as conn:
            conn.execute("CREATE SCHEMA awa")
            conn.execute("CREATE TABLE awa.schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
                         " applied_at timestamptz NOT NULL DEFAULT now())")
            timings: dict[str, float] = {}
            for migration in migrations.available():
                seconds = _apply(conn, migration)
                if migration.version > SEEDED_AFTER:
                    timings[migration.file_name[:-4]] = seconds
                if migration.version == SEEDED_AFTER:
                    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind, last_enqueued_at) "
                                 "SELECT 'bench-' || i, '*/5 * * * *', 'bench.job', now() - interval '5 min' "
                                 "FROM generate_series(1, %s) i", (size,))
                    conn.execute("INSERT INTO awa.jobs (kind, state, finalized_at, metadata) "
                                 "SELECT 'bench.job', 'completed', now(), jsonb_build_object('cron_name', "
                                 "'bench-' || i, 'cron_fire_time', now()::text) FROM generate_series(1, %s) i",
                                 (size,))
                    conn.execute("ANALYZE")
            newest = migrations.available()[-1]
            with conn.transaction():
                started = time.perf_counter()
                _lock_in_enqueue_order(conn)
                conn.execute(down_sql(newest))  # type: ignore[arg-type]
                timings[f"undo {newest.file_name[:-4]}"] = time.perf_counter() - started
                conn.execute("DELETE FROM awa.schema_migrations WHERE version = %s", (newest.version,))
        return timings
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    admin = schema_doc.admin_dsn()
    results = {size: measure(admin, size) for size in sizes}
    names = list(results[sizes[0]])
    print("| migration | " + " | ".join(f"{s:,} schedules" for s in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for name in names:
        print(f"| {name} | " + " | ".join(f"{results[s][name]:.2f} s" for s in sizes) + " |")
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "migration-locks.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
