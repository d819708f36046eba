"""Idle cost: N schedules with nothing due.

Two measurements:
- awa-tui, 50 evaluator passes called directly after passes back to back have stored
  every next-fire hint (S51 writes them within a budget per pass): the median pass is
  held to the target (< 5 ms database time and < 2 ms Python CPU per pass) and the worst
  of the 50 is reported beside it (a median alone would hide a pass that stalls now and
  then);
- both engines as running runtimes over a quiet window: process CPU and database time
  per second (each engine does its own housekeeping too; awa-pg runs its queue
  maintenance, awa-tui its leader ping and snapshots).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from bench.common import (
    Report,
    Row,
    Server,
    connect,
    median,
    reset_stat_statements,
    seed_schedules,
    stat_statements_ms,
)
from bench.engines import Engine

DB_TARGET_MS = 5.0
CPU_TARGET_MS = 2.0
PASSES = 50
WINDOW_S = 10.0
YEARLY = "0 0 1 1 *"
HINT_PASSES_MAX = 1000  # back to back, before the idle passes are measured


def last_new_year() -> datetime:
    return datetime(datetime.now(UTC).year, 1, 1, tzinfo=UTC)


def direct_passes(server: Server, dsn: str, now: datetime | None = None,
                  passes: int = PASSES) -> dict[str, float | None]:
    """Idle evaluator passes at `now` (DB time when None)."""
    from awa_tui.engine.firing import evaluator

    with connect(dsn) as conn:
        # The seeded rows have no hint: passes write them by group within a budget per pass
        # (S51), so pass until one writes none; only then is a pass idle.
        began, fill_passes = time.perf_counter(), 0
        while True:
            fill = evaluator.evaluate(conn, now)
            fill_passes += 1
            assert fill.fired == 0, "idle scenario fired something"
            if fill.hinted == 0 or fill_passes >= HINT_PASSES_MAX:
                break
        hint_fill_s = time.perf_counter() - began
        evaluator.evaluate(conn, now)  # warm caches and plans
        if server.stat_statements:
            reset_stat_statements(dsn)
        cpu, wall, db = [], [], []
        db_before = stat_statements_ms(dsn) if server.stat_statements else 0.0
        for _ in range(passes):
            c0, w0 = time.thread_time(), time.perf_counter()
            result = evaluator.evaluate(conn, now)
            cpu.append((time.thread_time() - c0) * 1000)
            wall.append((time.perf_counter() - w0) * 1000)
            assert result.examined == 0 and result.fired == 0
            # Per pass, read between passes (outside the timed part); the reading's own
            # statement is left out of the sum (stat_statements_ms).
            if server.stat_statements:
                db_after = stat_statements_ms(dsn)
                db.append(db_after - db_before)
                db_before = db_after
    return {
        "hint_fill": hint_fill_s,
        "hint_fill_passes": float(fill_passes),
        "cpu": median(cpu),
        "cpu_worst": max(cpu),
        "wall": median(wall),
        "wall_worst": max(wall),
        "db": median(db),
        "db_worst": max(db) if db else None,
    }


def window(server: Server, engine: Engine, dsn: str, n: int) -> dict[str, float | None]:
    running = engine.start(dsn, n, YEARLY, "coalesce", max_seconds=600)
    try:
        time.sleep(3.0)  # the first pass stores the hints; measure after it
        if server.stat_statements:
            reset_stat_statements(dsn)
        cpu0, t0 = running.cpu_seconds(), time.monotonic()
        time.sleep(WINDOW_S)
        elapsed = time.monotonic() - t0
        cpu_ms = (running.cpu_seconds() - cpu0) * 1000 / elapsed
        db_ms = stat_statements_ms(dsn) / elapsed if server.stat_statements else None
    finally:
        running.stop()
    return {"cpu_per_s": cpu_ms, "db_per_s": db_ms}


def run(server: Server, engine: Engine, sizes: list[int], report: Report, upstream: Engine | None) -> None:
    for n in sizes:
        with server.database(f"idle_ours_{n}") as dsn:
            engine.migrate(dsn)
            seed_schedules(dsn, n, YEARLY, "coalesce", last_new_year())
            direct = direct_passes(server, dsn)
            win = window(server, engine, dsn, n)
        theirs: dict[str, float | None] = {}
        if upstream is not None:
            with server.database(f"idle_up_{n}") as dsn:
                upstream.migrate(dsn)
                seed_schedules(dsn, n, YEARLY, "coalesce", last_new_year())
                theirs = window(server, upstream, dsn, n)
        size = f"{n:,} idle"
        report.add(Row("idle pass", size, f"DB time / pass, median of {PASSES}", f"< {DB_TARGET_MS:g} ms",
                       direct["db"], "ms", direct["db"] is not None and direct["db"] < DB_TARGET_MS))
        report.add(Row("idle pass", size, f"DB time / pass, worst of {PASSES}", "", direct["db_worst"], "ms"))
        report.add(Row("idle pass", size, f"Python CPU / pass, median of {PASSES}", f"< {CPU_TARGET_MS:g} ms",
                       direct["cpu"], "ms", direct["cpu"] is not None and direct["cpu"] < CPU_TARGET_MS))
        report.add(Row("idle pass", size, f"Python CPU / pass, worst of {PASSES}", "", direct["cpu_worst"], "ms"))
        report.add(Row("idle pass", size, f"wall / pass, median of {PASSES}", "", direct["wall"], "ms"))
        report.add(Row("idle pass", size, f"wall / pass, worst of {PASSES}", "", direct["wall_worst"], "ms"))
        report.add(Row("idle pass", size, "passes until every hint is written (back to back)", "",
                       direct["hint_fill"], "s", note=f"{direct['hint_fill_passes']:.0f} passes"))
        report.add(Row("idle runtime", size, "process CPU / s", "", win["cpu_per_s"], "ms",
                       upstream=theirs.get("cpu_per_s")))
        report.add(Row("idle runtime", size, "DB time / s", "", win["db_per_s"], "ms",
                       upstream=theirs.get("db_per_s")))
