"""Failover: two awa-tui runtimes, N per-second schedules; the leader dies.

Two ways to die: `kill -9` of the leader process (Postgres sees its sockets close), and
`pg_terminate_backend` of its lock connection (the process lives on and must step down).
Measured from the moment of the kill (DB clock): when another runtime holds the leader
lock, when the first job commits after the kill, and the worst lateness of the fires due
in the seconds after it (target: a new leader fires within 2 s).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta

from bench.common import BENCH_DIR, Report, Row, Server, collect_fires, connect, db_now, seed_schedules, wait_until
from bench.engines import Ours

TARGET_S = 2.0
AFTER_S = 6  # fires due this long after the kill are checked

HOLDER_SQL = """
SELECT a.application_name AS app, a.pid AS backend
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 97 AND l.objid = 2002845697 AND l.objsubid = 1
"""


def holder(dsn: str) -> dict[str, object] | None:
    with connect(dsn) as conn:
        return conn.execute(HOLDER_SQL).fetchone()


def spawn(dsn: str, n: int, name: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "bench.engine_proc", dsn, str(n), name],
                            cwd=BENCH_DIR.parent, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    json.loads(proc.stdout.readline())
    return proc


def watch_takeover(dsn: str, old_app: str, out: dict[str, datetime]) -> threading.Thread:
    def poll() -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            h = holder(dsn)
            if h is not None and h["app"] != old_app:
                out["takeover"] = db_now(dsn)
                return
            time.sleep(0.02)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    return thread


def first_commit_after(dsn: str, commit_ts: bool, after: datetime) -> datetime | None:
    col = "pg_xact_commit_timestamp(xmin)" if commit_ts else "created_at"
    with connect(dsn) as conn:
        return conn.execute(f"SELECT min({col}) AS t FROM awa.jobs WHERE {col} > %s", (after,)).fetchone()["t"]


def one_failover(
    server: Server, dsn: str, procs: dict[str, subprocess.Popen[str]], how: str
) -> dict[str, float | None]:
    h = holder(dsn)
    assert h is not None, "no leader"
    old_app = str(h["app"]).removesuffix(" leader")
    seen: dict[str, datetime] = {}
    watcher = watch_takeover(dsn, f"{old_app} leader", seen)
    if how == "kill -9":
        procs[old_app].send_signal(signal.SIGKILL)
        event = db_now(dsn)
        procs[old_app].wait()
    else:
        with connect(dsn) as conn:
            row = conn.execute("SELECT clock_timestamp() AS t, pg_terminate_backend(%s)", (h["backend"],)).fetchone()
            event = row["t"]
    watcher.join()
    time.sleep(AFTER_S + 2)
    first = first_commit_after(dsn, server.commit_ts, event)
    start = event.replace(microsecond=0) + timedelta(seconds=1)
    fires = collect_fires(dsn, "ours", server.commit_ts, start, start + timedelta(seconds=AFTER_S))
    return {
        "takeover": (seen["takeover"] - event).total_seconds() if "takeover" in seen else None,
        "first_fire": (first - event).total_seconds() if first else None,
        "max_late": max(fires.lateness) if fires.lateness else None,
        "doubled": float(fires.doubled),
    }


def run(server: Server, sizes: list[int], report: Report, repeats: int = 2) -> None:
    for n in sizes:
        results: dict[str, list[dict[str, float | None]]] = {"kill -9": [], "terminate lock conn": []}
        with server.database(f"failover_{n}") as dsn:
            Ours().migrate(dsn)
            seed_schedules(dsn, n, "* * * * * *", "coalesce", db_now(dsn))
            procs: dict[str, subprocess.Popen[str]] = {}
            try:
                for i in range(3):
                    procs[f"bench-{i}"] = spawn(dsn, n, f"bench-{i}")
                wait_until(lambda dsn=dsn: holder(dsn) is not None, time.monotonic() + 30, 0.1)
                time.sleep(3)  # steady firing before the first failure
                for _ in range(repeats):
                    for how, runs in results.items():
                        runs.append(one_failover(server, dsn, procs, how))
                        if how == "kill -9":  # keep three runtimes: replace the dead one
                            dead = next(name for name, p in procs.items() if p.poll() is not None)
                            procs[dead] = spawn(dsn, n, dead)
                        time.sleep(2)
            finally:
                for proc in procs.values():
                    if proc.poll() is None:
                        os.kill(proc.pid, signal.SIGTERM)
                for proc in procs.values():
                    try:
                        proc.wait(15)
                    except subprocess.TimeoutExpired:
                        proc.kill()
        size = f"{n:,} x 1/s, 3 runtimes, worst of {repeats}"
        for how, runs in results.items():
            def worst(key: str, runs: list[dict[str, float | None]] = runs) -> float | None:
                values = [r[key] for r in runs]
                return None if any(v is None for v in values) else max(values)  # type: ignore[type-var]

            first = worst("first_fire")
            report.add(Row("failover", size, f"{how}: lock taken over", "", worst("takeover"), "s"))
            report.add(Row("failover", size, f"{how}: first fire after", f"< {TARGET_S:g} s", first, "s",
                           first is not None and first < TARGET_S))
            report.add(Row("failover", size, f"{how}: max lateness next {AFTER_S} s", "", worst("max_late"), "s"))
            report.add(Row("failover", size, f"{how}: doubled", "0", worst("doubled"), "", worst("doubled") == 0))
    report.note("failover: times from the kill (DB clock) to another runtime holding the lock and to the "
                "first job committed after it; lateness of every fire due in the next seconds")
