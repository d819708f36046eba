"""Failover: three awa-tui runtimes, N per-second schedules; the leader dies.

Two ways to die: `kill -9` of the leader process (Postgres sees its sockets close), and
`pg_terminate_backend` of its lock connection (the process lives on and must step down).

Only the successor's commits count as "the new leader fires". A deposed leader whose lock
session was terminated lives on, and a pass it began before it noticed may commit after
the event; counting any commit would let those stale jobs meet the target. So a
bench-only trigger on awa.jobs records, per inserted job, the inserting session's
application name and transaction start. The successor is the runtime whose lock session
holds the lock after the event; its commits are the jobs inserted by that runtime (its
application name, the lock session's name minus " leader") in a transaction begun no
earlier than its lock session (so a re-elected deposed leader's stale pass does not count).

Measured (DB clock): from the event to another lock session holding the lock (polled every
10 ms on one open connection, so up to ~10 ms late), from the lock takeover and from the
event to the successor's first commit (target: a new leader fires within 2 s of the event),
the deposed leader's jobs committed after the event, and the worst lateness of the fires
due in the seconds after it (any committer: a stale job is still a job).
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
from typing import Any

from bench.common import BENCH_DIR, Report, Row, Server, collect_fires, connect, db_now, seed_schedules, wait_until
from bench.engines import Ours

TARGET_S = 2.0
AFTER_S = 6  # fires due this long after the kill are checked
TAKEOVER_LIMIT_S = 15.0
POLL_S = 0.01

HOLDER_SQL = """
SELECT a.application_name AS app, a.pid AS backend, a.backend_start, clock_timestamp() AS t
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 97 AND l.objid = 2002845697 AND l.objsubid = 1
"""

# Bench-only: who inserted each job. A statement trigger with a transition table costs one
# extra INSERT ... SELECT per fire batch, not one per row.
ORIGIN_SQL = """
CREATE TABLE public.bench_job_origin (
    job_id bigint PRIMARY KEY, backend int NOT NULL, app text NOT NULL, xact_start timestamptz NOT NULL
);
CREATE FUNCTION public.bench_record_origin() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO public.bench_job_origin (job_id, backend, app, xact_start)
    SELECT id, pg_backend_pid(), current_setting('application_name'), transaction_timestamp() FROM inserted;
    RETURN NULL;
END $$;
CREATE TRIGGER bench_job_origin AFTER INSERT ON awa.jobs REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION public.bench_record_origin();
"""

# Commits after the event by one runtime (its application name), split by whether the
# inserting transaction began before the successor's lock session (stale) or not.
COMMITS_SQL = """
SELECT min({committed}) FILTER (WHERE o.xact_start >= %(since)s) AS first,
       count(*) FILTER (WHERE o.xact_start < %(since)s) AS stale
FROM awa.jobs j JOIN public.bench_job_origin o ON o.job_id = j.id
WHERE o.app = %(app)s AND {committed} > %(event)s
"""


def holder(dsn: str) -> dict[str, Any] | None:
    with connect(dsn) as conn:
        return conn.execute(HOLDER_SQL).fetchone()


def spawn(dsn: str, n: int, name: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "bench.engine_proc", str(n), name], cwd=BENCH_DIR.parent,
                            env=os.environ | {"AWA_DATABASE_URL": dsn},
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    json.loads(proc.stdout.readline())
    return proc


def watch_takeover(dsn: str, old_backend: int, out: dict[str, Any]) -> tuple[threading.Thread, threading.Event]:
    """Poll the lock holder on one open connection until a session other than `old_backend`
    holds it; `out` gets that row (its `t` is the DB clock when it was seen)."""
    ready = threading.Event()

    def poll() -> None:
        with connect(dsn) as conn:
            ready.set()
            deadline = time.monotonic() + TAKEOVER_LIMIT_S
            pause = threading.Event()
            while time.monotonic() < deadline:
                row = conn.execute(HOLDER_SQL).fetchone()
                if row is not None and row["backend"] != old_backend:
                    out.update(row)
                    return
                pause.wait(POLL_S)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    return thread, ready


def commits(dsn: str, commit_ts: bool, app: str, event: datetime, since: datetime) -> dict[str, Any]:
    committed = "pg_xact_commit_timestamp(j.xmin)" if commit_ts else "j.created_at"
    with connect(dsn) as conn:
        return conn.execute(COMMITS_SQL.format(committed=committed),
                            {"app": app, "event": event, "since": since}).fetchone()


def one_failover(
    server: Server, dsn: str, procs: dict[str, subprocess.Popen[str]], how: str
) -> dict[str, float | None]:
    h = holder(dsn)
    assert h is not None, "no leader"
    old_app = str(h["app"]).removesuffix(" leader")
    seen: dict[str, Any] = {}
    watcher, ready = watch_takeover(dsn, int(h["backend"]), seen)
    ready.wait(10)
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
    start = event.replace(microsecond=0) + timedelta(seconds=1)
    fires = collect_fires(dsn, "ours", server.commit_ts, start, start + timedelta(seconds=AFTER_S))
    result: dict[str, float | None] = {
        "takeover": None, "first_fire": None, "after_takeover": None, "stale": None,
        "max_late": max(fires.lateness) if fires.lateness else None,
        "doubled": float(fires.doubled),
    }
    if "t" not in seen:
        return result  # nobody took over within the limit: every timing stays unknown
    new_app = str(seen["app"]).removesuffix(" leader")
    since = seen["backend_start"]
    successor = commits(dsn, server.commit_ts, new_app, event, since)
    # The deposed runtime's jobs committed after the event by passes begun before its
    # successor's lock session (all of its commits if another runtime took over).
    if new_app == old_app:
        deposed = successor
    else:
        deposed = commits(dsn, server.commit_ts, old_app, event, datetime.max.replace(tzinfo=event.tzinfo))
    first = successor["first"]
    result.update({
        "takeover": (seen["t"] - event).total_seconds(),
        "first_fire": (first - event).total_seconds() if first else None,
        "after_takeover": (first - seen["t"]).total_seconds() if first else None,
        "stale": float(deposed["stale"]),
    })
    return result



def stop_all(procs: dict[str, subprocess.Popen[str]]) -> None:
    """SIGTERM every runtime still running, then wait for each (killed after 15 s)."""
    for proc in procs.values():
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
    for proc in procs.values():
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()

def run(server: Server, sizes: list[int], report: Report, repeats: int = 2) -> None:
    for n in sizes:
        results: dict[str, list[dict[str, float | None]]] = {"kill -9": [], "terminate lock conn": []}
        with server.database(f"failover_{n}") as dsn:
            Ours().migrate(dsn)
            with connect(dsn) as conn:
                conn.execute(ORIGIN_SQL)
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
                stop_all(procs)
        size = f"{n:,} x 1/s, 3 runtimes, worst of {repeats}"
        for how, runs in results.items():
            def worst(key: str, runs: list[dict[str, float | None]] = runs) -> float | None:
                values = [r[key] for r in runs]
                return None if any(v is None for v in values) else max(values)  # type: ignore[type-var]

            first = worst("first_fire")
            report.add(Row("failover", size, f"{how}: lock taken over", "", worst("takeover"), "s"))
            report.add(Row("failover", size, f"{how}: successor's first fire", f"< {TARGET_S:g} s", first, "s",
                           first is not None and first < TARGET_S))
            report.add(Row("failover", size, f"{how}: successor's first fire after takeover", "",
                           worst("after_takeover"), "s"))
            report.add(Row("failover", size, f"{how}: deposed leader's jobs committed after", "", worst("stale"), ""))
            report.add(Row("failover", size, f"{how}: max lateness next {AFTER_S} s", "", worst("max_late"), "s"))
            report.add(Row("failover", size, f"{how}: doubled", "0", worst("doubled"), "", worst("doubled") == 0))
    report.note("failover: times from the kill (DB clock) to another lock session holding the lock, and to the "
                "first job committed by the successor (jobs the deposed leader committed after the kill do not "
                "count; a bench-only trigger records each job's inserting session); lateness of every fire due "
                "in the next seconds, whoever committed it")
