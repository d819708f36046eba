"""Retention against the fire path: evaluator passes with N due schedules each, measured
while a prune of M finished jobs runs on its own connection (and without, as a baseline).

    .venv/bin/python -m bench.prune_during_fire [--schedules 10000] [--jobs 1000000] [--passes 20] [--duty 1]

A private embedded Postgres (default durability) in a temporary directory, over its Unix
socket, so it never collides with `make bench`'s server. Each pass is timed from the
evaluator's call to its return (every chunk committed); passes run at injected minute
boundaries, so every pass fires all N schedules; its jobs are deleted after it (untimed),
so every pass sees the same table. The same number of passes is measured again after the
prune, on the machine as loaded then. The target: p99 < 1 s during the prune.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from awa_tui import embedded
from awa_tui.engine.firing.evaluator import evaluate
from awa_tui.engine.ledger.retention import prune_jobs
from awa_tui.engine.migrations import migrate

SEED_SCHEDULES = """
INSERT INTO awa.cron_jobs (name, cron_expr, kind, queue, missed_fire_policy, last_enqueued_at, created_at)
SELECT format('bench-%%s', lpad(i::text, 6, '0')), '* * * * *', 'bench.job', 'bench', 'coalesce', %(last)s,
       %(last)s - interval '1 day'
FROM generate_series(1, %(n)s) i
"""
# Finished jobs of 1000 schedules (not the fired ones), finished 30 days ago.
SEED_JOBS = """
INSERT INTO awa.jobs (kind, queue, state, attempt, created_at, attempted_at, finalized_at, metadata)
SELECT 'old.job', 'old', 'completed', 1, t, t, t,
       jsonb_build_object('cron_name', format('old-%%s', i %% 1000),
                          'cron_fire_time', to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
FROM generate_series(1, %(n)s) i, LATERAL (SELECT now() - interval '30 days' + i * interval '1 second' AS t) x
"""


def connect(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True, row_factory=dict_row)  # type: ignore[arg-type]


def passes(dsn: str, start: Any, count: int, stop: threading.Event | None = None) -> list[float]:
    out: list[float] = []
    with connect(dsn) as conn:
        for k in range(count):
            if stop is not None and stop.is_set():
                break
            t0 = time.perf_counter()
            result = evaluate(conn, start + timedelta(minutes=k))
            out.append(time.perf_counter() - t0)
            assert not result.errors, result.errors[:3]
            # Untimed: drop the pass's jobs (a worker would have run them), so every pass
            # sees the same table, whatever ran before it.
            conn.execute("DELETE FROM awa.jobs WHERE queue = 'bench'")
    return out


def summary(label: str, durations: list[float]) -> str:
    ordered = sorted(durations)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return (f"{label}: {len(ordered)} passes, p50 {statistics.median(ordered):.3f} s, p99 {p99:.3f} s, "
            f"max {ordered[-1]:.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--schedules", type=int, default=10000)
    parser.add_argument("--jobs", type=int, default=1000000)
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--duty", type=float, default=1.0, help="the prune's pacing (retention.prune_jobs)")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="awa-prune-bench-"))
    try:
        server = embedded.ensure_running(home, dbname="postgres")
        dsn = server.dsn("postgres")
        migrate(dsn)
        with connect(dsn) as conn:
            now = conn.execute("SELECT date_trunc('minute', clock_timestamp()) AS t").fetchone()["t"]
            t0 = time.perf_counter()
            conn.execute(SEED_JOBS, {"n": args.jobs})
            print(f"seeded {args.jobs} finished jobs in {time.perf_counter() - t0:.1f} s")
            conn.execute(SEED_SCHEDULES, {"n": args.schedules, "last": now})
            conn.execute("VACUUM ANALYZE awa.jobs")
            conn.execute("ANALYZE awa.cron_jobs")
        start = now + timedelta(minutes=1)
        passes(dsn, start, 2)  # warm-up: hints computed, caches filled
        start += timedelta(minutes=2)
        baseline = passes(dsn, start, args.passes)
        start += timedelta(minutes=args.passes)
        print(summary(f"baseline ({args.schedules} due per pass, no prune)", baseline))

        outcome: dict[str, Any] = {}
        done = threading.Event()

        def prune() -> None:
            with connect(dsn) as conn:
                t0 = time.perf_counter()
                outcome["result"] = prune_jobs(conn, timedelta(days=14), keep=50, duty=args.duty)
                outcome["seconds"] = time.perf_counter() - t0
            done.set()

        pruner = threading.Thread(target=prune)
        pruner.start()
        during: list[float] = []
        while not done.is_set():
            during += passes(dsn, start + timedelta(minutes=len(during)), args.passes, stop=done)
        pruner.join()
        result = outcome["result"]
        print(summary(f"during the prune ({args.schedules} due per pass, duty {args.duty:g})", during))
        # The same number of passes again without a prune: the machine's load then.
        start += timedelta(minutes=len(during))
        after = passes(dsn, start, len(during))
        print(summary(f"after the prune, as many passes again ({args.schedules} due per pass)", after))
        print(f"prune: {result.deleted} jobs deleted in {result.batches} batches, {outcome['seconds']:.1f} s "
              f"({result.deleted / outcome['seconds']:.0f} jobs/s)")
    finally:
        embedded.stop(home)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
