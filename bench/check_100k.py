"""`awa-tui check` and the leader's health duty at 100k schedules, 1% unhealthy (S42, S43).

    .venv/bin/python -m bench.check_100k [--n 100000] [--runs 5] [--duty-only]

Seeds N schedules (bench.common.seed_schedules, a yearly expression: nothing fires), makes
1% unhealthy (0.5% late, 0.3% failing through real discarded jobs, 0.2% broken), and times:
- the health duty (`Client.evaluate_health`): the first pass (rows for the unhealthy only),
  then steady passes (nothing changes, nothing written), each with DB time from
  pg_stat_statements when the server has it, and how many schedules a steady pass judges
  (the candidates plus the sweep's slice, S42);
- the same with expectations on: every schedule with expect_success_within and one
  completed job each (the missed rule probes each schedule's last jobs);
- `awa-tui check` as an operator runs it (a subprocess: interpreter start-up included),
  and the engine's `check()` alone.
`--duty-only` (for `--n 1000000`) times the duty alone, without expectations on and
without `awa-tui check`. Prints one JSON object; the targets are `check` < 1 s and the duty
well under its 10 s interval.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

from bench.common import (
    BENCH_KIND,
    BENCH_QUEUE,
    connect,
    reset_stat_statements,
    seed_schedules,
    start_server,
    stat_statements_ms,
)

YEARLY = "0 0 1 1 *"
CHECK_TARGET_S = 1.0


def _timed(fn: Any, runs: int, dsn: str, stat: bool) -> dict[str, float]:
    walls, dbs = [], []
    for _ in range(runs):
        if stat:
            reset_stat_statements(dsn)
        began = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - began)
        if stat:
            dbs.append(stat_statements_ms(dsn))
    out = {"median_s": round(statistics.median(walls), 4), "max_s": round(max(walls), 4)}
    if dbs:
        out["db_median_ms"] = round(statistics.median(dbs), 1)
    return out


def make_unhealthy(dsn: str, n: int) -> dict[str, int]:
    late, failing, broken = n // 200, n * 3 // 1000, n // 500
    with connect(dsn) as conn:
        conn.execute("UPDATE awa.cron_jobs SET next_fire_at = now() - interval '10 minutes' "
                     "WHERE name IN (SELECT name FROM awa.cron_jobs ORDER BY name LIMIT %s)", (late,))
        conn.execute(
            "INSERT INTO awa.jobs (kind, queue, state, metadata) "
            "SELECT %s, %s, 'running', jsonb_build_object('cron_name', name, 'cron_fire_time', now()::text) "
            "FROM awa.cron_jobs ORDER BY name OFFSET %s LIMIT %s", (BENCH_KIND, BENCH_QUEUE, late, failing))
        # Through the outcome trigger, as a worker's statement would.
        conn.execute("UPDATE awa.jobs SET state = 'discarded', finalized_at = now() WHERE state = 'running'")
        conn.execute("UPDATE awa.cron_jobs SET cron_expr = '99 * * * *' "
                     "WHERE name IN (SELECT name FROM awa.cron_jobs ORDER BY name OFFSET %s LIMIT %s)",
                     (late + failing, broken))
    return {"late": late, "failing": failing, "broken": broken}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--duty-only", action="store_true")
    args = parser.parse_args()

    from awa_tui.engine.client import Client
    from awa_tui.engine.firing import evaluator
    from awa_tui.engine.migrations import migrate

    server = start_server()
    result: dict[str, Any] = {"n": args.n, "at": datetime.now(UTC).isoformat(timespec="seconds")}
    try:
        with server.database("check") as dsn:
            migrate(dsn)
            seed_schedules(dsn, args.n, YEARLY, "coalesce", datetime(datetime.now(UTC).year, 1, 1, tzinfo=UTC))
            with connect(dsn) as conn:
                evaluator.evaluate(conn)  # every next-fire hint stored
            result["unhealthy"] = make_unhealthy(dsn, args.n)
            stat = server.stat_statements
            with Client(dsn) as client:
                began = time.perf_counter()
                first = client.runtime.evaluate_health()
                result["duty_first_pass_s"] = round(time.perf_counter() - began, 3)
                result["transitions_first_pass"] = len(first.transitions)
                result["duty_steady"] = _timed(client.runtime.evaluate_health, args.runs, dsn, stat)
                result["duty_steady_judged"] = client.runtime.evaluate_health().judged
                if args.duty_only:
                    return _finish(result)
                report = client.reads.check()
                result["check_found"] = {h: report.unhealthy_count(h) for h in ("late", "failing", "broken")}
                result["check_engine"] = _timed(client.reads.check, args.runs, dsn, stat)
                cli = [sys.executable, "-m", "awa_tui", "check", "--dsn", dsn]
                result["check_cli"] = _timed(lambda: subprocess.run(cli, capture_output=True, check=False),
                                             args.runs, dsn, False)
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                result["check_cli_exit"] = subprocess.run(cli, capture_output=True, check=False).returncode
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                # CPU of one `awa-tui check` (user + system): wall time on a loaded machine
                # is mostly waiting for a CPU.
                cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                result["check_cli_cpu_s"] = round(cpu, 3)
                with connect(dsn) as conn:  # expectations on: a dead-man's switch on every schedule
                    conn.execute("UPDATE awa.cron_jobs SET expect_success_within = 300")
                    conn.execute(
                        "INSERT INTO awa.jobs (kind, queue, state, finalized_at, metadata) "
                        "SELECT %s, %s, 'completed', now(), jsonb_build_object('cron_name', name, "
                        "'cron_fire_time', (now() - interval '1 minute')::text) FROM awa.cron_jobs",
                        (BENCH_KIND, BENCH_QUEUE))
                    conn.execute("ANALYZE awa.jobs")
                client.runtime.evaluate_health()
                result["duty_steady_expectations_on"] = _timed(client.runtime.evaluate_health, args.runs, dsn, stat)
                result["duty_steady_expectations_on_judged"] = client.runtime.evaluate_health().judged
        result["check_target_met"] = result["check_cli"]["median_s"] < CHECK_TARGET_S
        _finish(result)
    finally:
        server.stop()


def _finish(result: dict[str, Any]) -> None:
    with open("/proc/loadavg") as fh:
        result["loadavg"] = fh.read().split()[:3]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
