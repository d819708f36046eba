"""Draining a backlog: N waiting no-op jobs in four queues, one process's worker at concurrency
C (not leading), timed by bench/worker_throughput.py's drain_seconds. A claim that sorted the
whole backlog once made workers that fell behind fall further (one claim 90 ms at 51k waiting,
1.6 s at 1.65M); this holds the rate and the claim's cost to what they are on a small backlog.

The backlog is written through the public enqueue API, `Client.enqueue(..., conn=)`, one job
a call in transactions of COMMIT_EVERY: the API has no many-at-once form, and this is its
fastest path (measured ~5,000 jobs a second on the shared 2-core machine). Reported:

- the rate over the whole drain and per tenth of it (100k at 1M), from the worker's own count
  (drain_seconds' marks): a claim or an outcome that grew dearer as the backlog shrinks or as
  the table's dead rows pile up shows as slices that slow down. Held: the last slice at least
  FLAT of the first. A cost that grew with the dead rows falls steadily from slice to slice;
  FLAT leaves a quarter for this shared machine, whose other work moves a slice's rate by
  a factor of two or more between neighbours (measured: 343 to 1,128 jobs/s at 1M, load 4-15);
- the claim statement's cost (pg_stat_statements, DB time per call): probed PROBES times, each
  rolled back, at N waiting before the drain and at BASELINE waiting after it (the table then
  full of finished jobs and dead rows), then once more after a VACUUM of the table (what the
  claim comes back to once autovacuum has removed the drain's dead index entries), against
  BASELINE waiting in a fresh table; held: the start and the vacuumed one within CLAIM_RATIO
  of the fresh one (straight after a 1M drain, before any vacuum, it is reported: 13x).
  Also what the worker's own claims cost during the first and the last slice (sampled every
  SAMPLE_S), and the most dead rows the table held.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from dataclasses import dataclass

import psycopg

from bench.common import Report, Row, Server, connect, stat_statements_ms, statement_stats
from bench.worker_throughput import drain_seconds

QUEUES = ("drain-a", "drain-b", "drain-c", "drain-d")
KIND = "noop"  # the kind drain_seconds' handler runs
SLICES = 10
COMMIT_EVERY = 10_000
PROBES = 50
PROBE_LIMIT = 10  # what a worker at concurrency 10 claims when all its slots are free
BASELINE = 1000
FLAT = 0.75
CLAIM_RATIO = 2.0
SAMPLE_S = 1.0
CLAIM_LIKE = "%RECURSIVE waiting(queue)%"  # engine/jobs/store.py's CLAIM_SQL
TABLE_SQL = """
SELECT coalesce((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'awa.jobs'::regclass), 0)::bigint AS dead,
       pg_total_relation_size('awa.jobs')::bigint AS bytes
"""


@dataclass(frozen=True)
class Sample:
    at: float  # seconds since the drain began
    claims: int  # the claim statement's calls so far
    claim_ms: float  # and their exec time
    db_ms: float  # every statement's exec time so far
    dead: int
    bytes: int


def seed(dsn: str, n: int) -> float:
    """N waiting no-op jobs, round robin over QUEUES, through the public enqueue API; seconds."""
    from awa_tui import Client

    client = Client(dsn, operator="bench@drain")
    began = time.perf_counter()
    try:
        with psycopg.connect(dsn) as conn:
            for i in range(n):
                client.enqueue(KIND, {"i": i}, queue=QUEUES[i % len(QUEUES)], conn=conn)
                if (i + 1) % COMMIT_EVERY == 0:
                    conn.commit()
            conn.commit()
    finally:
        client.close()
    return time.perf_counter() - began


def claim_probe(dsn: str) -> float:
    """DB ms per claim of PROBE_LIMIT jobs from every queue, the mean of PROBES, each rolled back."""
    from awa_tui.engine.jobs.store import claim_jobs

    calls, ms = statement_stats(dsn, CLAIM_LIKE)
    with connect(dsn) as conn:
        for _ in range(PROBES):
            with conn.transaction(force_rollback=True):
                claimed = claim_jobs(conn, [KIND], PROBE_LIMIT)
            if len(claimed) != PROBE_LIMIT:
                raise RuntimeError(f"the claim probe claimed {len(claimed)} jobs, not {PROBE_LIMIT}")
    calls_after, ms_after = statement_stats(dsn, CLAIM_LIKE)
    return (ms_after - ms) / max(calls_after - calls, 1)


class Sampler:
    """The claim statement's counters, the dead rows and the table's size every SAMPLE_S."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._began = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="bench-drain-sampler", daemon=True)

    def start(self) -> Sampler:
        self._began = time.perf_counter()
        self._thread.start()
        return self

    def _sample(self, conn: psycopg.Connection[dict[str, int]]) -> None:
        claims, claim_ms = statement_stats(self.dsn, CLAIM_LIKE)
        row = conn.execute(TABLE_SQL).fetchone()
        assert row is not None
        self.samples.append(Sample(time.perf_counter() - self._began, claims, claim_ms, stat_statements_ms(self.dsn),
                                   row["dead"], row["bytes"]))

    def _run(self) -> None:
        with connect(self.dsn) as conn:
            self._sample(conn)
            while not self._stop.wait(SAMPLE_S):
                self._sample(conn)
            self._sample(conn)

    def stop(self) -> list[Sample]:
        self._stop.set()
        self._thread.join(30)
        return self.samples

    def around(self, start: float, end: float) -> tuple[Sample, Sample]:
        """The last sample at or before `start` and the first at or after `end`."""
        before = [s for s in self.samples if s.at <= start] or self.samples[:1]
        after = [s for s in self.samples if s.at >= end] or self.samples[-1:]
        return before[-1], after[0]

    def claim_ms(self, start: float, end: float) -> float | None:
        """DB ms per claim the worker ran between `start` and `end`."""
        a, b = self.around(start, end)
        return (b.claim_ms - a.claim_ms) / (b.claims - a.claims) if b.claims > a.claims else None

    def db_ms_per_job(self, start: float, end: float, jobs: int) -> float:
        """DB ms per job of every statement between `start` and `end` (`jobs` done then, about)."""
        a, b = self.around(start, end)
        return (b.db_ms - a.db_ms) / jobs


def slice_rates(marks: list[float], every: int) -> list[float]:
    """Jobs/s per slice from drain_seconds' marks: the first job's time, then every `every`-th
    (the first slice from the first job on, so the worker's start-up is not in it)."""
    done = [every - 1, *[every] * (len(marks) - 2)]
    return [jobs / (b - a) for jobs, (a, b) in zip(done, itertools.pairwise(marks), strict=True)]


def baseline(server: Server) -> float:
    """The claim's cost with BASELINE jobs waiting in a fresh table."""
    from awa_tui.engine.migrations import migrate

    with server.database("drain_base") as dsn:
        migrate(dsn)
        seed(dsn, BASELINE)
        with connect(dsn) as conn:
            conn.execute("ANALYZE awa.jobs")
        return claim_probe(dsn)


def one(server: Server, n: int, concurrency: int, fresh_ms: float | None, report: Report) -> None:
    from awa_tui import Client
    from awa_tui.engine.migrations import migrate

    size = f"{n:,} waiting, c={concurrency}"
    every = n // SLICES
    with server.database(f"drain_{n}") as dsn:
        migrate(dsn)
        seed_s = seed(dsn, n)
        with connect(dsn) as conn:
            conn.execute("ANALYZE awa.jobs")
        report.add(Row("drain", size, "seed: Client.enqueue one at a time, 10k a transaction", "",
                       round(n / seed_s, 1), "jobs/s"))
        start_ms = claim_probe(dsn) if server.stat_statements else None
        load_before = os.getloadavg()[0]
        marks: list[float] = []
        sampler = Sampler(dsn).start() if server.stat_statements else None
        try:
            seconds = drain_seconds(Client(dsn, operator="bench@drain", concurrency=concurrency), n,
                                    every=every, marks=marks, timeout_s=max(600.0, n / 200))
        finally:
            samples = sampler.stop() if sampler is not None else []
        load_after = os.getloadavg()[0]
        with connect(dsn) as conn:
            counted = conn.execute("SELECT count(*) AS n FROM awa.jobs WHERE state <> 'completed'").fetchone()
        left = int(counted["n"]) if counted is not None else -1
        seed(dsn, BASELINE)  # the end: a small backlog among a drained table's finished and dead rows
        end_ms = claim_probe(dsn) if server.stat_statements else None
        with connect(dsn) as conn:  # what the claim comes back to once (auto)vacuum has been through
            conn.execute("VACUUM awa.jobs")
        vacuumed_ms = claim_probe(dsn) if server.stat_statements else None

    rates = slice_rates(marks, every)
    report.add(Row("drain", size, "drain, whole", "", round(n / seconds, 1), "jobs/s"))
    report.add(Row("drain", size, f"first tenth ({every:,} jobs)", "", round(rates[0], 1), "jobs/s"))
    report.add(Row("drain", size, "last tenth", "", round(rates[-1], 1), "jobs/s"))
    report.add(Row("drain", size, "slowest tenth", "", round(min(rates), 1), "jobs/s"))
    flat = 100 * rates[-1] / rates[0]
    report.add(Row("drain", size, "last tenth / first tenth", f">= {100 * FLAT:.0f} %", round(flat, 1),
                   "%", flat >= 100 * FLAT, lower_is_better=False))
    report.add(Row("drain", size, "jobs not completed after the drain", "0", float(left), "", left == 0))
    report.note(f"drain {size}: jobs/s per tenth {', '.join(f'{r:,.0f}' for r in rates)}; "
                f"load average (1 min) {load_before:.2f} before, {load_after:.2f} after, on {os.cpu_count()} CPUs")
    if sampler is not None and samples:
        first = sampler.claim_ms(marks[0], marks[1])
        last = sampler.claim_ms(marks[-2], marks[-1])
        report.add(Row("drain", size, "worker's claims in the first tenth, DB time each", "", first, "ms"))
        report.add(Row("drain", size, "worker's claims in the last tenth, DB time each", "", last, "ms"))
        for label, start, end in (("first", marks[0], marks[1]), ("last", marks[-2], marks[-1])):
            report.add(Row("drain", size, f"every statement in the {label} tenth, DB time per job", "",
                           sampler.db_ms_per_job(start, end, every), "ms"))
        report.add(Row("drain", size, "dead rows in awa.jobs at most", "", float(max(s.dead for s in samples)), ""))
        report.add(Row("drain", size, "awa.jobs at the end (with indexes)", "", samples[-1].bytes / 1e6, "MB"))
    # Held: at the start and once a vacuum has been through (autovacuum's job on a live
    # database); straight after the drain the dead index entries of a million finished jobs
    # are still read (reported, not held).
    for label, ms, held in ((f"{n:,} waiting (the start)", start_ms, True),
                            (f"{BASELINE:,} waiting after the drain", end_ms, False),
                            (f"{BASELINE:,} waiting after the drain and a VACUUM", vacuumed_ms, True)):
        report.add(Row("drain", size, f"claim probe at {label}, DB time each", "", ms, "ms"))
        if held and ms is not None and fresh_ms:
            ratio = ms / fresh_ms
            report.add(Row("drain", size, f"claim at {label} / at {BASELINE:,} in a fresh table",
                           f"<= {CLAIM_RATIO:g}x", round(ratio, 2), "", ratio <= CLAIM_RATIO))


def run(server: Server, sizes: list[int], report: Report, concurrencies: tuple[int, ...]) -> None:
    report.note(f"drain: the backlog is written through Client.enqueue(conn=) one job a call, "
                f"{COMMIT_EVERY:,} a transaction (the enqueue API has no many-at-once form); "
                f"claim probes: {PROBES} claims of {PROBE_LIMIT} from {len(QUEUES)} queues, each rolled back")
    fresh_ms = baseline(server) if server.stat_statements else None
    report.add(Row("drain", f"{BASELINE:,} waiting, fresh", "claim probe, DB time each", "", fresh_ms, "ms"))
    for n in sizes:
        for concurrency in concurrencies:
            one(server, n, concurrency, fresh_ms, report)
