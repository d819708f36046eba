"""What the `otel` extra's spans cost a worker per job: tracing off against on.

    AWA_BENCH_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python -m bench.tracing_overhead [--jobs 3000] [--rounds 3] [--calls 20000]

Two measures, each off then on, in turn for `--rounds` rounds (a shared machine drifts):
- drain: N no-op async jobs (half fired by a schedule, half enqueued inside a span, so both
  parents are derived) drained by one runtime's worker (concurrency 10, not leading), in a
  fresh database each; the time from the worker's start to the last job recorded.
- calls: the worker's tracing calls alone for one attempt (the span started at the claim,
  made current around the handler, ended with its outcome), no database, per call.
"On" is the SDK's TracerProvider with a BatchSpanProcessor and an exporter that drops the
spans (an app's usual set-up, without its network); "off" is no provider. Needs the test
extra (opentelemetry-sdk). Prints a table and one JSON line."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Sequence
from typing import Any

import psycopg

from bench.worker_throughput import drop, scratch


def provider() -> Any:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Dropped(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    made = TracerProvider()
    made.add_span_processor(BatchSpanProcessor(Dropped()))
    return made


def drain(dsn: str, n: int, traced: Any) -> float:
    from awa_tui import Client
    from awa_tui.engine.migrations import migrate
    from bench.worker_throughput import drain_seconds

    migrate(dsn)
    half = n // 2
    with psycopg.connect(dsn, autocommit=True) as conn:
        # Fired jobs as the fire statement stamps them (one schedule, one instant each).
        conn.execute("INSERT INTO awa.jobs (kind, args, metadata) SELECT 'noop', '{}', jsonb_build_object("
                     "'cron_name', 'bench', 'cron_fire_time', "
                     "to_char((timestamptz '2025-01-01' + i * interval '1 min') AT TIME ZONE 'UTC', "
                     "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')) FROM generate_series(1, %s) AS i", (half,))
        # Enqueued jobs carrying an enqueuer's traceparent.
        conn.execute("INSERT INTO awa.jobs (kind, args, metadata) SELECT 'noop', '{}', jsonb_build_object("
                     "'enqueued', true, 'traceparent', '00-0af7651916cd43dd8448eb211c80319c-' || "
                     "lpad(to_hex(i), 16, '0') || '-01') FROM generate_series(1, %s) AS i", (n - half,))
        conn.execute("ANALYZE awa.jobs")
    return drain_seconds(Client(dsn, operator="bench", concurrency=10, tracer_provider=traced), n)


def calls(traced: Any, n: int) -> float:
    """Microseconds of one attempt's tracing calls (a fired job's: the derived parent)."""
    from awa_tui.engine.jobs.context import Job
    from awa_tui.engine.jobs.tracing import Tracing, active, end_span

    tracing = Tracing(traced)
    job = Job(id=1, kind="noop", queue="default", args={}, attempt=1, max_attempts=25,
              metadata={"cron_name": "bench", "cron_fire_time": "2025-01-01T00:01:00Z"})
    began = time.perf_counter()
    for _ in range(n):
        span = tracing.job(job)
        with active(span):
            pass
        end_span(span, "completed")
    return (time.perf_counter() - began) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    admin = os.environ.get("AWA_BENCH_DATABASE_URL")
    if not admin:
        raise SystemExit("set AWA_BENCH_DATABASE_URL to a server this bench may create databases on")
    drained: dict[str, list[float]] = {"off": [], "on": []}
    called: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(args.rounds):
        for mode in ("off", "on"):
            traced = provider() if mode == "on" else None
            called[mode].append(calls(traced, args.calls))
            name, dsn = scratch(admin)
            try:
                drained[mode].append(drain(dsn, args.jobs, traced))
            finally:
                drop(admin, name)
                if traced is not None:
                    traced.shutdown()
    row: dict[str, float | int] = {"jobs": args.jobs, "rounds": args.rounds}
    for mode in ("off", "on"):
        seconds = statistics.median(drained[mode])
        row[f"{mode}_jobs_per_s"] = round(args.jobs / seconds, 1)
        row[f"{mode}_us_per_job"] = round(seconds / args.jobs * 1e6, 1)
        row[f"{mode}_calls_us"] = round(statistics.median(called[mode]), 2)
    row["drain_overhead_us_per_job"] = round(float(row["on_us_per_job"]) - float(row["off_us_per_job"]), 1)
    for mode in ("off", "on"):
        print(f"tracing {mode:>3}: {row[f'{mode}_jobs_per_s']:>8} jobs/s ({row[f'{mode}_us_per_job']} us a job, "
              f"median of {args.rounds}); the tracing calls alone {row[f'{mode}_calls_us']} us an attempt", flush=True)
    print(json.dumps({"bench": "tracing_overhead", "row": row}))


if __name__ == "__main__":
    main()
