"""Measure the console with many schedules: first paint, UI-thread time per refresh, RSS.

    .venv/bin/python tests/tui/perf_console.py --schedules 10000 [--page N (default: the console's)] [--json out.json]

Uses AWA_TEST_DATABASE_URL's server if set, else the embedded Postgres; creates and drops
a scratch database. The console is built by the CLI's factory with the real clock (DB
time). "UI-thread time" is measured two ways: the refresh handler (keyed diff + status),
and the longest stall of the event loop while refreshes run (handler + layout + paint).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

# Run as a script: the repo (awa_tui), tests/ (helpers) and tests/tui (tui_helpers) on the path.
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent), str(HERE)]

SEED_SQL = """
INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, last_enqueued_at, next_fire_at,
                           paused_at, paused_by)
SELECT format('tenant-%%s.job-%%s', i %% 997, i),
       (ARRAY['*/5 * * * *', '0 * * * *', '30 2 * * *', '*/10 * * * * *', '0 9 * * 1-5'])[1 + i %% 5],
       (ARRAY['UTC', 'Europe/Paris', 'America/New_York'])[1 + i %% 3],
       'bench.kind', 'q' || (i %% 20),
       now() - interval '1 minute', now() + (i %% 3600) * interval '1 second',
       CASE WHEN i %% 50 = 0 THEN now() END, CASE WHEN i %% 50 = 0 THEN 'bench' END
FROM generate_series(1, %(n)s) AS i
"""

JOBS_SQL = """
INSERT INTO awa.jobs (kind, queue, state, created_at, metadata)
SELECT 'bench.kind', 'q0', 'completed', now(),
       jsonb_build_object('cron_name', format('tenant-%%s.job-%%s', i %% 997, i),
                          'cron_fire_time', to_char(now() - interval '1 minute', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
FROM generate_series(1, %(n)s) AS i
"""

# Between refreshes, as a busy leader would: 2% of the schedules fire (new last/next).
FIRE_SQL = """
UPDATE awa.cron_jobs SET last_enqueued_at = now(), next_fire_at = now() + interval '5 minutes'
WHERE name IN (SELECT name FROM awa.cron_jobs ORDER BY random() LIMIT %(k)s)
"""


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def measure(dsn: str, page: int, refreshes: int, churn: int) -> dict[str, float]:
    from tui_helpers import until

    from awa_tui.tui.config import ConsoleConfig
    from awa_tui.tui.launch import console_client, create_app

    rss_before = rss_mb()
    client = console_client(dsn, "bench@perf", True)
    started = time.perf_counter()
    app = create_app(ConsoleConfig(client=client, db_label="bench", refresh=0.5, page_size=page))
    stalls: list[tuple[float, float]] = []  # (when, how long the loop could not run)

    async def loop_lag() -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            after = time.perf_counter()
            stalls.append((after, after - before - 0.001))

    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: app.apply_times, timeout=60, what="first paint")
            fetch_first = app.poller.last_elapsed
            # The first data painted: every widget has handled what the apply queued, then the
            # screen is drawn. Not "until idle" (pause()): the page's counts follow in a
            # refresh of their own, which the idle wait would count too; that is `settled_s`.
            await pilot.pause(0)
            first_paint = time.perf_counter() - started
            first_apply = app.apply_times[0]
            panel = app.main.panel("schedules")
            await until(pilot, lambda: panel.counts is not None and panel.counts.total is not None, timeout=60,
                        what="the counts")
            await pilot.pause()
            settled = time.perf_counter() - started
            # Phase 1: the app refreshes on its own timer; a probe measures event-loop stalls.
            lag = asyncio.create_task(loop_lag())
            fetches, windows, writes = [], [], []
            with psycopg.connect(dsn, autocommit=True) as writer:
                for _ in range(refreshes):
                    # The churn is another process's write (a leader's): on a thread, so its
                    # wait does not block this event loop. Called inline, the probe counted the
                    # UPDATE itself as the console's stall (~1 s at 1M: ORDER BY random() over N).
                    wrote = time.perf_counter()
                    await asyncio.to_thread(writer.execute, FIRE_SQL, {"k": churn})
                    writes.append(time.perf_counter() - wrote)
                    count = len(app.apply_times)
                    begin = time.perf_counter()
                    await until(pilot, lambda c=count: len(app.apply_times) > c, timeout=60, what="refresh")
                    await pilot.pause(0.1)  # the repaint that follows the refresh
                    windows.append((begin, time.perf_counter()))
                    fetches.append(app.poller.last_elapsed)
                lag.cancel()
                # Phase 2, no probe: UI-thread CPU of one refresh (apply, layout, paint),
                # minus the same wait without a refresh (the pilot's own polling).
                app.poller.interval = 3600
                await pilot.pause(0.3)
                idle, busy = [], []
                for _ in range(refreshes):
                    before = time.thread_time()
                    await pilot.pause(0.15)
                    idle.append(time.thread_time() - before)
                    writer.execute(FIRE_SQL, {"k": churn})
                    count = len(app.apply_times)
                    before = time.thread_time()
                    app.refresh_now()
                    await until(pilot, lambda c=count: len(app.apply_times) > c, timeout=60, what="refresh")
                    await pilot.pause(0.15)
                    busy.append(time.thread_time() - before)
            await pilot.pause()
            rows = app.main.panel("schedules").table.row_count
            rss = rss_mb()
    finally:
        client.close()
    applies = app.apply_times[1:]
    # The longest stall of the event loop in each refresh window: handler + layout + paint
    # (+ any garbage collection that happened to run then).
    per_refresh = [max((d for t, d in stalls if a <= t <= b), default=0.0) for a, b in windows]
    return {
        "rows_on_screen": rows,
        "first_paint_s": first_paint,
        "settled_s": settled,  # the counts on screen too, and the app idle
        "first_apply_ms": first_apply * 1000,
        "first_fetch_ms": fetch_first * 1000,
        "refresh_apply_ms_median": statistics.median(applies) * 1000,
        "refresh_apply_ms_max": max(applies) * 1000,
        # CPU time of the UI thread (this thread) per refresh: handler, layout and paint,
        # unaffected by other processes competing for the cores.
        "refresh_ui_cpu_ms_median": (statistics.median(busy) - statistics.median(idle)) * 1000,
        "refresh_ui_cpu_ms_max": (max(busy) - statistics.median(idle)) * 1000,
        "refresh_stall_ms_median": statistics.median(per_refresh) * 1000,
        "refresh_stall_ms_p90": sorted(per_refresh)[int(0.9 * (len(per_refresh) - 1))] * 1000,
        "refresh_stall_ms_max": max(per_refresh) * 1000,
        "refresh_fetch_ms_median": statistics.median(fetches) * 1000,
        "churn_write_ms_median": statistics.median(writes) * 1000,  # the script's own UPDATE, off the loop
        "rss_mb": rss,
        "rss_growth_mb": rss - rss_before,
    }


def main() -> int:
    from awa_tui.tui.config import PAGE_SIZE

    parser = argparse.ArgumentParser()
    parser.add_argument("--schedules", type=int, default=10000)
    parser.add_argument("--page", type=int, default=PAGE_SIZE)
    parser.add_argument("--refreshes", type=int, default=10)
    parser.add_argument("--json")
    args = parser.parse_args()

    admin = os.environ.get("AWA_TEST_DATABASE_URL")
    if not admin:
        from awa_tui import embedded

        admin = embedded.ensure_running().dsn("postgres")
    name = f"awa_perf_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    dsn = make_conninfo(**{**conninfo_to_dict(admin), "dbname": name})
    try:
        from awa_tui.engine.migrations import migrate

        migrate(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(SEED_SQL, {"n": args.schedules})
            conn.execute(JOBS_SQL, {"n": args.schedules})
            conn.execute("ANALYZE")
        churn = max(1, args.schedules // 50)
        result = {"schedules": args.schedules, "page": args.page, "churn_per_refresh": churn,
                  **asyncio.run(measure(dsn, args.page, args.refreshes, churn))}
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    for key, value in result.items():
        print(f"{key:28} {value:10.1f}" if isinstance(value, float) else f"{key:28} {value:10}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
