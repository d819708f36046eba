"""What a month of operation needs on disk (docs/operations.md, "Disk and WAL"): the WAL
written per fire, from the fire to its job's completion, and the bytes each finished job
takes in the tables until retention prunes it.

    .venv/bin/python -m bench.disk_per_fire [--schedules 100] [--seconds 60]

A private embedded Postgres (default settings, durability included) in a temporary
directory, so its WAL is this workload's alone. N schedules due every second (six-field
cron), one runtime leading with its worker running a handler that returns at once, for S
seconds. WAL: pg_current_wal_lsn() before and after (checkpoints and the runtime's own
bookkeeping included, as in production). Disk: each table's growth over the run (with its
indexes and TOAST, no VACUUM FULL: as a running database holds them), per job fired.
Prints a Markdown table and writes bench/results/disk-per-fire.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from awa_tui import Client, embedded
from awa_tui.engine.migrations import migrate
from bench.common import RESULTS_DIR

SIZES_SQL = """
SELECT c.relname AS name, pg_total_relation_size(c.oid)::bigint AS bytes
FROM pg_class c WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind = 'r'
"""


def _sizes(conn: psycopg.Connection[Any]) -> dict[str, int]:
    return {r["name"]: r["bytes"] for r in conn.execute(SIZES_SQL).fetchall()}


def _lsn(conn: psycopg.Connection[Any]) -> str:
    return conn.execute("SELECT pg_current_wal_lsn()::text AS l").fetchone()["l"]  # type: ignore[index]


def measure(dsn: str, schedules: int, seconds: float) -> dict[str, Any]:
    client = Client(dsn, operator="bench@disk")
    client.register_handler("bench.noop", lambda job: None)
    for k in range(schedules):
        client.periodic(f"disk-{k:05}", "* * * * * *", "bench.noop", queue="bench")
    client.sync()
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("CHECKPOINT")
        before, wal_from = _sizes(conn), _lsn(conn)
        client.start()
        time.sleep(seconds)  # the measured run (a duration, not a wait for anything)
        client.close()
        wal = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)::bigint AS b",
                           (wal_from,)).fetchone()["b"]  # type: ignore[index]
        after = _sizes(conn)
        jobs = conn.execute("SELECT count(*) AS n, count(*) FILTER (WHERE state = 'completed') AS done "
                            "FROM awa.jobs").fetchone()
    assert jobs is not None
    grown = {name: after[name] - before.get(name, 0) for name in after if after[name] != before.get(name, 0)}
    return {"schedules": schedules, "seconds": seconds, "jobs": jobs["n"], "completed": jobs["done"],
            "wal_bytes": wal, "wal_per_job": wal / max(jobs["n"], 1), "grown": grown,
            "disk_per_job": sum(grown.values()) / max(jobs["n"], 1),
            "jobs_table_per_job": grown.get("jobs", 0) / max(jobs["n"], 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--schedules", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="awa-disk-bench-"))
    try:
        server = embedded.ensure_running(home, dbname="postgres")
        dsn = server.dsn("postgres")
        migrate(dsn)
        result = measure(dsn, args.schedules, args.seconds)
    finally:
        embedded.stop(home)
        shutil.rmtree(home, ignore_errors=True)
    print(f"| {result['schedules']} schedules every second, {result['seconds']:.0f} s | value |")
    print("|---|---:|")
    print(f"| jobs fired / completed | {result['jobs']:,} / {result['completed']:,} |")
    print(f"| WAL written | {result['wal_bytes'] / 1e6:.1f} MB |")
    print(f"| WAL per job (fire to completion) | {result['wal_per_job']:,.0f} B |")
    print(f"| jobs table per job | {result['jobs_table_per_job']:,.0f} B |")
    print(f"| every table that grew, per job | {result['disk_per_job']:,.0f} B |")
    for name, grew in sorted(result["grown"].items(), key=lambda kv: -kv[1]):
        print(f"|   awa.{name} | {grew / 1e6:.2f} MB |")
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "disk-per-fire.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
