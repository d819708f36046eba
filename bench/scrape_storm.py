"""Firing under a storm of /metrics scrapes while a table the scrape reads is locked: the
metrics server must not be able to hurt the fire path (docs/operations.md, "Health, check and
metrics").

    .venv/bin/python -m bench.scrape_storm [--schedules 200] [--scrapers 1000] [--window 30]

A private embedded Postgres (default settings, max_connections 100) in a temporary directory.
N schedules due every second (six-field cron, catch_up), one runtime leading in-process and
serving /metrics. Two windows of W seconds each: quiet, then the storm, in which a session
holds `awa.alert_sinks` (read by every scrape, by no fire) ACCESS EXCLUSIVE and S threads
scrape /metrics back to back. For each window: the fires due in it that landed within 1 s
of their instant (lateness = the job's commit time minus its instant), exactly once; and,
sampled every 0.2 s, the most server connections in use. Prints a Markdown table and writes
bench/results/scrape-storm.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import shutil
import statistics
import tempfile
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from awa_tui import Client, embedded
from awa_tui.engine.migrations import migrate
from bench.common import RESULTS_DIR

LAND_WITHIN_S = 1.0
FIRES_SQL = """
SELECT metadata ->> 'cron_name' AS name, metadata ->> 'cron_fire_time' AS fire,
       extract(epoch FROM pg_xact_commit_timestamp(xmin) - (metadata ->> 'cron_fire_time')::timestamptz)::float8
           AS lateness
FROM awa.jobs WHERE (metadata ->> 'cron_fire_time')::timestamptz >= %(opens)s
                AND (metadata ->> 'cron_fire_time')::timestamptz < %(closes)s
"""


def _db_now(conn: psycopg.Connection[Any]) -> datetime:
    return conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]  # type: ignore[index]


def _wait_until(conn: psycopg.Connection[Any], at: datetime) -> None:
    remaining = (at - _db_now(conn)).total_seconds()
    if remaining > 0:
        time.sleep(remaining)  # the measured window's length, on the database's clock


class Sampler:
    """The most server connections in use, sampled every 0.2 s on a connection of its own."""

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True, row_factory=dict_row)
        self.peak = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.2):
            n = self.conn.execute("SELECT count(*) AS n FROM pg_stat_activity WHERE backend_type = 'client backend'"
                                  ).fetchone()["n"]  # type: ignore[index]
            self.peak = max(self.peak, n)


def _scraper(url: str, stop: threading.Event, answers: dict[str, int], lock: threading.Lock) -> None:
    while not stop.is_set():
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                response.read()
                key = str(response.status)
        except urllib.error.HTTPError as exc:
            key = str(exc.code)
        except OSError as exc:  # refused, reset, timed out: counted, the storm goes on
            key = type(exc).__name__
        with lock:
            answers[key] = answers.get(key, 0) + 1


def _storm(url: str, scrapers: int, stop: Any, results: Any) -> None:
    """The scrapers, in a process of their own: the runtime's process keeps its own CPU."""
    halt, lock, answers = threading.Event(), threading.Lock(), {}  # type: ignore[var-annotated]
    threads = [threading.Thread(target=_scraper, args=(url, halt, answers, lock), daemon=True)
               for _ in range(scrapers)]
    for t in threads:
        t.start()
    stop.wait()
    halt.set()
    for t in threads:
        t.join(timeout=60)
    results.put(answers)


def window(dsn: str, opens: datetime, seconds: int, storm: tuple[str, int] | None) -> dict[str, Any]:
    """One window: the fires due in it and the peak connections, with a storm or without."""
    closes = opens + timedelta(seconds=seconds)
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        sampler = Sampler(dsn)
        holder, storm_process, answers = None, None, {}
        context = multiprocessing.get_context("spawn")  # not fork: this process runs threads
        stop, results = context.Event(), context.Queue()
        _wait_until(conn, opens - timedelta(seconds=2))
        if storm is not None:
            url, scrapers = storm
            holder = psycopg.connect(dsn)
            holder.execute("LOCK TABLE awa.alert_sinks IN ACCESS EXCLUSIVE MODE")  # held until rollback
            storm_process = context.Process(target=_storm, args=(url, scrapers, stop, results), daemon=True)
            storm_process.start()
        sampler.thread.start()
        _wait_until(conn, closes)
        stop.set()
        sampler.stop.set()
        if holder is not None:
            holder.rollback()
            holder.close()
        if storm_process is not None:
            answers = results.get(timeout=120)
            storm_process.join(timeout=60)
        sampler.thread.join()
        sampler.conn.close()
        _wait_until(conn, closes + timedelta(seconds=5))  # fires of the window still in flight commit
        rows = conn.execute(FIRES_SQL, {"opens": opens, "closes": closes}).fetchall()
    late = [r["lateness"] for r in rows]
    distinct = {(r["name"], r["fire"]) for r in rows}
    return {"fires": len(rows), "doubled": len(rows) - len(distinct),
            "landed_pct": 100.0 * sum(1 for x in late if x < LAND_WITHIN_S) / max(len(late), 1),
            "p50_s": statistics.median(late) if late else None, "max_s": max(late) if late else None,
            "peak_connections": sampler.peak, "scrapes": dict(sorted(answers.items()))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--schedules", type=int, default=200)
    parser.add_argument("--scrapers", type=int, default=1000)
    parser.add_argument("--window", type=int, default=30)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="awa-scrape-bench-"))
    try:
        server = embedded.ensure_running(home, dbname="postgres", server_flags=("-c track_commit_timestamp=on",))
        dsn = server.dsn("postgres")
        migrate(dsn)
        client = Client(dsn, operator="bench@scrapes")
        for k in range(args.schedules):
            client.periodic(f"storm-{k:05}", "* * * * * *", "bench.noop", missed_fire_policy="catch_up")
        metrics = client.serve_metrics("127.0.0.1:0")
        client.start(run_worker=False)
        try:
            with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
                start = _db_now(conn).replace(microsecond=0) + timedelta(seconds=10)
            quiet = window(dsn, start, args.window, None)
            stormy = window(dsn, start + timedelta(seconds=args.window + 10), args.window,
                            (f"http://127.0.0.1:{metrics.bound_port}/metrics", args.scrapers))
        finally:
            client.close()
    finally:
        embedded.stop(home)
        shutil.rmtree(home, ignore_errors=True)
    result = {"schedules": args.schedules, "scrapers": args.scrapers, "window_s": args.window,
              "quiet": quiet, "storm": stormy}
    print(f"| {args.schedules} schedules every second, {args.window} s each | quiet | "
          f"{args.scrapers} scrapers, a scraped table locked |")
    print("|---|---:|---:|")
    for key, label in (("fires", "fires due in the window"), ("doubled", "doubled"),
                       ("landed_pct", "landed within 1 s (%)"), ("p50_s", "lateness p50 (s)"),
                       ("max_s", "lateness max (s)"), ("peak_connections", "server connections, peak")):
        q, s = quiet[key], stormy[key]
        fmt = (lambda v: "-" if v is None else f"{v:.3f}") if key.endswith("_s") else (
            lambda v: f"{v:.1f}" if isinstance(v, float) else str(v))
        print(f"| {label} | {fmt(q)} | {fmt(s)} |")
    print(f"| scrapes answered | - | {stormy['scrapes']} |")
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "scrape-storm.json").write_text(json.dumps(result, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
