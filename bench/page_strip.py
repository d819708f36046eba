"""The schedules page with its outcome strips: 1,000 rows of 10,000 schedules, 1M jobs.

    .venv/bin/python -m bench.page_strip [--keep] [--db NAME] [--runs 20]

Seeds a scratch database on AWA_BENCH_DATABASE_URL (or AWA_TEST_DATABASE_URL): 10,000
schedules of five expressions in three zones, each with 100 jobs fired for its last 100
due instants (1M jobs: 1 in 50 failed, the newest of every tenth waiting), leadership
recorded over all of it, a pause in the audit trail of every fiftieth schedule. Then
times `Client.schedule_page(limit=1000)` (the console's refresh read) `--runs` times and
prints the median and the worst. `--keep` leaves the database for another run (`--db
NAME` reuses it without seeding), so the same data can be read by two checkouts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from awa_tui import Client
from awa_tui.engine.cron.expression import compile_cron
from awa_tui.engine.migrations import migrate

EXPRS = ("*/5 * * * *", "0 * * * *", "30 2 * * *", "*/10 * * * * *", "0 9 * * 1-5")
ZONES = ("UTC", "Europe/Paris", "America/New_York")
SCHEDULES = 10000
JOBS_PER_SCHEDULE = 100
NOW = datetime(2026, 3, 2, 12, 0, 5, tzinfo=UTC)

SCHEDULES_SQL = """
INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, created_at, last_enqueued_at, paused_at, paused_by)
SELECT format('tenant-%%s.job-%%s', i %% 997, i), (%(exprs)s::text[])[1 + i %% 5], (%(zones)s::text[])[1 + i %% 3],
       'bench.kind', 'q' || (i %% 20), %(created)s, %(now)s,
       CASE WHEN i %% 50 = 0 THEN %(paused)s::timestamptz END, CASE WHEN i %% 50 = 0 THEN 'bench' END
FROM generate_series(1, %(n)s) AS i
"""

# One job per due instant of the schedule's (expression, zone), the newest last.
JOBS_SQL = """
INSERT INTO awa.jobs (kind, queue, state, created_at, metadata)
SELECT 'bench.kind', c.queue,
       CASE WHEN f.n %% 50 = 7 THEN 'discarded' WHEN f.n = %(count)s AND c.name LIKE '%%0' THEN 'available'
            ELSE 'completed' END,
       f.at + interval '1 second',
       jsonb_build_object('cron_name', c.name, 'cron_fire_time', to_char(f.at AT TIME ZONE 'UTC',
                                                                        'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
FROM awa.cron_jobs c, unnest(%(instants)s::timestamptz[]) WITH ORDINALITY AS f(at, n)
WHERE c.cron_expr = %(expr)s AND c.timezone = %(zone)s
ORDER BY f.at, c.name
"""


def seed(dsn: str) -> None:
    migrate(dsn)
    lasts: dict[tuple[str, str], list[datetime]] = {}
    for expr in EXPRS:
        for zone in ZONES:
            cron, out, cursor = compile_cron(expr, zone), [], NOW
            while len(out) < JOBS_PER_SCHEDULE:
                fire = cron.latest_at_or_before(cursor)
                assert fire is not None
                out.append(fire.at)
                cursor = fire.at - timedelta(microseconds=1)
            lasts[(expr, zone)] = out[::-1]
    created = min(t[0] for t in lasts.values()) - timedelta(days=1)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SCHEDULES_SQL, {"exprs": list(EXPRS), "zones": list(ZONES), "created": created, "now": NOW,
                                     "paused": NOW - timedelta(minutes=30), "n": SCHEDULES})
        conn.execute("INSERT INTO awa.audit_log (at, operator, action, target, before, after) "
                     "SELECT paused_at, 'bench', 'pause', name, '{\"paused_at\": null}', "
                     "jsonb_build_object('paused_at', paused_at) FROM awa.cron_jobs WHERE paused_at IS NOT NULL")
        for (expr, zone), instants in lasts.items():
            conn.execute(JOBS_SQL, {"instants": instants, "expr": expr, "zone": zone, "count": JOBS_PER_SCHEDULE})
        conn.execute("INSERT INTO awa.leader_terms (term, instance_id, acquired_at, held_until) VALUES (1, %s, %s, %s)",
                     (uuid.uuid4(), created, NOW + timedelta(days=1)))
        conn.execute("UPDATE awa.ledger_meta SET leadership_since = %s", (created,))
        conn.execute("VACUUM ANALYZE")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    admin = os.environ.get("AWA_BENCH_DATABASE_URL") or os.environ.get("AWA_TEST_DATABASE_URL")
    if not admin:
        print("set AWA_BENCH_DATABASE_URL (a PostgreSQL server to create a scratch database on)", file=sys.stderr)
        return 2
    name = args.db or f"awa_page_{uuid.uuid4().hex[:8]}"
    dsn = make_conninfo(**{**conninfo_to_dict(admin), "dbname": name})
    if not args.db:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        started = time.perf_counter()
        seed(dsn)
        print(f"seeded {name} in {time.perf_counter() - started:.0f} s")
    try:
        with Client(dsn) as client:
            client.reads.schedule_page(limit=1000, now=NOW)  # warm: plans, caches
            times = []
            for _ in range(args.runs):
                started = time.perf_counter()
                page = client.reads.schedule_page(limit=1000, now=NOW)
                times.append((time.perf_counter() - started) * 1000)
            strips = sum(1 for r in page.rows if r.outcomes)
        print(f"page of {len(page.rows)} rows ({strips} with a strip): median {statistics.median(times):.1f} ms, "
              f"max {max(times):.1f} ms over {args.runs} runs; load average {os.getloadavg()[0]:.2f}")
    finally:
        if not args.keep and not args.db:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
