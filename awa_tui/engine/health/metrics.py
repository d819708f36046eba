"""Prometheus metrics (S43), served by any runtime with the prometheus_client library.

Per-schedule values are what the leader's health duty keeps in the database
(awa.cron_health, fire_stats, fire_lateness, health_meta), so a scrape of any runtime is
enough and no scrape computes anything per schedule: it reads those rows. Cardinality stays
bounded at 100k schedules: per-schedule series are emitted for at most `schedule_series`
schedules (unhealthy first, then by name; 0 turns them off), the rest is counted in
`awa_schedule_series_dropped`, and the per-health totals (`awa_schedules`) always cover
every schedule. Fires are counted per owner, queue and verdict, and lateness is a
histogram per queue, never per schedule.
"""

from __future__ import annotations

import threading
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

from awa_tui.engine.db import ConnectionSource
from awa_tui.engine.errors import AwaError, ValidationError
from awa_tui.engine.health.alive import serve, with_alive
from awa_tui.engine.health.listen import DEFAULT_SCHEDULE_SERIES, parse_addr
from awa_tui.engine.health.models import HEALTHS, UNHEALTHY, RuntimeAlive
from awa_tui.engine.health.rules import LATENESS_BUCKETS

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
JOBS_SQL = "SELECT queue, state, count(*) AS n FROM awa.jobs GROUP BY queue, state ORDER BY queue, state"
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

    @property
    def total(self) -> int:
        return sum(self.health_counts.values())


def read_metrics(conn: psycopg.Connection[Any], schedule_series: int) -> MetricsSnapshot:
    with conn.transaction():  # one snapshot of the database
        schedules = [ScheduleSeries(**r) for r in conn.execute(SCHEDULES_SQL, {"cap": schedule_series}).fetchall()] \
            if schedule_series > 0 else []
        counts = {r["health"]: r["n"] for r in conn.execute(COUNTS_SQL).fetchall()}
        fires = [(r["owner"], r["queue"], r["verdict"], r["fires"]) for r in conn.execute(FIRES_SQL).fetchall()]
        lateness: dict[str, list[tuple[float, int, float]]] = {}
        for r in conn.execute(LATENESS_SQL).fetchall():
            lateness.setdefault(r["queue"], []).append((r["le"], r["fires"], r["total"]))
        jobs = [(r["queue"], r["state"], r["n"]) for r in conn.execute(JOBS_SQL).fetchall()]
        meta = conn.execute(META_SQL).fetchone()
    return MetricsSnapshot(schedules, counts, fires, lateness, jobs, meta["evaluated_at"] if meta else None)


@dataclass
class RuntimeGauges:
    """What only this process knows: leadership and its own evaluator passes."""

    is_leader: Callable[[], bool] = field(default=lambda: False)
    last_due: int = 0


class AwaCollector(Collector):
    """Builds every awa_* family at scrape time from one database read."""

    def __init__(self, db: ConnectionSource, runtime: RuntimeGauges, schedule_series: int) -> None:
        self.db = db
        self.runtime = runtime
        self.schedule_series = schedule_series

    def collect(self) -> Iterator[Metric]:
        try:
            with self.db.connection() as conn:
                snap = read_metrics(conn, self.schedule_series)
        except AwaError:
            snap = None
        yield GaugeMetricFamily("awa_up", "1 when this runtime could read the database at this scrape",
                                value=0 if snap is None else 1)
        yield GaugeMetricFamily("awa_leader", "1 when this runtime is the leader", value=int(self.runtime.is_leader()))
        yield GaugeMetricFamily("awa_evaluator_due", "Schedules the last evaluator pass of this runtime examined",
                                value=self.runtime.last_due)
        if snap is None:
            return
        yield from _schedule_families(snap, self.schedule_series)
        yield from _fleet_families(snap)


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
    if snap.evaluated_at is not None:
        yield GaugeMetricFamily("awa_health_evaluated_timestamp_seconds",
                                "When the leader last evaluated health (stalled when old)", value=snap.evaluated_at)


class MetricsServer:
    """/metrics of one runtime over HTTP, on a daemon thread, until `stop`; and /alive, what
    `alive` says of the process (health/alive.py), when given."""

    def __init__(self, db: ConnectionSource, addr: str, *, is_leader: Callable[[], bool],
                 schedule_series: int = DEFAULT_SCHEDULE_SERIES,
                 alive: Callable[[], RuntimeAlive] | None = None) -> None:
        if isinstance(schedule_series, bool) or not isinstance(schedule_series, int) or schedule_series < 0:
            raise ValidationError(f"schedule_series: must be an integer >= 0, got {schedule_series!r}")
        self.host, self.port = parse_addr(addr)
        self.runtime = RuntimeGauges(is_leader=is_leader)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(AwaCollector(db, self.runtime, schedule_series))
        self.pass_seconds = Histogram("awa_evaluator_pass_seconds", "This runtime's evaluator passes",
                                      registry=self.registry,
                                      buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0))
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
        app = make_wsgi_app(self.registry)
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

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
