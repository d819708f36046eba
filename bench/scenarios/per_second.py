"""Per-second schedules: N x `* * * * * *` with catch_up, for a window of W seconds.

Seeded as running (last fire one second before the window opens). Every fire stamped
inside the window should land (commit) within 1 s of its instant, exactly once.
"""

from __future__ import annotations

import time
from datetime import timedelta

from bench.common import (
    Report,
    Row,
    Server,
    collect_fires,
    db_now,
    lateness_basis,
    percentile,
    seed_schedules,
    sleep_until_db,
)
from bench.engines import Engine

LAND_WITHIN_S = 1.0
LAND_TARGET_PCT = 99.0
GRACE_S = 5.0  # after the window closes, fires still in flight may commit


def measure(server: Server, engine: Engine, n: int, window_s: int) -> dict[str, float | None]:
    with server.database(f"ps_{engine.name}_{n}") as dsn:
        engine.migrate(dsn)
        lead = 6.0 + n / 5000 if engine.name == "ours" else 8.0 + n / 1000
        opens = (db_now(dsn) + timedelta(seconds=lead)).replace(microsecond=0)
        closes = opens + timedelta(seconds=window_s)
        seed_schedules(dsn, n, "* * * * * *", "catch_up", opens - timedelta(seconds=1))
        running = engine.start(dsn, n, "* * * * * *", "catch_up", max_seconds=lead + window_s + 120)
        cpu0, t0 = running.cpu_seconds(), time.monotonic()
        try:
            sleep_until_db(dsn, closes + timedelta(seconds=GRACE_S))
            cpu = (running.cpu_seconds() - cpu0) / (time.monotonic() - t0)
        finally:
            running.stop()
        fires = collect_fires(dsn, engine.name, server.commit_ts, opens, closes)
    expected = n * window_s
    late = fires.lateness
    landed = sum(1 for x in late if x < LAND_WITHIN_S)
    return {
        "landed": landed / expected * 100,
        "fired": len(late) / expected * 100,
        "p50": percentile(late, 0.5),
        "p95": percentile(late, 0.95),
        "p99": percentile(late, 0.99),
        "doubled": float(fires.doubled),
        "cpu": cpu * 100,
    }


def run(server: Server, engine: Engine, sizes: list[int], report: Report, upstream: Engine | None,
        window_s: int) -> None:
    for n in sizes:
        a = measure(server, engine, n, window_s)
        b = measure(server, upstream, n, window_s) if upstream is not None else {}
        size = f"{n:,} x 1/s, {window_s} s"

        def row(metric: str, key: str, target: str, unit: str, ok: bool | None, a=a, b=b, size=size) -> None:
            report.add(Row("per-second", size, metric, target, a.get(key), unit, ok, b.get(key),
                           lower_is_better=unit != "%" or key == "cpu"))

        row(f"landed < {LAND_WITHIN_S:g} s", "landed", f">= {LAND_TARGET_PCT:g} %", "%",
            a["landed"] is not None and a["landed"] >= LAND_TARGET_PCT)
        row("fired at all", "fired", "", "%", None)
        row("lateness p50", "p50", "", "s", None)
        row("lateness p99", "p99", "", "s", None)
        row("doubled", "doubled", "0", "", a["doubled"] == 0)
        row("engine CPU", "cpu", "", "%", None)
    report.note(f"per-second lateness = {lateness_basis(server.commit_ts)} - cron_fire_time; "
                "engine CPU = % of one core, process-wide")
