"""Sync: registering and syncing N schedules at startup, and a steady-state sync.

- awa-tui directly: build N schedules (validation included) and UPSERT them into an empty
  table (target: < 5 s for 100k together, < 60 s for 1M), then sync again with nothing
  changed: it must write nothing (no new row version, no row lock: the (ctid, xmin, xmax)
  digest is unchanged) and we report its time, its process CPU (target < 10 s: a sync
  runs every 60 s), what it compared (S50: nothing) and WAL bytes; and the process's RSS
  (VmRSS) after registering and syncing (target < 1 GB at 1M; it includes the bench's own).
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
SCALE_TARGET_S = 60.0  # register + first sync of 1M
STEADY_CPU_TARGET_S = 10.0  # of the 60 s between two syncs
RSS_TARGET_MB = 1000.0  # with 1M registered (1 GB)
COLD_START_MAX = 100_000  # the cold-start processes are measured up to this size
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
    from awa_tui.engine.runtime.heap import registered_then_frozen

    client = Client(dsn, application_name="bench-sync", operator="bench")

    def register() -> None:
        for i in range(n):
            client.periodic(f"sched-{i:06d}", EXPRESSIONS[i % len(EXPRESSIONS)], BENCH_KIND, {"i": i},
                            timezone=ZONES[i % len(ZONES)], queue=BENCH_QUEUE, tags=["bench"])

    try:
        began = time.perf_counter()
        registered_then_frozen(register)  # as `awa-tui run` registers (its collection and freeze included)
        registered = time.perf_counter()
        first = client.sync()
        synced = time.perf_counter()
        assert first["inserted"] == n, first
        rss_mb = vm_rss_mb()
        with connect(dsn) as conn:
            before = conn.execute(DIGEST_SQL).fetchone()["d"]
            lsn0 = conn.execute("SELECT pg_current_wal_insert_lsn() AS l").fetchone()["l"]
            t0, cpu0 = time.perf_counter(), time.process_time()
            again = client.sync()
            steady, steady_cpu = time.perf_counter() - t0, time.process_time() - cpu0
            outcome = client.runtime.sync_tracker.last
            compared = float(outcome.compared) if outcome is not None else None
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
        "steady_cpu": steady_cpu,
        "steady_compared": compared,
        "rss_mb": rss_mb,
        "steady_rows": float(again["inserted"] + again["updated"]),
        "steady_touched": 0.0 if before == after else 1.0,
        "steady_wal_kb": wal / 1024,
    }


def vm_rss_mb() -> float | None:
    """This process's resident set (VmRSS), in MB; None where /proc is not there."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024 / 1e6  # the line is in KiB
    except OSError:
        return None
    return None


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
        target = STARTUP_TARGET_S if n <= 100_000 else SCALE_TARGET_S
        ok = d["total"] is not None and d["total"] < target
        report.add(Row("sync", size, "register (validate)", "", d["register"], "s"))
        report.add(Row("sync", size, "first sync (insert)", "", d["sync"], "s"))
        report.add(Row("sync", size, "register + sync", f"< {target:g} s", d["total"], "s", ok))
        report.add(Row("sync", size, "steady sync", "", d["steady"], "s"))
        cpu = d["steady_cpu"]
        report.add(Row("sync", size, "steady sync CPU (process)", f"< {STEADY_CPU_TARGET_S:g} s", cpu, "s",
                       cpu is not None and cpu < STEADY_CPU_TARGET_S))
        report.add(Row("sync", size, "steady sync schedules compared", "0", d["steady_compared"], "",
                       d["steady_compared"] == 0))
        report.add(Row("sync", size, "steady sync rows written", "0", d["steady_rows"], "",
                       d["steady_rows"] == 0 and d["steady_touched"] == 0,
                       note="" if d["steady_touched"] == 0 else "row versions or locks changed"))
        report.add(Row("sync", size, "steady sync WAL", "", d["steady_wal_kb"], "kB"))
        rss = d["rss_mb"]
        report.add(Row("sync", size, "RSS after register + sync", f"< {RSS_TARGET_MB:g} MB" if n >= 1_000_000 else "",
                       rss, "MB", (rss is not None and rss < RSS_TARGET_MB) if n >= 1_000_000 else None,
                       note="the bench process's own included"))
        if n > COLD_START_MAX:
            continue  # a cold start at this size is the sync above plus a process start

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
