"""Retention under a soak: the jobs table stays flat while a
real runtime leads and works N per-second schedules beside DAILY daily ones whose kept
history (a schedule's last `job_keep` jobs) lies past the horizon.

Before retention kept a cursor between rounds (engine/ledger/retention.py), each round began
again at the oldest finished job and spent its budget re-reading the rows it must keep; with
~5,000 kept rows past the horizon (140 daily schedules under the 14-day default) it never
reached a deletable row again and the table grew without bound, silently. Here the daily
schedules' history is seeded as if they had run for HISTORY_DAYS days (finished jobs, one a
day at 03:00 UTC, the oldest rows of the table: DAILY x job_keep of them kept for good), the
horizon is made short (`job_retention`, seconds) so the run fits in minutes, and one runtime
(`Client.start()`: leading and working, concurrency CONCURRENCY) runs for `seconds`.

Every SAMPLE_S: the jobs table's rows (count) and size (pg_total_relation_size), the jobs
waiting, retention's progress (awa.retention_progress, v027: laps, deleted, where the walk
is) and what `check` says of it. Held: the row count at the end within FLAT_PCT of the first
sample taken two windows after the horizon (the table full: the first fires become deletable
only at the horizon, and the walk first goes through the seeded history), and `check` never
reporting retention behind (its own threshold is an hour, so in minutes it catches only a walk
that never ends from the start). Reported beside them: the windows in which the walk did not
reach the end (no new lap: retention at its limit or behind), what it deleted a second in the
last window against the 200 fired, and the DB time of its batches.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import Report, Row, Server, connect, statement_stats

KIND = "bench.noop"
QUEUE = "soak"
DAILY = 150
DAILY_EXPR = "0 3 * * *"
HISTORY_DAYS = 60  # per daily schedule: 60 finished jobs, the last KEEP of them kept
KEEP = 50
CONCURRENCY = 20
SAMPLE_S = 30.0
FLAT_PCT = 10.0
PRUNE_LIKE = "%DELETE FROM awa.jobs j USING doomed%"  # engine/ledger/retention.py's PRUNE_SQL

HISTORY_SQL = """
INSERT INTO awa.jobs (kind, queue, state, attempt, run_at, created_at, attempted_at, finalized_at, metadata)
SELECT %(kind)s, %(queue)s, 'completed', 1, f, f, f, f + interval '1 second',
       jsonb_build_object('cron_name', 'soak-daily-' || lpad(i::text, 3, '0'), 'cron_fire_time', f)
FROM generate_series(1, %(daily)s) AS i,
     LATERAL (SELECT date_trunc('day', %(now)s::timestamptz) - make_interval(days => d) + interval '3 hours' AS f
              FROM generate_series(1, %(days)s) AS d) AS fires
"""
SAMPLE_SQL = """
SELECT (SELECT count(*) FROM awa.jobs)::bigint AS rows,
       (SELECT count(*) FROM awa.jobs WHERE state IN ('available', 'retryable'))::bigint AS waiting,
       pg_total_relation_size('awa.jobs')::bigint AS bytes,
       p.laps, p.deleted, p.lap_started_at, p.walked_to, p.cutoff, p.updated_at, clock_timestamp() AS now
FROM awa.retention_progress p WHERE p.singleton
"""


@dataclass(frozen=True)
class Sample:
    at: float  # seconds since the runtime started
    rows: int
    waiting: int
    bytes: int
    laps: int
    deleted: int
    lap_age_s: float | None  # how long the current walk has lasted
    check_behind: bool  # `check` reported retention behind


def sample(dsn: str, client: Any, began: float) -> Sample:
    with connect(dsn) as conn:
        row = conn.execute(SAMPLE_SQL).fetchone()
    assert row is not None
    report = client.reads.check()
    lap_age = None if row["lap_started_at"] is None else (row["now"] - row["lap_started_at"]).total_seconds()
    return Sample(round(time.monotonic() - began, 1), row["rows"], row["waiting"], row["bytes"], row["laps"],
                  row["deleted"], lap_age, any(p.code == "retention_behind" for p in report.fleet))


def soak(dsn: str, schedules: int, seconds: float, horizon: timedelta) -> tuple[list[Sample], tuple[int, float]]:
    """The samples, and retention's batches: how many ran and their DB time (ms, pg_stat_statements)."""
    from awa_tui import Client, Job
    from awa_tui.engine.migrations import migrate

    migrate(dsn)
    with connect(dsn) as conn:
        conn.execute(HISTORY_SQL, {"kind": KIND, "queue": QUEUE, "daily": DAILY, "days": HISTORY_DAYS,
                                   "now": datetime.now(UTC)})
        conn.execute("ANALYZE awa.jobs")

    async def noop(job: Job) -> None:
        return None

    client = Client(dsn, operator="bench@soak", concurrency=CONCURRENCY, job_retention=horizon, job_keep=KEEP)
    client.register_handler(KIND, noop)
    for k in range(schedules):
        client.periodic(f"soak-second-{k:04d}", "* * * * * *", KIND, queue=QUEUE)
    for k in range(1, DAILY + 1):
        client.periodic(f"soak-daily-{k:03d}", DAILY_EXPR, KIND, queue=QUEUE)
    samples: list[Sample] = []
    pause = threading.Event()  # the sampling interval: a measurement's pace, not a wait for anything
    began = time.monotonic()
    client.start()
    try:
        while (elapsed := time.monotonic() - began) < seconds:
            pause.wait(min(SAMPLE_S - elapsed % SAMPLE_S, seconds - elapsed))
            samples.append(sample(dsn, client, began))
    finally:
        client.close()
    return samples, statement_stats(dsn, PRUNE_LIKE)


def run(server: Server, sizes: list[int], report: Report, seconds: float, horizon_s: float) -> None:
    horizon = timedelta(seconds=horizon_s)
    for n in sizes:
        size = f"{n:,} x 1/s + {DAILY} daily, horizon {horizon_s:g} s, {seconds / 60:g} min"
        load_before = os.getloadavg()[0]
        with server.database(f"soak_{n}") as dsn:
            samples, (batches, batch_ms) = soak(dsn, n, seconds, horizon)
        load_after = os.getloadavg()[0]
        report.note(f"retention_soak {size}: every {SAMPLE_S:g} s (s: rows, MB, waiting, laps, deleted) "
                    + "; ".join(f"{s.at:.0f}: {s.rows:,}, {s.bytes / 1e6:.1f}, {s.waiting:,}, {s.laps}, {s.deleted:,}"
                                for s in samples)
                    + f"; load average (1 min) {load_before:.2f} before, {load_after:.2f} after, "
                      f"on {os.cpu_count()} CPUs")
        # Full once the horizon has passed and the walk has been through the seeded history:
        # two windows after the horizon (after one, the quick run's table still grew by 8 %).
        settled = [s for s in samples if s.at >= horizon_s + 2 * SAMPLE_S - 1]
        if len(settled) < 2:
            report.add(Row("retention_soak", size, "samples after the horizon", ">= 2", float(len(settled)), "",
                           False))
            continue
        first, last = settled[0], settled[-1]
        drift = 100 * (last.rows - first.rows) / first.rows
        report.add(Row("retention_soak", size, f"jobs rows at {first.at:.0f} s (the table full)", "",
                       float(first.rows), ""))
        report.add(Row("retention_soak", size, f"jobs rows at the end ({last.at:.0f} s)", "", float(last.rows), ""))
        report.add(Row("retention_soak", size, "rows at the end against then", f"within ±{FLAT_PCT:g} %",
                       round(drift, 1), "%", abs(drift) <= FLAT_PCT))
        report.add(Row("retention_soak", size, "rows at most after then", "",
                       float(max(s.rows for s in settled)), ""))
        report.add(Row("retention_soak", size, f"awa.jobs size at {first.at:.0f} s", "",
                       first.bytes / 1e6, "MB"))
        report.add(Row("retention_soak", size, "awa.jobs size at the end", "", last.bytes / 1e6, "MB"))
        report.add(Row("retention_soak", size, "jobs waiting at the end", "", float(last.waiting), ""))
        report.add(Row("retention_soak", size, "jobs deleted by retention", "", float(last.deleted), ""))
        end = samples[-2:]
        if len(end) == 2:
            rate = (end[1].deleted - end[0].deleted) / (end[1].at - end[0].at)
            report.add(Row("retention_soak", size, f"deleted per second in the last window (fired: {n:,} a second)", "",
                           round(rate, 1), "jobs/s"))
        if batches:
            report.add(Row("retention_soak", size, f"retention batches ({batches:,}), DB time each", "",
                           batch_ms / batches, "ms"))
        windows = list(itertools.pairwise(settled))
        stalled = sum(1 for a, b in windows if b.laps <= a.laps)
        report.add(Row("retention_soak", size, f"windows of {SAMPLE_S:g} s after then in which the walk never "
                       f"reached the end (of {len(windows)})", "", float(stalled), ""))
        behind = sum(1 for s in samples if s.check_behind)
        report.add(Row("retention_soak", size, "samples where check said retention is behind", "0", float(behind), "",
                       behind == 0))
