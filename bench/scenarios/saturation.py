"""Saturation: where one leader stops keeping up, and where its time goes.

Five measurements, each bounded in count and time (the whole scenario ~4-5 minutes):

1. **Ladder.** N x `* * * * * *` (catch_up) under a running runtime, for a short window,
   N increasing until p99 lateness passes 1 s (or the time budget is spent): fires per
   second achieved (jobs committed inside the window / its length), p50/p99 lateness
   (commit time - fire instant; a fire not committed by the end of the grace counts as
   infinitely late), WAL bytes per fire (pg_current_wal_insert_lsn over the window), the
   process CPU, and how busy the rest of the machine was (see `CpuAccount`).
2. **Split.** The same seeding, passes driven directly in this thread with the
   evaluator's own pieces (due_schedules, plan_fires, _batch_params, FIRE_BATCH_SQL) at
   injected instants, one after the other and never overlapped, so each phase is timed
   alone: fetching the due rows, planning (cron arithmetic), building the array
   literals, the fire statement's execution, reading its result rows, the commit; then
   `evaluate` itself at its chunk size and at a smaller one (overlap needs two chunks).
3. **Database ceiling.** The engine out of the way: the same fire statement with
   parameters computed beforehand, back to back; a plain INSERT of equivalent job rows;
   the CAS UPDATE alone; and the fire statement from two connections at once (two
   shards' leaders on one database); EXPLAIN (ANALYZE, WAL) of one chunk.
3b. **Several connections.** A bench-only prototype of one leader firing its chunks on K
   connections (`parallel_pass`), against `evaluate` itself.
4. **Burst.** 100k per-minute schedules due at one instant (fire_on_time's largest
   case): the same split for that one pass, and the engine's own `evaluate` (which
   overlaps planning with execution) on an identical seed.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from bench.common import (
    Report,
    Row,
    Server,
    collect_fires,
    connect,
    db_now,
    lateness_basis,
    percentile,
    seed_schedules,
    sleep_until_db,
)
from bench.engines import Engine

EVERY_SECOND = "* * * * * *"
WINDOW_S = 8
GRACE_S = 3.0
P99_LIMIT_S = 1.0
BUDGET_S = 300.0  # the whole scenario; the ladder stops early rather than overrun
LADDER_STEP_MAX_S = 60.0  # one step's own bound (lead + window + grace + setup)
BUSY_OTHERS = 0.7  # cores used by other processes above which a ladder point is repeated once
REPEATS_MAX = 2  # ... for at most this many points: on a machine busy throughout, reach the top instead
SPLIT_PASSES = 3  # steady passes per split point (the median is reported)
EVALUATE_PASSES = 2  # evaluator.evaluate passes per chunk size and split point (the best is reported)
SMALL_CHUNK = 1000  # the smaller chunk size evaluate is also timed at
CEILING_N = 20000  # schedules per pass for the database-only measurements
CEILING_PASSES = 3
BURST_N = 100000
PARALLEL_N = 20000  # schedules per pass for the several-connections prototype (4 chunks)
PARALLEL_KS = (2, 3)  # firing connections tried beside evaluate()'s one
PARALLEL_PASSES = 3

# --- how busy the machine was, besides us ---------------------------------------------------------


def _ticks(fields: list[str], first: int, count: int) -> int:
    return sum(int(x) for x in fields[first:first + count])


def _machine_busy_s() -> float:
    # /proc/stat "cpu" line: user nice system idle iowait irq softirq steal ...
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    busy = sum(int(fields[i]) for i in (0, 1, 2, 5, 6, 7))
    return busy / os.sysconf("SC_CLK_TCK")


def _proc_stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _server_cpu_s(postmaster: int | None) -> float:
    """The embedded server's CPU so far: the postmaster, its reaped children (cutime,
    cstime: backends that exited) and its live children."""
    if postmaster is None:
        return 0.0
    ticks = 0
    try:
        ticks += _ticks(_proc_stat(postmaster), 11, 4)  # utime stime cutime cstime
    except (OSError, IndexError, ValueError):
        return 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = _proc_stat(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        if fields[1] == str(postmaster):  # ppid
            ticks += _ticks(fields, 11, 2)
    return ticks / os.sysconf("SC_CLK_TCK")


def _postmaster_pid(server: Server) -> int | None:
    if not server.started_here or server.home is None:
        return None
    try:
        return int((server.home / "data" / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class CpuAccount:
    """Cores used during a step: by this process, by the bench server, by everyone else.

    The load average lags by a minute and counts our own engine and server, so "others"
    (machine busy time - ours - the server's, per second of wall time) is what says
    whether another helper's test run was competing for the 2 cores."""

    postmaster: int | None
    began: float = 0.0
    t: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_before: float = 0.0

    def start(self) -> CpuAccount:
        self.load_before = os.getloadavg()[0]
        self.began = time.monotonic()
        self.t = (_machine_busy_s(), time.process_time(), _server_cpu_s(self.postmaster))
        return self

    def stop(self) -> dict[str, float]:
        wall = max(time.monotonic() - self.began, 1e-6)
        machine, ours, srv = (_machine_busy_s(), time.process_time(), _server_cpu_s(self.postmaster))
        used_ours, used_srv = (ours - self.t[1]) / wall, (srv - self.t[2]) / wall
        others = (machine - self.t[0]) / wall - used_ours - (used_srv if self.postmaster else 0.0)
        return {"ours": used_ours, "server": used_srv, "others": max(0.0, others),
                "load_before": self.load_before, "load_after": os.getloadavg()[0]}


def _load_text(cpu: dict[str, float]) -> str:
    return (f"load {cpu['load_before']:.2f} -> {cpu['load_after']:.2f}; cores used: bench process "
            f"{cpu['ours']:.2f}, server {cpu['server']:.2f}, others {cpu['others']:.2f}")


# --- WAL -------------------------------------------------------------------------------------------


@dataclass
class Wal:
    bytes: int
    records: int
    fpi: int  # full-page images (the first change of a page after a checkpoint)


def wal_point(conn: psycopg.Connection[Any]) -> tuple[str, int, int]:
    row = conn.execute("SELECT pg_current_wal_insert_lsn()::text AS lsn, wal_records, wal_fpi "
                       "FROM pg_stat_wal").fetchone()
    return row["lsn"], int(row["wal_records"]), int(row["wal_fpi"])


def wal_since(conn: psycopg.Connection[Any], before: tuple[str, int, int]) -> Wal:
    now = wal_point(conn)
    diff = conn.execute("SELECT pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)::bigint AS b",
                        (now[0], before[0])).fetchone()["b"]
    return Wal(int(diff), now[1] - before[1], now[2] - before[2])


# --- 1. the ladder ---------------------------------------------------------------------------------


def ladder_point(server: Server, engine: Engine, n: int, postmaster: int | None) -> dict[str, Any]:
    with server.database(f"sat_{n}") as dsn:
        engine.migrate(dsn)
        lead = 6.0 + n / 5000  # as per_second: register, sync, the hint pass
        opens = (db_now(dsn) + timedelta(seconds=lead)).replace(microsecond=0)
        closes = opens + timedelta(seconds=WINDOW_S)
        seed_schedules(dsn, n, EVERY_SECOND, "catch_up", opens - timedelta(seconds=1))
        running = engine.start(dsn, n, EVERY_SECOND, "catch_up", max_seconds=lead + WINDOW_S + 60)
        try:
            with connect(dsn) as conn:
                sleep_until_db(dsn, opens)
                cpu = CpuAccount(postmaster).start()
                wal0 = wal_point(conn)
                sleep_until_db(dsn, closes)
                wal = wal_since(conn, wal0)
                used = cpu.stop()
                committed = conn.execute(
                    "SELECT count(*) AS n FROM awa.jobs WHERE pg_xact_commit_timestamp(xmin) >= %s "
                    "AND pg_xact_commit_timestamp(xmin) < %s" if server.commit_ts else
                    "SELECT count(*) AS n FROM awa.jobs WHERE created_at >= %s AND created_at < %s",
                    (opens, closes)).fetchone()["n"]
            sleep_until_db(dsn, closes + timedelta(seconds=GRACE_S))
        finally:
            running.stop()
        fires = collect_fires(dsn, engine.name, server.commit_ts, opens, closes)
    expected = n * WINDOW_S
    # A fire not in by the end of the grace is later than anything measured: infinitely late.
    late = fires.lateness + [math.inf] * max(0, expected - len(fires.lateness))
    return {
        "n": n, "rate": committed / WINDOW_S, "fired": len(fires.lateness) / expected * 100,
        "p50": _percentile(late, 0.5), "p99": _percentile(late, 0.99), "max": max(late) if late else None,
        "wal_per_fire": wal.bytes / committed if committed else None,
        "fpi_share": wal.fpi / wal.records * 100 if wal.records else None,
        "doubled": fires.doubled, "cpu": used,
    }


def _percentile(values: list[float], q: float) -> float | None:
    """bench.common.percentile, where an infinitely late fire makes the result infinite
    (interpolating towards infinity gives NaN, which compares false with any limit)."""
    value = percentile(values, q)
    return math.inf if value is not None and math.isnan(value) else value


def ladder(server: Server, engine: Engine, sizes: list[int], deadline: float,
           postmaster: int | None) -> list[dict[str, Any]]:
    points = []
    repeats = 0
    for n in sizes:
        if time.monotonic() + LADDER_STEP_MAX_S > deadline:
            break
        point = ladder_point(server, engine, n, postmaster)
        if (point["cpu"]["others"] > BUSY_OTHERS and repeats < REPEATS_MAX
                and time.monotonic() + 2 * LADDER_STEP_MAX_S < deadline):
            repeats += 1
            again = ladder_point(server, engine, n, postmaster)  # another run competed: once more
            again["repeat_of"] = point
            point = again if again["cpu"]["others"] < point["cpu"]["others"] else point | {"repeat_of": again}
        points.append(point)
        if point["p99"] is None or not point["p99"] < P99_LIMIT_S:
            break
    return points


# --- 2. the split of a pass ------------------------------------------------------------------------

PHASES = ("due", "plan", "params", "execute", "fetch", "commit")


def backend_clock(pid: int | None) -> tuple[float, float]:
    """(seconds on a CPU, seconds waiting for one) of a server process, from the kernel's
    scheduler statistics (ns resolution): CPU time per fire does not move with the load,
    and the wait says how much the other processes on the machine cost this one."""
    if pid is None:
        return 0.0, 0.0
    try:
        run_ns, wait_ns, _ = Path(f"/proc/{pid}/schedstat").read_text().split()
    except (OSError, ValueError):
        return 0.0, 0.0
    return int(run_ns) / 1e9, int(wait_ns) / 1e9


@dataclass
class Split:
    n: int
    fires: int = 0
    chunks: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))  # wall
    py_cpu: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))  # this thread
    pg_cpu: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))  # the backend
    pg_wait: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))  # backend runnable
    wal: Wal | None = None
    backend: int | None = None
    last: tuple[float, float, float, float] | None = None  # the clocks at the previous _mark
    evaluate_s: dict[int, float] = field(default_factory=dict)  # evaluator.evaluate wall, by chunk size

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    def per_fire_us(self, clock: dict[str, float]) -> float | None:
        return sum(clock.values()) / self.fires * 1e6 if self.fires else None


def _clocks(split: Split) -> tuple[float, float, float, float]:
    run, wait = backend_clock(split.backend)
    return time.perf_counter(), time.thread_time(), run, wait


def _mark(split: Split, phase: str) -> None:
    """Charge every clock's time since the previous mark to `phase`. One reading per phase
    boundary, never per row: reading the clocks costs ~40 µs (a /proc file), which timed
    around each of 5,000 plan_fires calls would be most of what it measured."""
    now = _clocks(split)
    if split.last is not None:
        wall, py, run, wait = (a - b for a, b in zip(now, split.last, strict=True))
        split.seconds[phase] += wall
        split.py_cpu[phase] += py
        split.pg_cpu[phase] += run
        split.pg_wait[phase] += wait
    split.last = _clocks(split)  # after the reading itself


def _send_timed(conn: psycopg.Connection[Any], plans: list[Any], now: datetime, split: Split) -> None:
    """One chunk, as the evaluator's _run_batch sends it, with execute/fetch/commit apart."""
    from awa_tui.engine.firing import evaluator

    plans = sorted(plans, key=lambda p: p.name)
    params = evaluator._batch_params(plans, now)
    _mark(split, "params")
    tx = conn.transaction()
    tx.__enter__()
    if len(plans) >= evaluator.HASH_JOINS_FROM:
        conn.execute("SET LOCAL enable_nestloop = off")
    cur = conn.execute(evaluator.FIRE_BATCH_SQL, params, prepare=False)
    _mark(split, "execute")
    rows = cur.fetchall()
    jobs = [evaluator.FiredJob(r["id"], r["name"], r["fire_time"], r["outcome"]) for r in rows]
    _mark(split, "fetch")
    tx.__exit__(None, None, None)
    _mark(split, "commit")
    split.fires += sum(1 for j in jobs if j.outcome == "job")
    split.chunks += 1


def timed_pass(conn: psycopg.Connection[Any], now: datetime, n: int) -> Split:
    """The evaluator's pass (evaluate), phase by phase and never overlapped."""
    from awa_tui.engine.firing import evaluator

    split = Split(n, backend=conn.info.backend_pid)
    wal0 = wal_point(conn)
    _mark(split, "due")  # starts the clocks
    rows = evaluator.due_schedules(conn, now)
    _mark(split, "due")
    plans: list[Any] = []
    planned = 0
    for row in rows:
        plan, _hint = evaluator.plan_fires(row, now, evaluator.CATCH_UP_LIMIT)
        if plan is None:
            continue
        plans.append(plan)
        planned += len(plan.fires)
        if planned >= evaluator.FIRE_CHUNK:
            _mark(split, "plan")
            _send_timed(conn, plans, now, split)
            plans, planned = [], 0
    _mark(split, "plan")
    if plans:
        _send_timed(conn, plans, now, split)
    split.wal = wal_since(conn, wal0)
    return split


def split_point(server: Server, engine: Engine, n: int) -> Split:
    """Median phases of SPLIT_PASSES steady passes over N per-second schedules."""
    from awa_tui.engine.firing import evaluator

    with server.database(f"split_{n}") as dsn:
        engine.migrate(dsn)
        t = db_now(dsn).replace(microsecond=0) + timedelta(seconds=2)
        seed_schedules(dsn, n, EVERY_SECOND, "catch_up", t - timedelta(seconds=1))
        with connect(dsn) as conn:
            evaluator.evaluate(conn, t - timedelta(milliseconds=500))  # hints, as a runtime's first pass
            splits = [timed_pass(conn, t + timedelta(seconds=k), n) for k in range(SPLIT_PASSES)]
            # The pass with the median wall time, whole (its phases and clocks belong together).
            out = sorted(splits, key=lambda s: s.total)[len(splits) // 2]
            # The engine's own pass at its chunk size, and at a smaller one: a pass of one
            # chunk never overlaps planning with execution, smaller chunks do.
            k = SPLIT_PASSES
            for chunk in (evaluator.FIRE_CHUNK, SMALL_CHUNK):
                walls = []
                for _ in range(EVALUATE_PASSES):
                    t0 = time.perf_counter()
                    result = evaluator.evaluate(conn, t + timedelta(seconds=k), chunk=chunk)
                    walls.append(time.perf_counter() - t0)
                    k += 1
                    if result.fired != n:
                        raise RuntimeError(f"split {n}: evaluate fired {result.fired}, not {n}")
                out.evaluate_s[chunk] = min(walls)
    return out


# --- 3. the database alone ---------------------------------------------------------------------------

INSERT_ONLY_SQL = """
INSERT INTO awa.jobs (kind, queue, args, state, priority, attempt, max_attempts, metadata, tags, run_at)
SELECT 'tick', 'cronq', '{}'::jsonb, 'available', 2, 0, 25,
       jsonb_build_object('cron_name', f.name, 'cron_fire_time', f.fire_iso), '{}'::text[], now()
FROM unnest(%(fire_names)s::text[], %(fire_iso)s::text[]) AS f(name, fire_iso)
"""

UPDATE_ONLY_SQL = """
UPDATE awa.cron_jobs c
SET last_enqueued_at = p.new_last, next_fire_at = p.next_hint, fires_count = c.fires_count + 1
FROM unnest(%(names)s::text[], %(expected)s::timestamptz[], %(new_last)s::timestamptz[],
            %(next_hint)s::timestamptz[]) AS p(name, expected, new_last, next_hint)
WHERE c.name = p.name AND c.last_enqueued_at IS NOT DISTINCT FROM p.expected
"""


def _precomputed(conn: psycopg.Connection[Any], t: datetime, passes: int,
                 names: set[str] | None = None) -> list[list[tuple[int, dict[str, str | None]]]]:
    """Per pass, per chunk: (plans, parameters) planned by the evaluator ahead of time.

    The due rows are read once; pass k's rows are those with the CAS token and hint a
    steady runtime would have left after pass k-1."""
    from awa_tui.engine.firing import evaluator

    rows = [r for r in evaluator.due_schedules(conn, t) if names is None or r["name"] in names]
    out = []
    for k in range(passes):
        now = t + timedelta(seconds=k)
        plans = []
        for row in rows:
            shifted = row | {"last_enqueued_at": now - timedelta(seconds=1), "next_fire_at": now}
            plan, _ = evaluator.plan_fires(shifted, now, evaluator.CATCH_UP_LIMIT)
            assert plan is not None and len(plan.fires) == 1
            plans.append(plan)
        plans.sort(key=lambda p: p.name)
        step = evaluator.FIRE_CHUNK
        out.append([(len(plans[i:i + step]), evaluator._batch_params(plans[i:i + step], now))
                    for i in range(0, len(plans), step)])
    return out


@dataclass
class Drive:
    wall: float  # s
    commit: float  # s of the wall spent in COMMIT
    rows: int
    pg_cpu: float  # s on a CPU, the backend(s)
    pg_wait: float  # s runnable but waiting for a CPU


def _drive(conn: psycopg.Connection[Any], statement: str,
           chunks: list[list[tuple[int, dict[str, str | None]]]]) -> Drive:
    """Run the statement over every chunk of every pass, one transaction per chunk, back to
    back."""
    rows = 0
    commit = 0.0
    r0, w0 = backend_clock(conn.info.backend_pid)
    t0 = time.perf_counter()
    for chunk_list in chunks:
        for size, params in chunk_list:
            tx = conn.transaction()
            tx.__enter__()
            if size >= 500:  # as the evaluator (HASH_JOINS_FROM)
                conn.execute("SET LOCAL enable_nestloop = off")
            cur = conn.execute(statement, params, prepare=False)
            rows += cur.rowcount if cur.rowcount and cur.rowcount > 0 else 0
            c0 = time.perf_counter()
            tx.__exit__(None, None, None)
            commit += time.perf_counter() - c0
    wall = time.perf_counter() - t0
    r1, w1 = backend_clock(conn.info.backend_pid)
    return Drive(wall, commit, rows, r1 - r0, w1 - w0)


def ceiling(server: Server, engine: Engine, n: int) -> dict[str, dict[str, float | None]]:
    """Fires per second with the engine out of the way, per statement."""
    from awa_tui.engine.firing import evaluator

    out: dict[str, dict[str, float | None]] = {}
    explained: dict[str, float] = {}
    to_explain: list[dict[str, str | None]] = []

    def measure(label: str, body: Callable[[str, psycopg.Connection[Any], datetime], Drive]) -> None:
        with server.database(f"ceil_{label}") as dsn:
            engine.migrate(dsn)
            t = db_now(dsn).replace(microsecond=0) + timedelta(seconds=2)
            seed_schedules(dsn, n, EVERY_SECOND, "catch_up", t - timedelta(seconds=1))
            with connect(dsn) as conn:
                evaluator.evaluate(conn, t - timedelta(milliseconds=500))  # hints
                wal0 = wal_point(conn)
                d = body(dsn, conn, t)
                wal = wal_since(conn, wal0)
                if to_explain:
                    explained.update(explain_parts(conn, to_explain.pop()))
        rows = d.rows or 1
        out[label] = {"rate": d.rows / d.wall if d.wall else None,
                      "commit_share": d.commit / d.wall * 100 if d.wall else None,
                      "wal_per_row": wal.bytes / rows, "pg_us_per_row": d.pg_cpu / rows * 1e6,
                      "pg_wait_share": d.pg_wait / (d.pg_cpu + d.pg_wait) * 100 if d.pg_cpu + d.pg_wait else None,
                      "rows": float(d.rows), "wall": d.wall}

    def fire(dsn: str, conn: psycopg.Connection[Any], t: datetime) -> Drive:
        work = _precomputed(conn, t, CEILING_PASSES + 1)
        to_explain.append(work[-1][0][1])  # the next pass's first chunk, explained after the WAL reading
        return _drive(conn, evaluator.FIRE_BATCH_SQL, work[:-1])

    def insert(dsn: str, conn: psycopg.Connection[Any], t: datetime) -> Drive:
        return _drive(conn, INSERT_ONLY_SQL, _precomputed(conn, t, CEILING_PASSES))

    def update(dsn: str, conn: psycopg.Connection[Any], t: datetime) -> Drive:
        return _drive(conn, UPDATE_ONLY_SQL, _precomputed(conn, t, CEILING_PASSES))

    def fire_two(dsn: str, conn: psycopg.Connection[Any], t: datetime) -> Drive:
        # Two leaders of two shards (names split by parity), each its own connection and
        # thread; psycopg releases the GIL while a statement runs.
        names = [r["name"] for r in conn.execute("SELECT name FROM awa.cron_jobs ORDER BY name").fetchall()]
        halves = [set(names[0::2]), set(names[1::2])]
        work = [_precomputed(conn, t, CEILING_PASSES, h) for h in halves]
        results: list[Drive] = [Drive(0.0, 0.0, 0, 0.0, 0.0)] * 2
        conns = [connect(dsn) for _ in halves]
        try:
            start = threading.Barrier(3)

            def shard(i: int) -> None:
                start.wait(30)
                results[i] = _drive(conns[i], evaluator.FIRE_BATCH_SQL, work[i])

            threads = [threading.Thread(target=shard, args=(i,), daemon=True) for i in range(2)]
            for th in threads:
                th.start()
            start.wait(30)
            t0 = time.perf_counter()
            for th in threads:
                th.join(120)
            wall = time.perf_counter() - t0
        finally:
            for c in conns:
                c.close()
        return Drive(wall, max(r.commit for r in results), sum(r.rows for r in results),
                     sum(r.pg_cpu for r in results), sum(r.pg_wait for r in results))

    measure("fire", fire)
    measure("insert", insert)
    measure("update", update)
    measure("fire_two", fire_two)
    out["explain"] = dict(explained)
    return out


def _self(node: dict[str, Any], key: str) -> float:
    return float(node.get(key) or 0) - sum(float(c.get(key) or 0) for c in node.get("Plans", []))


def explain_parts(conn: psycopg.Connection[Any], params: dict[str, str | None]) -> dict[str, float]:
    """EXPLAIN (ANALYZE, WAL) of one fire chunk: ms and WAL bytes of its three writes (the
    row locks of `locked`, the CAS UPDATE, the job INSERT) and of everything else (unnest
    of the arrays, the joins, the sort, the result). ANALYZE's timing adds its own cost,
    so these are shares, not rates. Rolled back: the chunk's fires stay due."""
    from awa_tui.engine.firing import evaluator

    parts = {"locks_ms": 0.0, "update_ms": 0.0, "insert_ms": 0.0, "locks_wal": 0.0, "update_wal": 0.0,
             "insert_wal": 0.0}

    def walk(node: dict[str, Any]) -> None:
        kind = node.get("Node Type")
        label = ("locks" if kind == "LockRows" else
                 "update" if kind == "ModifyTable" and node.get("Relation Name") == "cron_jobs" else
                 "insert" if kind == "ModifyTable" and node.get("Relation Name") == "jobs" else None)
        if label is not None:
            parts[f"{label}_ms"] += _self(node, "Actual Total Time")
            parts[f"{label}_wal"] += _self(node, "WAL Bytes")
        for child in node.get("Plans", []):
            walk(child)

    try:
        with conn.transaction(force_rollback=True):
            conn.execute("SET LOCAL enable_nestloop = off")
            plan = conn.execute("EXPLAIN (ANALYZE, WAL, FORMAT JSON) " + evaluator.FIRE_BATCH_SQL, params,
                                prepare=False).fetchone()
    except psycopg.Error:
        return {}  # an old server without EXPLAIN's WAL option: the parts are left out
    top = (plan[next(iter(plan))] if isinstance(plan, dict) else plan[0])[0]
    walk(top["Plan"])
    parts["total_ms"] = float(top["Execution Time"])
    parts["total_wal"] = float(top["Plan"].get("WAL Bytes") or 0)
    parts["other_ms"] = parts["total_ms"] - parts["locks_ms"] - parts["update_ms"] - parts["insert_ms"]
    return parts


# --- 3b. a prototype: one leader, several firing connections --------------------------------------------


def _fire_on(conn: psycopg.Connection[Any], params: dict[str, str | None], size: int) -> int:
    from awa_tui.engine.firing import evaluator

    with conn.transaction():
        if size >= evaluator.HASH_JOINS_FROM:
            conn.execute("SET LOCAL enable_nestloop = off")
        rows = conn.execute(evaluator.FIRE_BATCH_SQL, params, prepare=False).fetchall()
    return sum(1 for r in rows if r["outcome"] == "job")


def parallel_pass(conn: psycopg.Connection[Any], senders: list[psycopg.Connection[Any]], now: datetime) -> int:
    """evaluate()'s pass with chunk k sent on connection k mod K, up to K chunks in flight.

    A bench prototype of "several firing connections, same leader" (docs/scaling.md), built
    from the evaluator's pieces; the engine is unchanged. Chunks hold disjoint names and the
    statement locks with SKIP LOCKED, so concurrent chunks never wait on each other's rows."""
    from concurrent.futures import Future, ThreadPoolExecutor

    from awa_tui.engine.firing import evaluator

    fired = 0
    inflight: list[Future[int] | None] = [None] * len(senders)
    with ThreadPoolExecutor(max_workers=len(senders), thread_name_prefix="bench-fire") as pool:
        k = 0

        def send(plans: list[Any]) -> None:
            nonlocal fired, k
            plans = sorted(plans, key=lambda p: p.name)
            params = evaluator._batch_params(plans, now)
            slot = k % len(senders)
            previous = inflight[slot]
            if previous is not None:
                fired += previous.result()  # that connection's last chunk, first
            inflight[slot] = pool.submit(_fire_on, senders[slot], params, len(plans))
            k += 1

        plans: list[Any] = []
        planned = 0
        for row in evaluator.due_schedules(conn, now):
            plan, _hint = evaluator.plan_fires(row, now, evaluator.CATCH_UP_LIMIT)
            if plan is None:
                continue
            plans.append(plan)
            planned += len(plan.fires)
            if planned >= evaluator.FIRE_CHUNK:
                send(plans)
                plans, planned = [], 0
        if plans:
            send(plans)
        fired += sum(f.result() for f in inflight if f is not None)
    return fired


def parallel(server: Server, engine: Engine, n: int) -> dict[int, float]:
    """Wall of the best of PARALLEL_PASSES passes over N per-second schedules: evaluate()
    itself (K=1: one helper thread, one connection) and the prototype with K connections."""
    from awa_tui.engine.firing import evaluator

    out: dict[int, float] = {}
    with server.database(f"par_{n}") as dsn:
        engine.migrate(dsn)
        t = db_now(dsn).replace(microsecond=0) + timedelta(seconds=2)
        seed_schedules(dsn, n, EVERY_SECOND, "catch_up", t - timedelta(seconds=1))
        with connect(dsn) as conn:
            evaluator.evaluate(conn, t - timedelta(milliseconds=500))  # hints
            step = 0
            for k in (1, *PARALLEL_KS):
                senders = [connect(dsn) for _ in range(k)] if k > 1 else []
                try:
                    walls = []
                    for _ in range(PARALLEL_PASSES):
                        now = t + timedelta(seconds=step)
                        step += 1
                        t0 = time.perf_counter()
                        fired = (evaluator.evaluate(conn, now).fired if k == 1
                                 else parallel_pass(conn, senders, now))
                        walls.append(time.perf_counter() - t0)
                        if fired != n:
                            raise RuntimeError(f"parallel {n} x {k}: fired {fired}, not {n}")
                    out[k] = min(walls)
                finally:
                    for c in senders:
                        c.close()
    return out


# --- 4. the burst --------------------------------------------------------------------------------------


def burst(server: Server, engine: Engine, n: int) -> dict[str, Any]:
    """100k per-minute schedules due at one instant: the split, and evaluate() itself."""
    from awa_tui.engine.firing import evaluator

    out: dict[str, Any] = {}
    for how in ("split", "evaluate"):
        with server.database(f"burst_{how}") as dsn:
            engine.migrate(dsn)
            boundary = db_now(dsn).replace(microsecond=0) + timedelta(seconds=3)
            seed_schedules(dsn, n, f"{boundary.second} * * * * *", "coalesce", boundary - timedelta(minutes=1))
            with connect(dsn) as conn:
                evaluator.evaluate(conn, boundary - timedelta(seconds=1))  # hints + ANALYZE
                if how == "split":
                    out["split"] = timed_pass(conn, boundary, n)
                else:
                    wal0 = wal_point(conn)
                    t0 = time.perf_counter()
                    result = evaluator.evaluate(conn, boundary)
                    out["evaluate_s"] = time.perf_counter() - t0
                    out["evaluate_fired"] = result.fired
                    out["evaluate_wal"] = wal_since(conn, wal0)
    return out


# --- the scenario ----------------------------------------------------------------------------------------


def run(server: Server, engine: Engine, sizes: list[int], report: Report, upstream: Engine | None) -> None:
    if engine.name != "ours":
        return
    deadline = time.monotonic() + BUDGET_S
    postmaster = _postmaster_pid(server)
    print(f"saturation: ladder {sizes}, {WINDOW_S} s windows, budget {BUDGET_S:.0f} s", flush=True)

    points = ladder(server, engine, sizes, deadline - 130, postmaster)  # keep ~130 s for parts 2-5
    for p in points:
        size = f"{p['n']:,} x 1/s, {WINDOW_S} s"
        scen = "saturation ladder"
        report.add(Row(scen, size, "fires/s committed", f"{p['n']:,}", round(p["rate"]), "",
                       p["rate"] >= 0.99 * p["n"], lower_is_better=False))
        report.add(Row(scen, size, "lateness p50", "", p["p50"], "s"))
        report.add(Row(scen, size, "lateness p99", f"< {P99_LIMIT_S:g} s", p["p99"], "s",
                       p["p99"] is not None and p["p99"] < P99_LIMIT_S))
        report.add(Row(scen, size, "fired by grace end", "100 %", p["fired"], "%", p["fired"] == 100,
                       lower_is_better=False))
        report.add(Row(scen, size, "doubled", "0", float(p["doubled"]), "", p["doubled"] == 0))
        report.add(Row(scen, size, "WAL bytes per fire", "", _round(p["wal_per_fire"]), ""))
        if p["rate"]:
            report.add(Row(scen, size, "engine process CPU per fire", "", p["cpu"]["ours"] / p["rate"] * 1e6, "µs"))
            report.add(Row(scen, size, "server CPU per fire", "", p["cpu"]["server"] / p["rate"] * 1e6, "µs"))
        report.note(f"saturation ladder {p['n']:,}: {_load_text(p['cpu'])}; full-page images "
                    f"{_fmt(p['fpi_share'], '.0f')} % of WAL records"
                    + (f"; repeated (other run's numbers: p99 {_fmt(p['repeat_of']['p99'], '.2f')} s, "
                       f"{p['repeat_of']['rate']:.0f} fires/s, {_load_text(p['repeat_of']['cpu'])})"
                       if "repeat_of" in p else ""))

    split_sizes = [p["n"] for p in points] or sizes[:1]
    splits = []
    for n in split_sizes:
        if time.monotonic() + 10 + n / 1000 > deadline - 60:  # a split point: ~10 s + 1 s per 1,000
            break
        cpu = CpuAccount(postmaster).start()
        splits.append((split_point(server, engine, n), cpu.stop()))
    for s, cpu in splits:
        _split_rows(report, "pass split", f"{s.n:,} x 1/s", s)
        report.note(f"pass split {s.n:,}: {_load_text(cpu)}")

    ceil: dict[str, dict[str, float | None]] = {}
    if time.monotonic() + 30 < deadline:
        cpu = CpuAccount(postmaster).start()
        ceil = ceiling(server, engine, CEILING_N)
        used = cpu.stop()
        size = f"{CEILING_N:,} x {CEILING_PASSES} passes"
        labels = {"fire": "fire statement, precomputed", "insert": "plain INSERT of the jobs",
                  "update": "CAS UPDATE alone", "fire_two": "fire statement, 2 connections"}
        for key, label in labels.items():
            c = ceil[key]
            report.add(Row("db ceiling", size, f"{label}: rows/s", "", _round(c["rate"]), "", lower_is_better=False))
            report.add(Row("db ceiling", size, f"{label}: commit share", "", c["commit_share"], "%"))
            report.add(Row("db ceiling", size, f"{label}: WAL bytes per row", "", _round(c["wal_per_row"]), ""))
            report.add(Row("db ceiling", size, f"{label}: backend CPU per row", "", c["pg_us_per_row"], "µs"))
        ex = ceil.get("explain") or {}
        if ex:
            rows_ = evaluator_chunk()
            for part in ("locks", "update", "insert", "other"):
                report.add(Row("db ceiling", "EXPLAIN of one chunk", f"{part}: share of execution", "",
                               ex[f"{part}_ms"] / ex["total_ms"] * 100 if ex["total_ms"] else None, "%"))
                if part != "other":
                    report.add(Row("db ceiling", "EXPLAIN of one chunk", f"{part}: WAL bytes per fire", "",
                                   _round(ex[f"{part}_wal"] / rows_), ""))
        report.note(f"db ceiling: {_load_text(used)}")

    par: dict[int, float] = {}
    if time.monotonic() + 20 < deadline:
        cpu = CpuAccount(postmaster).start()
        par = parallel(server, engine, PARALLEL_N)
        used = cpu.stop()
        for k, wall in par.items():
            label = "evaluate() (1 connection)" if k == 1 else f"prototype, {k} firing connections"
            report.add(Row("several connections", f"{PARALLEL_N:,} x 1/s", f"{label}: pass wall", "",
                           wall * 1000, "ms"))
        report.note(f"several connections: {_load_text(used)}")

    b: dict[str, Any] = {}
    if time.monotonic() + 25 < deadline:
        cpu = CpuAccount(postmaster).start()
        b = burst(server, engine, BURST_N)
        used = cpu.stop()
        _split_rows(report, "burst split", f"{BURST_N:,} per-minute", b["split"])
        report.add(Row("burst split", f"{BURST_N:,} per-minute", "evaluate() wall (overlapped)", "",
                       b["evaluate_s"], "s"))
        report.note(f"burst: {_load_text(used)}")
    else:
        report.note("saturation: burst skipped (time budget)")
    report.note(f"saturation lateness = {lateness_basis(server.commit_ts)} - cron_fire_time; a fire not in by "
                f"{GRACE_S:g} s after the window counts as infinitely late")
    print_summary(points, splits, ceil, b, par)


def _split_rows(report: Report, scen: str, size: str, s: Split) -> None:
    for phase in PHASES:
        report.add(Row(scen, size, f"{phase} (of {s.chunks} chunks)" if phase == "execute" else phase, "",
                       s.seconds[phase] * 1000, "ms"))
    report.add(Row(scen, size, "total (sequential)", "", s.total * 1000, "ms"))
    report.add(Row(scen, size, "fires/s (sequential pass)", "", _round(s.fires / s.total if s.total else None), "",
                   lower_is_better=False))
    if s.wal is not None and s.fires:
        report.add(Row(scen, size, "WAL bytes per fire", "", _round(s.wal.bytes / s.fires), ""))
    for chunk, wall in s.evaluate_s.items():
        report.add(Row(scen, size, f"evaluate() wall, chunks of {chunk:,}", "", wall * 1000, "ms"))
    report.add(Row(scen, size, "Python CPU per fire", "", s.per_fire_us(s.py_cpu), "µs"))
    report.add(Row(scen, size, "Postgres backend CPU per fire", "", s.per_fire_us(s.pg_cpu), "µs"))
    report.add(Row(scen, size, "Postgres backend waiting for a CPU", "", _share(s.pg_wait, s.pg_cpu), "%"))


def _share(wait: dict[str, float], run: dict[str, float]) -> float | None:
    busy = sum(wait.values()) + sum(run.values())
    return sum(wait.values()) / busy * 100 if busy else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value)


def _fmt(value: float | None, spec: str) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf"
    return format(value, spec)


def print_summary(points: list[dict[str, Any]], splits: list[tuple[Split, dict[str, float]]],
                  ceil: dict[str, dict[str, float | None]], b: dict[str, Any], par: dict[int, float]) -> None:
    """The scenario's own compact tables (stdout), besides the rows of the run's table."""
    print("\nsaturation ladder (running runtime, catch_up, per-second schedules)")
    print(f"{'N':>7} {'fires/s':>8} {'p50 s':>6} {'p99 s':>6} {'fired%':>7} {'WAL B/fire':>10} "
          f"{'ours':>5} {'srv':>5} {'others':>6} {'load':>11}  (ours/srv/others: cores used)")
    for p in points:
        c = p["cpu"]
        print(f"{p['n']:>7,} {p['rate']:>8.0f} {_fmt(p['p50'], '6.2f'):>6} {_fmt(p['p99'], '6.2f'):>6} "
              f"{p['fired']:>7.1f} {_fmt(p['wal_per_fire'], '10.0f'):>10} {c['ours']:>5.2f} {c['server']:>5.2f} "
              f"{c['others']:>6.2f} {c['load_before']:>5.2f}>{c['load_after']:<5.2f}")
    rows = [(f"{s.n:,} x 1/s", s, cpu) for s, cpu in splits]
    if b.get("split") is not None:
        rows.append((f"{BURST_N:,} burst", b["split"], None))
    if rows:
        print("\npass split, ms (sequential driver, the median of "
              f"{SPLIT_PASSES} steady passes; burst: one pass): wall, this thread's CPU, the backend's CPU")
        print(f"{'pass':>14} {'clock':>5} " + " ".join(f"{p:>8}" for p in PHASES)
              + f" {'total':>8} {'µs/fire':>8} {'fires/s':>8} {'WAL B/f':>8}")
        for label, s, _cpu in rows:
            wal = s.wal.bytes / s.fires if s.wal is not None and s.fires else None
            for clock, values in (("wall", s.seconds), ("py", s.py_cpu), ("pg", s.pg_cpu)):
                total = sum(values.values())
                tail = f" {s.fires / total if total else 0:>8.0f} {_fmt(wal, '8.0f'):>8}" if clock == "wall" else ""
                print(f"{label if clock == 'wall' else '':>14} {clock:>5} "
                      + " ".join(f"{values[p] * 1000:>8.0f}" for p in PHASES)
                      + f" {total * 1000:>8.0f} {_fmt(s.per_fire_us(values), '8.1f'):>8}" + tail)
    for label, s, _cpu in rows:
        if s.evaluate_s:
            print(f"{label:>14} via evaluator.evaluate: "
                  + ", ".join(f"{w * 1000:.0f} ms in chunks of {c:,}" for c, w in s.evaluate_s.items()))
    if b.get("evaluate_s") is not None:
        print(f"burst via evaluator.evaluate (planning overlapped with execution): {b['evaluate_s']:.2f} s, "
              f"{b['evaluate_fired']:,} fired")
    if ceil:
        print(f"\ndatabase ceiling ({CEILING_N:,} schedules x {CEILING_PASSES} passes, chunks of 5,000, "
              "parameters precomputed)")
        print(f"{'statement':>10} {'rows/s':>8} {'commit%':>8} {'WAL B/row':>10} {'pg µs/row':>10} {'pg wait%':>9}")
        for key, c in ceil.items():
            if key == "explain":
                continue
            print(f"{key:>10} {_fmt(c['rate'], '8.0f'):>8} {_fmt(c['commit_share'], '8.1f'):>8} "
                  f"{_fmt(c['wal_per_row'], '10.0f'):>10} {_fmt(c['pg_us_per_row'], '10.1f'):>10} "
                  f"{_fmt(c['pg_wait_share'], '9.0f'):>9}")
    if par:
        print(f"\none leader, several firing connections ({PARALLEL_N:,} x 1/s, best of {PARALLEL_PASSES} passes): "
              + ", ".join(f"{'evaluate() ' if k == 1 else ''}{k} conn. {w * 1000:.0f} ms "
                          f"({PARALLEL_N / w:,.0f} fires/s)" for k, w in par.items()))
    ex = ceil.get("explain") or {}
    if ex:
        print(f"\nEXPLAIN (ANALYZE, WAL) of one {evaluator_chunk():,}-fire chunk: {ex['total_ms']:.0f} ms, "
              f"{ex['total_wal'] / evaluator_chunk():.0f} WAL bytes per fire")
        for part, what in (("locks", "row locks (locked CTE)"), ("update", "CAS UPDATE of cron_jobs"),
                           ("insert", "INSERT of the jobs"), ("other", "unnest, joins, sort, result")):
            wal = f", {ex[part + '_wal'] / evaluator_chunk():.0f} WAL B/fire" if part != "other" else ""
            print(f"{what:>32}: {ex[part + '_ms']:>6.0f} ms ({ex[part + '_ms'] / ex['total_ms'] * 100:.0f} %){wal}")
    print(flush=True)


def evaluator_chunk() -> int:
    from awa_tui.engine.firing import evaluator

    return evaluator.FIRE_CHUNK
