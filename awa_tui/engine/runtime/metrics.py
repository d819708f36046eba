"""Prometheus metrics (S43), served by any runtime with the prometheus_client library.

Per-schedule values are what the leader's health duty keeps in the database
(awa.cron_health, fire_stats, fire_lateness, health_meta), so a scrape of any runtime is
enough and no scrape computes anything per schedule: it reads those rows. Cardinality stays
bounded at 100k schedules: per-schedule series are emitted for at most `schedule_series`
schedules (unhealthy first, then by name; 0 turns them off), the rest is counted in
`awa_schedule_series_dropped`, and the per-health totals (`awa_schedules`) always cover
every schedule. Fires are counted per owner, queue and verdict, and lateness is a
histogram per queue, never per schedule.

A scrape cannot hurt firing: one collection runs at a time (a scrape that arrives while
one runs waits for it, bounded, and shares its result), so scrapes use at most one
database connection whatever their number, and that read gives up on its own lock and
statement timeouts instead of queueing behind a lock. Label values (names, owners, queues
anyone can write) are made printable: no ESC, BEL or CR reaches a scraper.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from wsgiref.simple_server import WSGIServer

import psycopg
from prometheus_client import CollectorRegistry, Histogram, make_wsgi_app
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from awa_tui.engine.core.db import ConnectionSource
from awa_tui.engine.core.errors import AwaError, ValidationError
from awa_tui.engine.health.listen import DEFAULT_SCHEDULE_SERIES, parse_addr
from awa_tui.engine.health.models import HEALTHS, UNHEALTHY, RuntimeAlive
from awa_tui.engine.health.rules import LATENESS_BUCKETS
from awa_tui.engine.migrations import code_version
from awa_tui.engine.runtime.alive import serve, with_alive
from awa_tui.engine.runtime.identity import RUNTIME_PROTOCOL
from awa_tui.printable import printable

# A collection's own limits: it waits this long for a lock and runs this long in all
# before the scrape answers awa_up 0; a scrape that finds one running waits at most the
# whole budget for its result.
LOCK_TIMEOUT_MS = 1000
STATEMENT_TIMEOUT_MS = 5000
SHARED_WAIT_S = (LOCK_TIMEOUT_MS + STATEMENT_TIMEOUT_MS) / 1000

SCHEDULE_LABELS = ("schedule", "owner", "queue")

_UNHEALTHY_SQL = ", ".join(f"'{h}'" for h in UNHEALTHY)
SCHEDULES_SQL = f"""
SELECT c.name, coalesce(c.owner, '') AS owner, c.queue,
       extract(epoch FROM awa.safe_ts(c.last_enqueued_at))::float8 AS last_fire,
       extract(epoch FROM awa.safe_ts(h.last_success_at))::float8 AS last_success,
       h.last_lateness, coalesce(h.health, 'ok') AS health
FROM awa.cron_jobs c LEFT JOIN awa.cron_health h ON h.name = c.name
ORDER BY coalesce(h.health, 'ok') IN ({_UNHEALTHY_SQL}) DESC, c.name
LIMIT %(cap)s
"""
COUNTS_SQL = """
SELECT coalesce(h.health, 'ok') AS health, count(*) AS n
FROM awa.cron_jobs c LEFT JOIN awa.cron_health h ON h.name = c.name GROUP BY 1
"""
FIRES_SQL = "SELECT owner, queue, verdict, fires FROM awa.fire_stats ORDER BY owner, queue, verdict"
LATENESS_SQL = "SELECT queue, le, fires, total FROM awa.fire_lateness ORDER BY queue, le"
# The oldest due waiting job's run_at rides on the same scan as the counts: the backlog's age
# costs the scrape nothing more.
JOBS_SQL = """
SELECT queue, state, count(*) AS n,
       extract(epoch FROM min(run_at) FILTER (WHERE state IN ('available', 'retryable') AND run_at <= now()))::float8
           AS oldest_due
FROM awa.jobs GROUP BY queue, state ORDER BY queue, state
"""
TABLE_SQL = "SELECT pg_total_relation_size('awa.jobs'::regclass)::float8 AS jobs_bytes"
# S63: per sink, the alerts waiting for their first attempt and those failing (tried, not
# yet accepted); every sink has both series, 0 when nothing waits.
ALERTS_SQL = """
SELECT s.name AS sink, count(d.outbox_id) FILTER (WHERE d.attempts = 0) AS pending,
       count(d.outbox_id) FILTER (WHERE d.attempts > 0) AS failing
FROM awa.alert_sinks s LEFT JOIN awa.alert_deliveries d ON d.sink = s.name AND d.state = 'pending'
GROUP BY s.name ORDER BY s.name
"""
RETENTION_SQL = """
SELECT extract(epoch FROM awa.safe_ts(lap_started_at))::float8 AS lap_started,
       extract(epoch FROM awa.safe_ts(lap_finished_at))::float8 AS lap_finished,
       extract(epoch FROM awa.safe_ts(updated_at))::float8 AS updated, deleted
FROM awa.retention_progress WHERE singleton
"""
META_SQL = "SELECT extract(epoch FROM awa.safe_ts(evaluated_at))::float8 AS evaluated_at FROM awa.health_meta"


@dataclass(frozen=True)
class ScheduleSeries:
    name: str
    owner: str
    queue: str
    last_fire: float | None
    last_success: float | None
    last_lateness: float | None
    health: str


@dataclass(frozen=True)
class MetricsSnapshot:
    """What one scrape reads from the database."""

    schedules: list[ScheduleSeries]
    health_counts: dict[str, int]
    fires: list[tuple[str, str, str, int]]  # owner, queue, verdict, fires
    lateness: dict[str, list[tuple[float, int, float]]]  # queue -> (le, fires in bucket, sum)
    jobs: list[tuple[str, str, int]]  # queue, state, count
    evaluated_at: float | None
    oldest_due: dict[str, float]  # queue -> run_at (epoch s) of its oldest due waiting job
    jobs_bytes: float  # awa.jobs with its indexes and TOAST
    alerts: list[tuple[str, int, int]] = field(default_factory=list)  # sink, pending, failing
    # The leader's retention walk (v027): epoch s of the current lap's start, of the last
    # lap's end and of the last round (each None until it happened), and jobs deleted.
    retention: tuple[float | None, float | None, float | None, int] = (None, None, None, 0)

    @property
    def total(self) -> int:
        return sum(self.health_counts.values())


def read_metrics(conn: psycopg.Connection[Any], schedule_series: int) -> MetricsSnapshot:
    """One snapshot of the database, under the collection's own timeouts; every label
    value printable."""
    with conn.transaction():  # one snapshot of the database
        conn.execute("SELECT set_config('lock_timeout', %s, true), set_config('statement_timeout', %s, true)",
                     (f"{LOCK_TIMEOUT_MS}ms", f"{STATEMENT_TIMEOUT_MS}ms"))
        schedules = [ScheduleSeries(**{**r, "name": printable(r["name"]), "owner": printable(r["owner"]),
                                       "queue": printable(r["queue"])})
                     for r in conn.execute(SCHEDULES_SQL, {"cap": schedule_series}).fetchall()] \
            if schedule_series > 0 else []
        counts = {r["health"]: r["n"] for r in conn.execute(COUNTS_SQL).fetchall()}
        fires = [(printable(r["owner"]), printable(r["queue"]), printable(r["verdict"]), r["fires"])
                 for r in conn.execute(FIRES_SQL).fetchall()]
        lateness: dict[str, list[tuple[float, int, float]]] = {}
        for r in conn.execute(LATENESS_SQL).fetchall():
            lateness.setdefault(printable(r["queue"]), []).append((r["le"], r["fires"], r["total"]))
        jobs: list[tuple[str, str, int]] = []
        oldest_due: dict[str, float] = {}
        for r in conn.execute(JOBS_SQL).fetchall():
            jobs.append((printable(r["queue"]), printable(r["state"]), r["n"]))
            if r["oldest_due"] is not None:
                queue = printable(r["queue"])
                oldest_due[queue] = min(r["oldest_due"], oldest_due.get(queue, r["oldest_due"]))
        meta = conn.execute(META_SQL).fetchone()
        table = conn.execute(TABLE_SQL).fetchone()
        alerts = [(printable(r["sink"]), r["pending"], r["failing"]) for r in conn.execute(ALERTS_SQL).fetchall()]
        kept = conn.execute(RETENTION_SQL).fetchone()
    retention = (kept["lap_started"], kept["lap_finished"], kept["updated"], kept["deleted"]) if kept else \
        (None, None, None, 0)
    return MetricsSnapshot(schedules, counts, fires, lateness, jobs, meta["evaluated_at"] if meta else None,
                           oldest_due, table["jobs_bytes"] if table else 0.0, alerts, retention)


@dataclass
class RuntimeGauges:
    """What only this process knows: leadership and its own evaluator passes."""

    is_leader: Callable[[], bool] = field(default=lambda: False)
    last_due: int = 0
    version: str = field(default_factory=lambda: _package_version())


def _package_version() -> str:
    from awa_tui import __version__

    return __version__


class AwaCollector(Collector):
    """Builds every awa_* family at scrape time from one database read, one read at a time."""

    def __init__(self, db: ConnectionSource, runtime: RuntimeGauges, schedule_series: int) -> None:
        self.db = db
        self.runtime = runtime
        self.schedule_series = schedule_series
        self._gate = threading.Lock()
        self._last: MetricsSnapshot | None = None
        self.reads = 0  # collections that went to the database (a scrape that shared one did not)

    def collect(self) -> Iterator[Metric]:
        snap = self._shared_read()
        # Which release this runtime runs, for a dashboard of a rolling deploy (docs/versioning.md).
        build = GaugeMetricFamily("awa_build_info", "Always 1; the labels name this runtime's release, "
                                  "the schema version it was built for and its runtime protocol",
                                  labels=("version", "schema_version", "protocol"))
        build.add_metric([self.runtime.version, str(code_version()), str(RUNTIME_PROTOCOL)], 1)
        yield build
        yield GaugeMetricFamily("awa_up", "1 when this runtime could read the database at this scrape",
                                value=0 if snap is None else 1)
        yield GaugeMetricFamily("awa_leader", "1 when this runtime is the leader", value=int(self.runtime.is_leader()))
        yield GaugeMetricFamily("awa_evaluator_due", "Schedules the last evaluator pass of this runtime examined",
                                value=self.runtime.last_due)
        if snap is None:
            return
        yield from _schedule_families(snap, self.schedule_series)
        yield from _fleet_families(snap)

    def _shared_read(self) -> MetricsSnapshot | None:
        """Read now, or, when another scrape is reading, wait for it (bounded) and share
        what it read: scrapes never hold more than one connection."""
        if self._gate.acquire(blocking=False):
            try:
                self.reads += 1
                self._last = self._read()
            finally:
                self._gate.release()
            return self._last
        if self._gate.acquire(timeout=SHARED_WAIT_S):
            self._gate.release()
        return self._last

    def _read(self) -> MetricsSnapshot | None:
        try:
            with self.db.connection() as conn:
                return read_metrics(conn, self.schedule_series)
        except AwaError:
            return None


def _schedule_families(snap: MetricsSnapshot, cap: int) -> Iterator[Metric]:
    last_fire = GaugeMetricFamily("awa_schedule_last_fire_timestamp_seconds",
                                  "The instant of the schedule's last fire", labels=SCHEDULE_LABELS)
    last_success = GaugeMetricFamily("awa_schedule_last_success_timestamp_seconds",
                                     "When the schedule's last job completed", labels=SCHEDULE_LABELS)
    lateness = GaugeMetricFamily("awa_schedule_last_lateness_seconds",
                                 "The last fire's job created_at minus its instant", labels=SCHEDULE_LABELS)
    health = GaugeMetricFamily("awa_schedule_health", "1 for the schedule's health, 0 for the others",
                               labels=(*SCHEDULE_LABELS, "state"))
    for s in snap.schedules:
        labels = [s.name, s.owner, s.queue]
        if s.last_fire is not None:
            last_fire.add_metric(labels, s.last_fire)
        if s.last_success is not None:
            last_success.add_metric(labels, s.last_success)
        if s.last_lateness is not None:
            lateness.add_metric(labels, s.last_lateness)
        for state in HEALTHS:
            health.add_metric([*labels, state], 1 if s.health == state else 0)
    yield from (last_fire, last_success, lateness, health)
    yield GaugeMetricFamily("awa_schedule_series_dropped",
                            f"Schedules without per-schedule series (the cap is {cap})",
                            value=max(0, snap.total - len(snap.schedules)))


def _fleet_families(snap: MetricsSnapshot) -> Iterator[Metric]:
    counts = GaugeMetricFamily("awa_schedules", "Schedules per health (every schedule)", labels=("health",))
    for state in HEALTHS:
        counts.add_metric([state], snap.health_counts.get(state, 0))
    yield counts
    fires = CounterMetricFamily("awa_schedule_fires", "Fires per owner, queue and verdict (on_time, late, manual)",
                                labels=("owner", "queue", "verdict"))
    for owner, queue, verdict, n in snap.fires:
        fires.add_metric([owner, queue, verdict], n)
    yield fires
    hist = HistogramMetricFamily("awa_fire_lateness_seconds", "Fire lateness (job created_at - instant) per queue",
                                 labels=("queue",))
    for queue, rows in snap.lateness.items():
        per_bucket = {le: n for le, n, _ in rows}
        running, buckets = 0, []
        for le in LATENESS_BUCKETS:
            running += per_bucket.get(le, 0)
            buckets.append(("+Inf" if le == float("inf") else repr(le), running))
        hist.add_metric([queue], buckets, sum_value=sum(t for _, _, t in rows))
    yield hist
    jobs = GaugeMetricFamily("awa_jobs", "Jobs per queue and state", labels=("queue", "state"))
    for queue, state, n in snap.jobs:
        jobs.add_metric([queue, state], n)
    yield jobs
    oldest = GaugeMetricFamily("awa_jobs_oldest_due_timestamp_seconds",
                               "When the oldest job waiting past its run time became due, per queue "
                               "(a queue with none due is absent)", labels=("queue",))
    for queue, at in sorted(snap.oldest_due.items()):
        oldest.add_metric([queue], at)
    yield oldest
    yield GaugeMetricFamily("awa_jobs_table_bytes", "Size of the jobs table with its indexes (retention keeps it flat)",
                            value=snap.jobs_bytes)
    undelivered = GaugeMetricFamily("awa_alert_deliveries_undelivered",
                                    "Alerts not yet accepted by each sink: pending (not tried yet) or failing "
                                    "(tried, refused or unreachable)", labels=("sink", "state"))
    for sink, pending, failing in snap.alerts:
        undelivered.add_metric([sink, "pending"], pending)
        undelivered.add_metric([sink, "failing"], failing)
    yield undelivered
    lap_started, lap_finished, round_at, deleted = snap.retention
    yield CounterMetricFamily("awa_retention_deleted_jobs", "Finished jobs the leader's retention deleted",
                              value=deleted)
    for name, text, when in (
            ("awa_retention_lap_started_timestamp_seconds",
             "When retention's current walk over the finished jobs began (old while rounds run: behind)", lap_started),
            ("awa_retention_lap_finished_timestamp_seconds",
             "When retention's walk over the finished jobs last reached the end", lap_finished),
            ("awa_retention_round_timestamp_seconds", "When the leader last ran a retention round", round_at)):
        if when is not None:
            yield GaugeMetricFamily(name, text, value=when)
    if snap.evaluated_at is not None:
        yield GaugeMetricFamily("awa_health_evaluated_timestamp_seconds",
                                "When the leader last evaluated health (stalled when old)", value=snap.evaluated_at)


# One rendering of /metrics answers every scrape for this long (per format asked for): a
# storm of scrapes costs the process one rendering a second, not one each.
RENDERED_FOR_S = 1.0


def rendered_for(app: Any, seconds: float) -> Any:
    """`app` (prometheus_client's WSGI app) with its answer kept `seconds` per format and
    encoding asked for (Accept, Accept-Encoding, the query); at most one rendering at a time."""
    lock = threading.Lock()
    kept: dict[tuple[str, str, str], tuple[float, str, list[tuple[str, str]], bytes]] = {}

    def cached(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        key = (environ.get("HTTP_ACCEPT", ""), environ.get("HTTP_ACCEPT_ENCODING", ""),
               environ.get("QUERY_STRING", ""))
        with lock:
            hit = kept.get(key)
            if hit is None or time.monotonic() - hit[0] >= seconds:
                answer: dict[str, Any] = {}

                def keep(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
                    answer.update(status=status, headers=headers)

                body = b"".join(app(environ, keep))
                hit = (time.monotonic(), answer["status"], answer["headers"], body)
                kept[key] = hit
        start_response(hit[1], hit[2])
        return [hit[3]]

    return cached


class MetricsServer:
    """/metrics of one runtime over HTTP, on a daemon thread, until `stop`; and /alive, what
    `alive` says of the process (runtime/alive.py), when given."""

    def __init__(self, db: ConnectionSource, addr: str, *, is_leader: Callable[[], bool],
                 schedule_series: int = DEFAULT_SCHEDULE_SERIES,
                 alive: Callable[[], RuntimeAlive] | None = None) -> None:
        if isinstance(schedule_series, bool) or not isinstance(schedule_series, int) or schedule_series < 0:
            raise ValidationError(f"schedule_series: must be an integer >= 0, got {schedule_series!r}")
        self.host, self.port = parse_addr(addr)
        self.runtime = RuntimeGauges(is_leader=is_leader)
        self.registry = CollectorRegistry(auto_describe=False)
        self.collector = AwaCollector(db, self.runtime, schedule_series)
        self.registry.register(self.collector)
        self.pass_seconds = Histogram("awa_evaluator_pass_seconds", "This runtime's evaluator passes",
                                      registry=self.registry,
                                      buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0))
        # This process's jobs, per kind, queue and how the attempt ended (completed,
        # retryable, discarded, cancelled): durations, and so failures per kind and queue.
        self.job_seconds = Histogram("awa_job_duration_seconds", "This runtime's job attempts, by how they ended",
                                     ("kind", "queue", "state"), registry=self.registry,
                                     buckets=(0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 60.0, 300.0, 1800.0))
        self.alive = alive
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def serve(cls, db: ConnectionSource, addr: str, *, is_leader: Callable[[], bool],
              schedule_series: int = DEFAULT_SCHEDULE_SERIES,
              alive: Callable[[], RuntimeAlive] | None = None) -> MetricsServer:
        """A server made and started: a malformed or taken address raises before it runs."""
        server = cls(db, addr, is_leader=is_leader, schedule_series=schedule_series, alive=alive)
        server.start()
        return server

    def start(self) -> None:
        app = rendered_for(make_wsgi_app(self.registry), RENDERED_FOR_S)
        if self.alive is not None:
            app = with_alive(app, self.alive)
        try:
            self._server, self._thread = serve(self.host, self.port, app)
        except OSError as exc:
            raise AwaError(f"--metrics-addr: cannot listen on {self.host}:{self.port}: {exc.strerror or exc}") from None

    @property
    def bound_port(self) -> int:
        assert self._server is not None
        return int(self._server.server_port)

    def observe_pass(self, seconds: float, due: int) -> None:
        self.pass_seconds.observe(seconds)
        self.runtime.last_due = due

    def observe_job(self, job: Any, state: str, seconds: float) -> None:
        self.job_seconds.labels(job.kind, job.queue, state).observe(seconds)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
