"""Shared plumbing for the benchmarks: the server, fresh databases, seeding, measurement.

Measurement rules (the same for both engines):
- Lateness of a fire = commit time of the transaction that inserted its job minus the
  fire instant stamped in the job (`metadata.cron_fire_time`). Commit times come from
  `pg_xact_commit_timestamp(xmin)`, so the bench server runs with
  `track_commit_timestamp=on` (the only non-default setting besides pg_stat_statements;
  fsync and synchronous_commit stay at their defaults). On an external server without it,
  the job's own `created_at` is used instead and the result says so (a lower bound for
  awa-tui, whose `created_at` is the transaction start).
- Database time comes from pg_stat_statements (exec time of every statement in the
  benchmark database), CPU time from the process or thread clocks.
"""

from __future__ import annotations

import compileall
import os
import platform
import statistics
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
# AWA_BENCH_PORT lets two checkouts on one machine run their benches side by side.
BENCH_PORT = int(os.environ.get("AWA_BENCH_PORT", "55432"))
# Measurement aids only: durability settings stay at the server defaults.
SERVER_FLAGS = ("-c track_commit_timestamp=on", "-c shared_preload_libraries=pg_stat_statements",
                "-c max_connections=200")

# Definition columns shared by both engines' awa.cron_jobs; every bench schedule uses these.
BENCH_KIND = "tick"
BENCH_QUEUE = "cronq"


@dataclass
class Row:
    """One line of the results table."""

    scenario: str
    size: str
    metric: str
    target: str
    ours: float | None
    unit: str
    passed: bool | None = None
    upstream: float | None = None
    note: str = ""
    lower_is_better: bool = True  # costs and lateness; False for "fired %", "landed %"

    @property
    def ratio(self) -> float | None:
        """How many times better awa-tui is than awa-pg on this metric (> 1: better)."""
        if self.ours is None or self.upstream is None:
            return None
        better, worse = (self.upstream, self.ours) if self.lower_is_better else (self.ours, self.upstream)
        if worse <= 0:
            return None
        return better / worse


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        return row

    def note(self, text: str) -> None:
        self.notes.append(text)

    def as_json(self) -> list[dict[str, Any]]:
        return [asdict(r) | {"ratio": r.ratio} for r in self.rows]


# --- server and databases -------------------------------------------------------------------


def with_db(dsn: str, dbname: str) -> str:
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


def as_url(dsn: str) -> str:
    """A postgres:// URL for the upstream engine's Rust driver (it takes no key=value form).

    The embedded server keeps its TCP password in a pgpass file named by `passfile=`, which
    that driver does not read: the password is taken from the file into the URL here.
    """
    params = conninfo_to_dict(dsn)
    host = str(params.get("host", "127.0.0.1"))
    user = str(params.get("user", "postgres"))
    password = params.get("password") or _pgpass_password(params.get("passfile"))
    auth = f"{quote(user, safe='')}:{quote(str(password), safe='')}@" if password else f"{quote(user, safe='')}@"
    return f"postgres://{auth}{host}:{params.get('port', 5432)}/{quote(str(params['dbname']), safe='')}"


def _pgpass_password(passfile: object) -> str | None:
    """The password of the first line of a pgpass file (the embedded server writes one line)."""
    if not passfile:
        return None
    line = Path(str(passfile)).read_text().splitlines()[0]
    return line.split(":", 4)[4]


@dataclass
class Server:
    admin_dsn: str
    started_here: bool
    home: Path | None
    commit_ts: bool
    stat_statements: bool
    version: str = ""

    def create_db(self, label: str) -> str:
        name = f"bench_{label}_{uuid.uuid4().hex[:6]}"
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        dsn = with_db(self.admin_dsn, name)
        if self.stat_statements:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        return dsn

    def drop_db(self, dsn: str) -> None:
        name = conninfo_to_dict(dsn)["dbname"]
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    @contextmanager
    def database(self, label: str) -> Iterator[str]:
        dsn = self.create_db(label)
        try:
            yield dsn
        finally:
            self.drop_db(dsn)

    def stop(self) -> None:
        if self.started_here and self.home is not None:
            from awa_tui import embedded

            embedded.stop(self.home)


def start_server() -> Server:
    """AWA_BENCH_DATABASE_URL, or an embedded PG 18 under bench/.pg with default durability."""
    external = os.environ.get("AWA_BENCH_DATABASE_URL")
    if external:
        admin, home, started = external, None, False
    else:
        from awa_tui import embedded

        home = BENCH_DIR / ".pg"
        server = embedded.ensure_running(home, port=BENCH_PORT, tcp=True, server_flags=SERVER_FLAGS,
                                         dbname="postgres")
        admin, started = server.dsn("postgres"), True
    with psycopg.connect(admin, autocommit=True) as conn:
        commit_ts = conn.execute("SHOW track_commit_timestamp").fetchone()[0] == "on"
        preload = conn.execute("SHOW shared_preload_libraries").fetchone()[0]
        version = conn.execute("SHOW server_version").fetchone()[0]
    return Server(admin, started, home, commit_ts, "pg_stat_statements" in preload, version)


def compile_bytecode() -> None:
    """Bytecode beside awa_tui's sources (__pycache__, git-ignored), as an installed package
    has it (pip writes it). A checkout run with PYTHONDONTWRITEBYTECODE (this machine's
    sessions) would otherwise compile every module it imports from source in every process
    a scenario spawns (the CLI's ~90: ~70 ms; the console's more), which no operator pays.
    A module edited afterwards is compiled from source again, as Python always does."""
    compileall.compile_dir(BENCH_DIR.parent / "awa_tui", quiet=1)


def connect(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True, row_factory=dict_row)  # type: ignore[arg-type]


def db_now(dsn: str) -> datetime:
    with connect(dsn) as conn:
        return conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]


# --- the machine ---------------------------------------------------------------------------------


def _proc_field(path: str, key: str) -> str | None:
    """The value of the first `key: value` line of a /proc file, or None (not Linux)."""
    try:
        for line in Path(path).read_text().splitlines():
            name, _, value = line.partition(":")
            if name.strip() == key:
                return value.strip()
    except OSError:
        return None
    return None


def _git(*args: str) -> str | None:
    try:
        proc = subprocess.run(["git", *args], cwd=BENCH_DIR, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def machine_info(server: Server) -> dict[str, Any]:
    """What the numbers were measured on: a reference result is meaningless without it."""
    mem_kb = _proc_field("/proc/meminfo", "MemTotal")
    # The reference files themselves do not make a checkout dirty: a --scale reference run
    # right after a --full one (not yet committed) measures the same code.
    status = _git("status", "--porcelain", "--untracked-files=no", "--", ":(top)",
                  *(f":(top,exclude){p}" for p in ("bench/results", "bench/RESULTS.md", "bench/RESULTS-scale.md")))
    return {
        "nproc": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "memory_gib": round(int(mem_kb.split()[0]) / 1024 / 1024, 1) if mem_kb else None,
        "cpu_model": _proc_field("/proc/cpuinfo", "model name") or platform.processor() or None,
        "kernel": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "postgres": server.version,
        "server": "embedded under bench/.pg" if server.started_here else "AWA_BENCH_DATABASE_URL",
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": None if status is None else bool(status),
    }


class LoadSampler:
    """The 1/5/15-minute load averages every `every_s` seconds while the run lasts.

    Other work on the machine moves the numbers by 2-4x on 2 cores, so a result records
    how busy the machine was during the run, not only at its end."""

    def __init__(self, every_s: float = 5.0) -> None:
        self.every_s = every_s
        self.samples: list[tuple[float, float, float, float]] = []
        self._stop = threading.Event()
        self._began = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="bench-load", daemon=True)

    def start(self) -> LoadSampler:
        self._thread.start()
        return self

    def _sample(self) -> None:
        one, five, fifteen = (round(x, 2) for x in os.getloadavg())
        self.samples.append((round(time.monotonic() - self._began, 1), one, five, fifteen))

    def _run(self) -> None:
        self._sample()
        while not self._stop.wait(self.every_s):
            self._sample()

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join(self.every_s + 1)
        self._sample()
        ones = [s[1] for s in self.samples]
        return {
            "every_s": self.every_s,
            "start_1min": ones[0],
            "end_1min": ones[-1],
            "max_1min": max(ones),
            "mean_1min": round(statistics.fmean(ones), 2),
            "samples": [list(s) for s in self.samples],  # [seconds, 1 min, 5 min, 15 min]
        }


# --- seeding -------------------------------------------------------------------------------------

SEED_SQL = """
INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, args, missed_fire_policy, last_enqueued_at)
SELECT 'bench-' || lpad(i::text, greatest(6, length(i::text)), '0'), %(expr)s, 'UTC', %(kind)s, %(queue)s, '{}'::jsonb,
       %(policy)s, %(last)s
FROM generate_series(1, %(n)s) AS i
"""


def seed_schedules(dsn: str, n: int, expr: str, policy: str, last: datetime | None) -> None:
    """N identical-definition schedules, as if they had been running (last fire = `last`).

    Named as bench_names() names them (`bench-%06d`: seven digits from 1,000,000 on, where a
    plain lpad to 6 would cut the name and collide with bench-100000).

    Both engines share these awa.cron_jobs columns, so both start from the same state."""
    with connect(dsn) as conn:
        conn.execute(SEED_SQL, {"expr": expr, "kind": BENCH_KIND, "queue": BENCH_QUEUE, "policy": policy,
                                "last": last, "n": n})
        conn.execute("ANALYZE awa.cron_jobs")


def bench_names(n: int) -> list[str]:
    return [f"bench-{i:06d}" for i in range(1, n + 1)]


# --- measurement ---------------------------------------------------------------------------------

# Per engine: where fired jobs live and how to read (name, fire instant, insert time).
OURS_JOBS_SQL = """
SELECT metadata ->> 'cron_name' AS name, (metadata ->> 'cron_fire_time')::timestamptz AS fire,
       {inserted} AS inserted
FROM awa.jobs WHERE metadata ? 'cron_name'
"""
UPSTREAM_JOBS_SQL = """
SELECT payload -> 'metadata' ->> 'cron_name' AS name,
       (payload -> 'metadata' ->> 'cron_fire_time')::timestamptz AS fire, {inserted} AS inserted
FROM awa.ready_entries WHERE payload -> 'metadata' ? 'cron_name'
UNION ALL
SELECT metadata ->> 'cron_name', (metadata ->> 'cron_fire_time')::timestamptz, {inserted}
FROM awa.jobs_hot WHERE metadata ? 'cron_name'
"""


def jobs_sql(engine: str, commit_ts: bool) -> str:
    inserted = "pg_xact_commit_timestamp(xmin)" if commit_ts else "created_at"
    template = OURS_JOBS_SQL if engine == "ours" else UPSTREAM_JOBS_SQL
    return template.format(inserted=inserted)


def lateness_basis(commit_ts: bool) -> str:
    return "commit time" if commit_ts else "created_at (commit timestamps off: lower bound)"


@dataclass
class Fires:
    """Fired jobs of a window: lateness (s) per (name, fire) and the duplicates."""

    lateness: list[float]
    doubled: int
    outside: int  # fires stamped outside the window (startup fires, stray boundaries)


def collect_fires(dsn: str, engine: str, commit_ts: bool, start: datetime, end: datetime) -> Fires:
    """Fires stamped in [start, end)."""
    query = f"""
    WITH j AS ({jobs_sql(engine, commit_ts)})
    SELECT extract(epoch FROM min(inserted) - fire)::float8 AS late, count(*) AS copies,
           (fire >= %(start)s AND fire < %(end)s) AS inside
    FROM j GROUP BY name, fire
    """
    with connect(dsn) as conn:
        rows = conn.execute(query, {"start": start, "end": end}).fetchall()
    inside = [r for r in rows if r["inside"]]
    return Fires(
        lateness=[r["late"] for r in inside],
        doubled=sum(r["copies"] - 1 for r in rows),
        outside=sum(1 for r in rows if not r["inside"]),
    )


def count_fires(dsn: str, engine: str, at: datetime | None = None) -> int:
    """Jobs fired so far (stamped `at` when given); cheap enough to poll at 100k."""
    if engine == "ours":
        query = "SELECT count(*) AS n FROM awa.jobs WHERE metadata ? 'cron_name'"
    else:
        query = "SELECT count(*) AS n FROM awa.jobs WHERE metadata ? 'cron_name'"
    params: dict[str, Any] = {}
    if at is not None:
        query += " AND (metadata ->> 'cron_fire_time')::timestamptz = %(at)s"
        params["at"] = at
    with connect(dsn) as conn:
        return conn.execute(query, params).fetchone()["n"]


def fmt(value: float | None, unit: str) -> str:
    """A table cell: three significant digits, thousands separated from 100 up."""
    if value is None:
        return "-"
    if unit == "%":
        return f"{value:.1f} %"
    if unit in ("s", "ms", "µs", "MB", "kB"):
        return f"{value:.3g} {unit}" if value < 100 else f"{value:,.0f} {unit}"
    return f"{value:g}"


def percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    k = (len(ordered) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def stat_statements_ms(dsn: str) -> float:
    """Total statement exec time so far in this database (pg_stat_statements), in ms."""
    with connect(dsn) as conn:
        row = conn.execute(
            """SELECT coalesce(sum(total_exec_time), 0)::float8 AS ms FROM pg_stat_statements
               WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                 AND query NOT LIKE '%%pg_stat_statements%%'"""
        ).fetchone()
        return row["ms"]


def statement_stats(dsn: str, like: str) -> tuple[int, float]:
    """Calls and total exec time (ms) so far of this database's statements whose text is
    LIKE `like` (pg_stat_statements): one statement's cost, where stat_statements_ms sums all."""
    with connect(dsn) as conn:
        row = conn.execute(
            """SELECT coalesce(sum(calls), 0)::bigint AS calls, coalesce(sum(total_exec_time), 0)::float8 AS ms
               FROM pg_stat_statements
               WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                 AND query LIKE %s AND query NOT LIKE '%%pg_stat_statements%%'""", (like,)
        ).fetchone()
    assert row is not None
    return int(row["calls"]), float(row["ms"])


def reset_stat_statements(dsn: str) -> None:
    with connect(dsn) as conn:
        conn.execute("SELECT pg_stat_statements_reset()")


def wait_until(predicate: Callable[[], Any], deadline: float, interval: float = 0.25) -> bool:
    """Poll until `predicate()` is truthy or the monotonic `deadline` passes."""
    pause = threading.Event()
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        pause.wait(interval)


def sleep_until_db(dsn: str, instant: datetime) -> None:
    """Sleep until the database clock reaches `instant`."""
    remaining = (instant - db_now(dsn)).total_seconds()
    if remaining > 0:
        threading.Event().wait(remaining)


def next_whole_second(now: datetime, lead: float) -> datetime:
    """The first whole second at least `lead` seconds after `now`."""
    t = now + timedelta(seconds=lead)
    return t.replace(microsecond=0) + timedelta(seconds=1)


# --- processes and scale curves -----------------------------------------------------------------


def proc_memory_mb(pid: int) -> dict[str, float | None]:
    """A process's resident memory now (VmRSS) and at its peak so far (VmHWM), in MB."""
    out: dict[str, float | None] = {"rss": None, "peak": None}
    for key, name in (("VmRSS", "rss"), ("VmHWM", "peak")):
        value = _proc_field(f"/proc/{pid}/status", key)
        if value is not None:
            out[name] = int(value.split()[0]) / 1024
    return out


CURVE_SIZES = (10000, 100000, 1000000)


def size_of(label: str) -> tuple[int | None, str]:
    """A row's size label split into its leading count and the rest: "100,000 idle" ->
    (100000, "idle"); (None, label) when it does not start with a count."""
    head, _, rest = label.partition(" ")
    digits = head.replace(",", "")
    return (int(digits), rest) if digits.isdigit() else (None, label)


def curve(rows: Sequence[Row], sizes: Sequence[int] = CURVE_SIZES) -> list[dict[str, Any]]:
    """Each figure measured at more than one of `sizes`, with its value at every size side
    by side (the growth from 10k to 1M in one line), in the order first measured."""
    lines: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in rows:
        n, rest = size_of(r.size)
        if n not in sizes:
            continue
        line = lines.setdefault((r.scenario, rest, r.metric), {
            "scenario": r.scenario, "size": rest, "metric": r.metric, "unit": r.unit, "values": {}})
        line["values"][str(n)] = r.ours
    return [line for line in lines.values() if len(line["values"]) > 1]
