"""The operator's latency: common CLI commands, wall time from process start to exit.

An operator at a prompt feels the whole process: interpreter start, imports, connecting,
the query and the output. Each command runs as a fresh `python -m awa_tui ...` subprocess
against N seeded schedules (with an audit trail and a runtime snapshot to read), output
discarded; the median of RUNS runs is held to the target, the worst reported beside it.
`cron pause` alternates with `cron resume` so every run changes the row (and writes audit).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from bench.common import BENCH_DIR, Report, Row, Server, bench_names, connect, median, seed_schedules
from bench.engines import Ours

TARGET_MS = 300.0
RUNS = 7
TIMEOUT_S = 120


def _commands(n: int) -> list[tuple[str, list[str]]]:
    middle = bench_names(n)[n // 2]
    return [
        ("--help (imports only)", ["--help"]),
        ("cron show", ["cron", "show", middle]),
        ("cron list --filter", ["cron", "list", "--filter", middle]),
        ("cron pause/resume", ["cron", "pause", middle]),
        ("audit", ["audit"]),
        ("runtime list", ["runtime", "list"]),
    ]


def _time_once(dsn: str, args: list[str]) -> float:
    env = {**os.environ, "AWA_DATABASE_URL": dsn}
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "awa_tui", *args], cwd=BENCH_DIR.parent, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=TIMEOUT_S)
    took = time.perf_counter() - began
    if proc.returncode != 0:
        raise RuntimeError(f"awa-tui {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()[-200:]}")
    return took


def _seed_runtime(dsn: str) -> None:
    """One runtime snapshot for `runtime list` to read: a real runtime's first report."""
    from awa_tui import Client

    client = Client(dsn, application_name="bench-cli", operator="bench")
    try:
        client.snapshot()
    finally:
        client.close()


def run(server: Server, sizes: list[int], report: Report) -> None:
    for n in sizes:
        size = f"{n:,} schedules"
        with server.database("cli") as dsn:
            Ours().migrate(dsn)
            seed_schedules(dsn, n, "0 3 * * *", "coalesce", None)
            _seed_runtime(dsn)
            with connect(dsn) as conn:
                conn.execute("VACUUM ANALYZE awa.cron_jobs")
            for label, args in _commands(n):
                walls: list[float] = []
                for i in range(RUNS):
                    if args[:2] == ["cron", "pause"] and i % 2:
                        walls.append(_time_once(dsn, ["cron", "resume", *args[2:]]))
                    else:
                        walls.append(_time_once(dsn, args))
                ms = [w * 1000 for w in walls]
                mid = median(ms)
                report.add(Row("cli_latency", size, f"{label} (median of {RUNS})", f"< {TARGET_MS:g} ms", mid, "ms",
                               mid is not None and mid < TARGET_MS))
                report.add(Row("cli_latency", size, f"{label} (worst)", "", max(ms), "ms"))
    report.note("cli_latency: each command a fresh `python -m awa_tui` subprocess (interpreter start, imports, "
                "connect, query, output to /dev/null); wall from spawn to exit")
