"""Sync: registering and syncing N schedules at startup, and a steady-state sync.

- awa-tui directly: build N schedules (validation included) and UPSERT them into an empty
  table (target: < 5 s for 100k together), then sync again with nothing changed: it must
  write nothing (no new row version, no row lock: the (ctid, xmin, xmax) digest is
  unchanged) and we report its time and WAL bytes.
- both engines from a cold start on an empty database with N `* * * * *` schedules, each
  as a fresh subprocess (awa-tui through its own CLI, `python -m awa_tui run`; awa-pg
  through bench/awa_pg_side.py): time from the spawn, interpreter start and imports
  included, until all N rows are in awa.cron_jobs (sync) and until all N have fired once
  (their first fire falls in the first-fire lookback, so the first pass fires them all).
"""

from __future__ import annotations

import time

from bench.common import BENCH_KIND, BENCH_QUEUE, Report, Row, Server, connect, wait_until
from bench.engines import Engine, OursProcess, Spawner, Upstream

STARTUP_TARGET_S = 5.0
# A realistic mix: 60 distinct expressions over a few zones (not all-distinct; cron_math
# measures that worst case).
EXPRESSIONS = [f"{m} * * * *" for m in range(0, 60, 5)] + [f"{m} {h} * * *" for m in (0, 30) for h in range(0, 24)]
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo"]

DIGEST_SQL = """
SELECT md5(string_agg(ctid::text || ':' || xmin::text || ':' || xmax::text, ',' ORDER BY name)) AS d
FROM awa.cron_jobs
"""


def direct(dsn: str, n: int) -> dict[str, float | None]:
    from awa_tui import Client

    client = Client(dsn, application_name="bench-sync", operator="bench")
    try:
        began = time.perf_counter()
        for i in range(n):
            client.periodic(f"sched-{i:06d}", EXPRESSIONS[i % len(EXPRESSIONS)], BENCH_KIND, {"i": i},
                            timezone=ZONES[i % len(ZONES)], queue=BENCH_QUEUE, tags=["bench"])
        registered = time.perf_counter()
        first = client.sync()
        synced = time.perf_counter()
        assert first["inserted"] == n, first
        with connect(dsn) as conn:
            before = conn.execute(DIGEST_SQL).fetchone()["d"]
            lsn0 = conn.execute("SELECT pg_current_wal_insert_lsn() AS l").fetchone()["l"]
            t0 = time.perf_counter()
            again = client.sync()
            steady = time.perf_counter() - t0
            wal = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)::float8 AS b",
                               (lsn0,)).fetchone()["b"]
            after = conn.execute(DIGEST_SQL).fetchone()["d"]
    finally:
        client.close()
    return {
        "register": registered - began,
        "sync": synced - registered,
        "total": synced - began,
        "steady": steady,
        "steady_rows": float(again["inserted"] + again["updated"]),
        "steady_touched": 0.0 if before == after else 1.0,
        "steady_wal_kb": wal / 1024,
    }


def startup(engine: Spawner, dsn: str, n: int, limit_s: float) -> dict[str, float | None]:
    """Seconds from the spawn of a fresh runtime process to synced and to all fired once."""
    began = time.monotonic()
    running = engine.spawn(dsn, n, "* * * * *", "coalesce", max_seconds=limit_s + 30)

    def reached(query: str) -> bool:
        gone = running.exited()
        if gone:  # a runtime that died would otherwise be waited for until the limit
            raise RuntimeError(f"cold start of {n:,}: {gone}")
        with connect(dsn) as conn:
            return conn.execute(query).fetchone()["n"] >= n

    try:
        deadline = began + limit_s
        synced = wait_until(lambda: reached("SELECT count(*) AS n FROM awa.cron_jobs"), deadline, 0.05)
        sync_s = time.monotonic() - began if synced else None
        fired = wait_until(
            lambda: reached("SELECT count(*) AS n FROM awa.cron_jobs WHERE last_enqueued_at IS NOT NULL"),
            deadline, 0.1,
        )
        fire_s = time.monotonic() - began if fired else None
    finally:
        running.stop()
    return {"sync": sync_s, "first_pass": fire_s}


def run(server: Server, engine: Engine, sizes: list[int], report: Report, upstream: Upstream | None) -> None:
    for n in sizes:
        with server.database(f"sync_{n}") as dsn:
            engine.migrate(dsn)
            d = direct(dsn, n)
        size = f"{n:,}"
        ok = d["total"] is not None and d["total"] < STARTUP_TARGET_S
        report.add(Row("sync", size, "register (validate)", "", d["register"], "s"))
        report.add(Row("sync", size, "first sync (insert)", "", d["sync"], "s"))
        report.add(Row("sync", size, "register + sync", f"< {STARTUP_TARGET_S:g} s", d["total"], "s", ok))
        report.add(Row("sync", size, "steady sync", "", d["steady"], "s"))
        report.add(Row("sync", size, "steady sync rows written", "0", d["steady_rows"], "",
                       d["steady_rows"] == 0 and d["steady_touched"] == 0,
                       note="" if d["steady_touched"] == 0 else "row versions or locks changed"))
        report.add(Row("sync", size, "steady sync WAL", "", d["steady_wal_kb"], "kB"))

        limit = 120.0
        ours = OursProcess()
        with server.database(f"start_ours_{n}") as dsn:
            ours.migrate(dsn)
            a = startup(ours, dsn, n, limit)
        b: dict[str, float | None] = {}
        if upstream is not None:
            with server.database(f"start_up_{n}") as dsn:
                upstream.migrate(dsn)
                b = startup(upstream, dsn, n, limit)
        report.add(Row("startup", size, "cold start (process) to synced", "", a["sync"], "s",
                       upstream=b.get("sync")))
        report.add(Row("startup", size, "cold start (process) to all fired", "", a["first_pass"], "s",
                       upstream=b.get("first_pass"),
                       note="" if b.get("first_pass") is not None or upstream is None else f"> {limit:g} s"))
