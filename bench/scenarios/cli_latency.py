"""The operator's latency: common CLI commands, wall time from process start to exit.

An operator at a prompt feels the whole process: interpreter start, imports, connecting,
the query and the output. Each command runs as a fresh `python -m awa_tui ...` subprocess
against N seeded schedules (with an audit trail and a runtime snapshot to read), output
discarded, RUNS times; `cron pause` alternates with `cron resume` so every run changes the
row (and writes audit). Schedules are seeded by one INSERT ... SELECT generate_series
(seven-digit names, so 1,000,000 fits), never through the Client.

awa-tui's modules are compiled to bytecode first, as an installed package has them
(bench/common.py compile_bytecode).

The floor: an interpreter that imports the two libraries every command needs (psycopg,
typer) and exits, timed the same way. A command that connects cannot get under it by
importing less (psycopg is most of it: docs/scaling.md), and on a 2-core VM it moves by
~1.5x from one minute to the next, so an absolute target passes or fails with the
machine's mood. A command is therefore judged on its overhead, awa-tui's own time (its
modules, connecting, the query, the output): in each round the floor is timed, then every
command once, and a command's overhead is the median over the rounds of its time less
that round's floor. Paired so, a minute in which the VM runs slow moves both sides of
one difference; the difference of two medians (what this held before) let the floor's
slow minutes and a command's fall in different rounds, and at 7 rounds moved a
command's overhead by 50 ms from one run to the next. The common commands are held
to 100 ms of overhead; those that read many schedules (`cron list` with a filter or its
first page, `check`) to 800 ms (the 1 s they had, less a typical floor). The absolute
median and the worst run are readings beside it. `--help` imports no psycopg but draws
with Rich: its overhead is near zero.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psycopg

from bench.common import BENCH_DIR, BENCH_KIND, BENCH_QUEUE, Report, Row, Server, compile_bytecode, connect, median
from bench.engines import Ours

OVERHEAD_MS = 100.0  # the common commands: median above the floor's
LIST_OVERHEAD_MS = 800.0  # the commands that read many schedules
RUNS = 15
TIMEOUT_S = 120
FLOOR = ["-c", "import psycopg, typer"]  # what every command imports before any of awa-tui's work
FLOOR_LABEL = "floor: python -c 'import psycopg, typer'"

SEED_SQL = """
INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, args, missed_fire_policy)
SELECT 'cli-' || lpad(i::text, 7, '0'), '0 3 * * *', 'UTC', %(kind)s, %(queue)s, '{}'::jsonb, 'coalesce'
FROM generate_series(1, %(n)s) AS i
"""


def _name(i: int) -> str:
    return f"cli-{i:07d}"


def _commands(n: int) -> list[tuple[str, list[str], float]]:
    """Label, arguments and overhead target (ms above the floor) of each timed command."""
    middle = _name(n // 2 + 1)
    return [
        ("--help (imports only)", ["--help"], OVERHEAD_MS),
        ("cron show", ["cron", "show", middle], OVERHEAD_MS),
        ("cron pause/resume", ["cron", "pause", middle], OVERHEAD_MS),
        ("audit", ["audit"], OVERHEAD_MS),
        ("runtime list", ["runtime", "list"], OVERHEAD_MS),
        ("cron list --filter", ["cron", "list", "--filter", middle], LIST_OVERHEAD_MS),
        ("cron list (first page)", ["cron", "list"], LIST_OVERHEAD_MS),
        ("check", ["check"], LIST_OVERHEAD_MS),
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
        client.runtime.snapshot()
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
            commands = _commands(n)
            ms: dict[str, list[float]] = {FLOOR_LABEL: [], **{label: [] for label, _, _ in commands}}
            for i in range(RUNS):  # rounds: the floor and every command share the same minutes
                ms[FLOOR_LABEL].append(_time_once(dsn, FLOOR) * 1000)
                for label, args, _ in commands:
                    if args[:2] == ["cron", "pause"] and i % 2:
                        args = ["cron", "resume", *args[2:]]
                    ms[label].append(_time_once(dsn, args) * 1000)
            floor = median(ms[FLOOR_LABEL])
            report.add(Row("cli_latency", size, f"{FLOOR_LABEL} (median of {RUNS})", "", floor, "ms"))
            report.add(Row("cli_latency", size, f"{FLOOR_LABEL} (worst)", "", max(ms[FLOOR_LABEL]), "ms"))
            for label, _, target in commands:
                mid = median(ms[label])
                over = median([took - base for took, base in zip(ms[label], ms[FLOOR_LABEL], strict=True)])
                report.add(Row("cli_latency", size, f"{label} (median of {RUNS})", "", mid, "ms"))
                report.add(Row("cli_latency", size, f"{label}: overhead, median above the floor's", f"< {target:g} ms",
                               over, "ms", over is not None and over < target))
                report.add(Row("cli_latency", size, f"{label} (worst)", "", max(ms[label]), "ms"))
    report.note("cli_latency: each command a fresh `python -m awa_tui` subprocess (interpreter start, imports, "
                "connect, query, output to /dev/null), awa_tui compiled to bytecode first as an installed package is; "
                "wall from spawn to exit, rounds interleaved with the floor; overhead = the median over the rounds of "
                "a command's time less that round's floor; `check` exits 2 here (no leader), a verdict, not an error")
