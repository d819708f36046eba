"""Worker throughput: no-op jobs per second one process drains, at concurrency 1, 10 and 50,
awa-tui's worker side by side with Procrastinate's on the same machine and server.

    AWA_BENCH_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python -m bench.worker_throughput [--jobs 5000] [--concurrency 1 10 50]

Each run gets a fresh database: N jobs waiting first, then one worker drains them; the time
is from the worker's start to the last job completed. Ours: `Client(concurrency=C)` with an
async no-op handler, its runtime started without leading. Procrastinate: an async no-op
task, `run_worker_async(concurrency=C, wait=False)`, in bench/.venv-procrastinate (made here,
the package installed from bench/requirements-procrastinate.txt; never beside the product).
Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import threading
import time
import uuid
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from bench.venvs import BENCH, procrastinate_venv

if TYPE_CHECKING:
    from awa_tui import Client


def scratch(admin: str) -> tuple[str, str]:
    name = f"awa_bench_w_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return name, make_conninfo("", **{**conninfo_to_dict(admin), "dbname": name})


def drop(admin: str, name: str) -> None:
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def ours(dsn: str, n: int, concurrency: int) -> float:
    from awa_tui import Client
    from awa_tui.engine.migrations import migrate

    migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO awa.jobs (kind, args) SELECT 'noop', jsonb_build_object('i', i) "
                     "FROM generate_series(1, %s) AS i", (n,))
        conn.execute("ANALYZE awa.jobs")
    return drain_seconds(Client(dsn, operator="bench", concurrency=concurrency), n)


def drain_seconds(client: Client, n: int, *, every: int = 0, marks: list[float] | None = None,
                  timeout_s: float = 600.0) -> float:
    """Seconds for `client`'s worker (not leading) to run `n` waiting no-op jobs of kind
    `noop`, counted as each round's outcomes are written; the client is closed after. With
    `every` and `marks`, the seconds since the worker's start are appended to `marks` when the
    first job is done (the start-up is behind) and each time another `every` jobs are done
    (the rate per slice of a long drain, bench/scenarios/drain.py)."""
    from awa_tui import Job

    done = threading.Event()
    count = {"n": 0}
    began = {"at": time.perf_counter()}
    lock = threading.Lock()

    async def noop(job: Job) -> None:
        return None

    def counted(job: Job, state: str) -> None:
        with lock:
            count["n"] += 1
            if marks is not None and every and (count["n"] == 1 or count["n"] % every == 0):
                marks.append(time.perf_counter() - began["at"])
            if count["n"] >= n:
                done.set()

    client.register_handler("noop", noop)
    client.runtime.on_job.append(counted)  # told after each round's outcomes are written
    try:
        began["at"] = time.perf_counter()
        client.start(lead=False)
        if not done.wait(timeout_s):
            raise RuntimeError(f"{count['n']} of {n} jobs done after {timeout_s:g} s")
        return time.perf_counter() - began["at"]
    finally:
        client.close()


def procrastinate(dsn: str, n: int, concurrency: int) -> tuple[float, str]:
    out = subprocess.run([str(procrastinate_venv()), str(BENCH / "procrastinate_side.py"), dsn, str(n),
                          str(concurrency)], capture_output=True, text=True, timeout=900, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return float(result["seconds"]), str(result["version"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 10, 50])
    args = parser.parse_args()
    admin = os.environ.get("AWA_BENCH_DATABASE_URL")
    if not admin:
        raise SystemExit("set AWA_BENCH_DATABASE_URL to a server this bench may create databases on")
    rows = []
    version = "?"
    for concurrency in args.concurrency:
        row: dict[str, float | int | str] = {"concurrency": concurrency, "jobs": args.jobs}
        for engine in ("ours", "procrastinate"):
            name, dsn = scratch(admin)
            try:
                if engine == "ours":
                    seconds = ours(dsn, args.jobs, concurrency)
                else:
                    seconds, version = procrastinate(dsn, args.jobs, concurrency)
            finally:
                drop(admin, name)
            row[f"{engine}_jobs_per_s"] = round(args.jobs / seconds, 1)
        row["ratio"] = round(float(row["ours_jobs_per_s"]) / float(row["procrastinate_jobs_per_s"]), 2)
        rows.append(row)
        print(f"concurrency {concurrency:>3}: awa-tui {row['ours_jobs_per_s']:>8} jobs/s   "
              f"procrastinate {version} {row['procrastinate_jobs_per_s']:>8} jobs/s   x{row['ratio']}", flush=True)
    print(json.dumps({"bench": "worker_throughput", "procrastinate": version, "rows": rows}))


if __name__ == "__main__":
    main()
