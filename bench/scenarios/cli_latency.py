"""The operator's latency: common CLI commands, wall time from process start to exit.

An operator at a prompt feels the whole process: interpreter start, imports, connecting,
the query and the output. Each command runs as a fresh `python -m awa_tui ...` subprocess
against N seeded schedules (with an audit trail and a runtime snapshot to read), output
discarded; the median of RUNS runs is held to the target, the worst reported beside it.
`cron pause` alternates with `cron resume` so every run changes the row (and writes audit).
The common commands are held to 300 ms; those that read many schedules (`cron list` with a
filter or its first page, `check`) to 1 s. Schedules are seeded by one INSERT ... SELECT
generate_series (seven-digit names, so 1,000,000 fits), never through the Client.

awa-tui's modules are compiled to bytecode first, as an installed package has them
(bench/common.py compile_bytecode).

Beside them, the floor no change inside awa-tui can go under: an interpreter that imports
the two libraries every command needs (psycopg, typer) and exits, timed the same way. A
command's time minus the floor is awa-tui's own (its modules, connecting, the query, the
output); on a 2-core VM the floor alone moves by ~1.5x from one minute to the next.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psycopg

from bench.common import BENCH_DIR, BENCH_KIND, BENCH_QUEUE, Report, Row, Server, compile_bytecode, connect, median
from bench.engines import Ours

TARGET_MS = 300.0  # the common commands
LIST_TARGET_MS = 1000.0  # the commands that read many schedules
RUNS = 7
TIMEOUT_S = 120
FLOOR = ["-c", "import psycopg, typer"]  # what every command imports before any of awa-tui's work

SEED_SQL = """
INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, args, missed_fire_policy)
SELECT 'cli-' || lpad(i::text, 7, '0'), '0 3 * * *', 'UTC', %(kind)s, %(queue)s, '{}'::jsonb, 'coalesce'
FROM generate_series(1, %(n)s) AS i
"""


def _name(i: int) -> str:
    return f"cli-{i:07d}"


def _commands(n: int) -> list[tuple[str, list[str], float | None]]:
    """Label, arguments and target of each timed command (the floor has no target)."""
    middle = _name(n // 2 + 1)
    return [
        ("floor: python -c 'import psycopg, typer'", FLOOR, None),
        ("--help (imports only)", ["--help"], TARGET_MS),
        ("cron show", ["cron", "show", middle], TARGET_MS),
        ("cron pause/resume", ["cron", "pause", middle], TARGET_MS),
        ("audit", ["audit"], TARGET_MS),
        ("runtime list", ["runtime", "list"], TARGET_MS),
        ("cron list --filter", ["cron", "list", "--filter", middle], LIST_TARGET_MS),
        ("cron list (first page)", ["cron", "list"], LIST_TARGET_MS),
        ("check", ["check"], LIST_TARGET_MS),
    ]


def _seed(dsn: str, n: int) -> str | None:
    """N schedules, vacuumed and analysed, then a CHECKPOINT: the seed's WAL (~0.5 GB at 1M)
    would otherwise start a checkpoint whose writes share the 2 cores with the commands
    timed next (they are the bench's own, not the operator's). Returns why the checkpoint
    could not be taken (a server where the bench's role may not), or None."""
    with connect(dsn) as conn:
        conn.execute(SEED_SQL, {"kind": BENCH_KIND, "queue": BENCH_QUEUE, "n": n})
        conn.execute("VACUUM ANALYZE awa.cron_jobs")
        try:
            conn.execute("CHECKPOINT")
        except psycopg.errors.InsufficientPrivilege as exc:
            return f"no CHECKPOINT after the seed ({exc.diag.message_primary})"
    return None



def _time_once(dsn: str, args: list[str]) -> float:
    env = {**os.environ, "AWA_DATABASE_URL": dsn}
    argv = [sys.executable, *args] if args == FLOOR else [sys.executable, "-m", "awa_tui", *args]
    began = time.perf_counter()
    proc = subprocess.run(argv, cwd=BENCH_DIR.parent, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=TIMEOUT_S)
    took = time.perf_counter() - began
    if proc.returncode != 0 and not (args[0] == "check" and proc.returncode in (1, 2)):  # a verdict (S43)
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
    compile_bytecode()
    for n in sizes:
        size = f"{n:,} schedules"
        with server.database("cli") as dsn:
            Ours().migrate(dsn)
            refused = _seed(dsn, n)
            if refused:
                report.note(f"cli_latency {size}: {refused}")
            _seed_runtime(dsn)
            for label, args, target in _commands(n):
                walls: list[float] = []
                for i in range(RUNS):
                    if args[:2] == ["cron", "pause"] and i % 2:
                        walls.append(_time_once(dsn, ["cron", "resume", *args[2:]]))
                    else:
                        walls.append(_time_once(dsn, args))
                ms = [w * 1000 for w in walls]
                mid = median(ms)
                if target is None:  # the floor: a reading, not a target
                    report.add(Row("cli_latency", size, f"{label} (median of {RUNS})", "", mid, "ms"))
                else:
                    report.add(Row("cli_latency", size, f"{label} (median of {RUNS})", f"< {target:g} ms", mid, "ms",
                                   mid is not None and mid < target))
                report.add(Row("cli_latency", size, f"{label} (worst)", "", max(ms), "ms"))
    report.note("cli_latency: each command a fresh `python -m awa_tui` subprocess (interpreter start, imports, "
                "connect, query, output to /dev/null), awa_tui compiled to bytecode first as an installed package is; "
                "wall from spawn to exit; `check` exits 2 here (no leader), "
                "a verdict, not an error")
