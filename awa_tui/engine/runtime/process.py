"""The runtime of one process: the state a running scheduler keeps (its loops, the last
pass, the sync tracker, the pass watch, the metrics server) and the duties it runs, apart
from the Client that declares the schedules. `client.runtime` is this object; the loops and
the leader's duties see it through the narrow protocols RuntimeHost and LeaderHost."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

import psycopg

from awa_tui.engine.core.errors import AwaError
from awa_tui.engine.core.session import Room, Session
from awa_tui.engine.runtime.identity import RuntimeIdentity
from awa_tui.engine.runtime.pooling import Route, short_refusal
from awa_tui.printable import printable_logger

if TYPE_CHECKING:
    from awa_tui.engine.actions import ops
    from awa_tui.engine.core.db import ConnectionSource
    from awa_tui.engine.firing import evaluator
    from awa_tui.engine.health import check as health_check
    from awa_tui.engine.health import rules as health_rules
    from awa_tui.engine.health.models import HealthPass, RuntimeAlive, UnservedKind
    from awa_tui.engine.jobs import store as job_store
    from awa_tui.engine.jobs import tracing as job_tracing
    from awa_tui.engine.jobs import worker as jobs
    from awa_tui.engine.jobs.context import Job
    from awa_tui.engine.jobs.handlers import HandlerSpec, SchedulePolicy
    from awa_tui.engine.jobs.slots import Slots
    from awa_tui.engine.jobs.tracing import Tracing
    from awa_tui.engine.jobs.worker import Worker
    from awa_tui.engine.ledger import retention
    from awa_tui.engine.ledger.models import PruneResult
    from awa_tui.engine.ownership import manifest as manifest_of
    from awa_tui.engine.ownership import reconcile
    from awa_tui.engine.ownership.manifest import Manifest
    from awa_tui.engine.read import blockers, events, passes
    from awa_tui.engine.read.blockers import PassWatch
    from awa_tui.engine.read.events import RecentEvents
    from awa_tui.engine.read.passes import RecentPasses
    from awa_tui.engine.runtime import alive as health_alive
    from awa_tui.engine.runtime import duties, evaluation, loops, reporter
    from awa_tui.engine.runtime import metrics as health_metrics
    from awa_tui.engine.runtime.duties import LeaderDuties
    from awa_tui.engine.runtime.loops import Runtime
    from awa_tui.engine.runtime.metrics import MetricsServer
    from awa_tui.engine.schedules.definition import Schedule
    from awa_tui.engine.sync import writer as syncing
    from awa_tui.engine.sync.writer import SyncTracker
else:
    evaluator = Room("awa_tui.engine.firing.evaluator")
    ops = Room("awa_tui.engine.actions.ops")
    health_rules = Room("awa_tui.engine.health.rules")
    health_check = Room("awa_tui.engine.health.check")
    retention = Room("awa_tui.engine.ledger.retention")
    manifest_of = Room("awa_tui.engine.ownership.manifest")
    reconcile = Room("awa_tui.engine.ownership.reconcile")
    passes = Room("awa_tui.engine.read.passes")
    events = Room("awa_tui.engine.read.events")
    health_alive = Room("awa_tui.engine.runtime.alive")
    blockers = Room("awa_tui.engine.read.blockers")
    duties = Room("awa_tui.engine.runtime.duties")
    evaluation = Room("awa_tui.engine.runtime.evaluation")
    loops = Room("awa_tui.engine.runtime.loops")
    reporter = Room("awa_tui.engine.runtime.reporter")
    job_store = Room("awa_tui.engine.jobs.store")
    jobs = Room("awa_tui.engine.jobs.worker")
    job_tracing = Room("awa_tui.engine.jobs.tracing")
    health_metrics = Room("awa_tui.engine.runtime.metrics")  # prometheus_client: only when serving
    syncing = Room("awa_tui.engine.sync.writer")

log = printable_logger("awa_tui")


class Declarations(Protocol):
    """What the runtime needs of the Client that owns it: its settings, its registry and the
    schema migration it runs before leading."""

    dsn: str
    leader_dsn: str
    application_name: str
    db: ConnectionSource
    read_only: bool
    operator: str
    owner: str | None
    authoritative: bool
    identity: RuntimeIdentity
    leader_lease: timedelta
    snapshot_interval: timedelta
    fleet_alert_grace: timedelta
    fleet_stall_after: timedelta
    catch_up_limit: int
    lock_timeout: timedelta
    statement_timeout: timedelta
    job_retention: timedelta
    job_keep: int
    worker_batch: int
    slots: Slots
    shutdown_grace: timedelta
    resources: Mapping[str, Any]
    job_log_level: int
    tracer_provider: object | None

    @property
    def policies(self) -> Mapping[str, SchedulePolicy]: ...

    @property
    def handlers(self) -> Mapping[str, HandlerSpec]: ...

    def registry(self) -> tuple[Mapping[str, Schedule], int]: ...

    def migrate(self) -> list[int]: ...


class RuntimeProcess(Session):
    """A process's scheduler: evaluation, sync, the worker, snapshots, the leader's duties."""

    def __init__(self, host: Declarations) -> None:
        super().__init__(host.db, read_only=host.read_only, operator=host.operator)
        self.host = host
        self._runtime: Runtime | None = None
        self._last_refusal: Route | None = None  # the stopped runtime's, for what is said after close()
        self._runs_worker = False
        self._close_lock = threading.Lock()
        self._closing = False  # close() has begun: /alive says stopping
        self._declared = False  # a snapshot was written outside a Runtime: close() ends it
        self._manifest: Manifest | None = None
        self._manifest_generation = -1
        self.last_reconcile: list[dict[str, Any]] | None = None
        self.last_pass: evaluator.PassResult | None = None
        self.on_pass: list[Callable[[evaluator.PassResult], None]] = []
        self.on_job: list[Callable[[Job, str], None]] = []
        self.on_job_timed: list[Callable[[Job, str, float], None]] = []  # /metrics: each attempt's seconds
        self.force_stop = threading.Event()  # a second signal: shutdown ends its grace at once
        self.metrics: MetricsServer | None = None  # serve_metrics(): /metrics of this runtime

    # The settings the loops and duties read (RuntimeHost), the Client's as they are now: an
    # app may label its sessions after building the Client (the reliability suite does).
    dsn = property(lambda self: self.host.dsn)
    leader_dsn = property(lambda self: self.host.leader_dsn)
    application_name = property(lambda self: self.host.application_name)
    identity = property(lambda self: self.host.identity)
    leader_lease = property(lambda self: self.host.leader_lease)
    snapshot_interval = property(lambda self: self.host.snapshot_interval)
    fleet_alert_grace = property(lambda self: self.host.fleet_alert_grace)
    fleet_stall_after = property(lambda self: self.host.fleet_stall_after)
    catch_up_limit = property(lambda self: self.host.catch_up_limit)
    lock_timeout = property(lambda self: self.host.lock_timeout)
    statement_timeout = property(lambda self: self.host.statement_timeout)
    owner = property(lambda self: self.host.owner)
    authoritative = property(lambda self: self.host.authoritative)
    job_retention = property(lambda self: self.host.job_retention)
    job_keep = property(lambda self: self.host.job_keep)
    handlers = property(lambda self: self.host.handlers)

    def _kept(self, name: str, value: Any) -> Any:
        """`value`, also kept as this runtime's attribute `name` (last_reconcile, metrics)."""
        setattr(self, name, value)
        return value

    # --- what the Client's one-step entry points run ---------------------------------------

    def sync(self) -> dict[str, int]:
        """Additive UPSERT of this process's schedules (S5); for an authoritative runtime,
        insert its new names owned by its owner and fail on a foreign-owned name (S23).
        After the first, a sync compares only what changed since (S50)."""
        from awa_tui.engine.ownership import declaration

        schedules, generation = self.host.registry()
        return self._write("sync", self.sync_tracker.sync, schedules, generation,
                           declaration.sync_writer(self.owner if self.authoritative else None))

    def evaluate(self, now: datetime | None = None) -> evaluator.PassResult:
        """One evaluator pass at `now` (DB time when omitted)."""
        return self._checked("evaluate", evaluation.run_pass, self, now, self._wake_reporter)

    def work_once(self, limit: int | None = None) -> list[tuple[Job, str]]:
        """Claim up to `limit` due jobs (the Client's worker_batch when omitted), run them, wait
        for all, record their outcomes."""
        return self._checked("work", self.worker.work_once, limit or self.host.worker_batch)

    @functools.cached_property
    def worker(self) -> Worker:
        """The jobs this process runs: its slots, executor and running attempts."""
        return jobs.Worker(self.db, self.handlers, slots=self.host.slots, claimed_by=self.identity.instance_id,
                           resources=self.host.resources, on_job=self.on_job, on_timed=self.on_job_timed,
                           job_log_level=self.host.job_log_level, policies=self.host.policies, tracing=self.tracing)

    @functools.cached_property
    def tracing(self) -> Tracing:
        """This process's spans of fires and jobs (off without a tracer provider)."""
        return job_tracing.Tracing(self.host.tracer_provider)

    def shutdown_worker(self) -> None:
        """Stop claiming; give running jobs the shutdown grace, then release them (S62)."""
        worker = self.__dict__.get("worker")  # made only if this process ran jobs
        if worker is not None:
            worker.shutdown(self.host.shutdown_grace.total_seconds(), self.force_stop,
                            keep_fresh=lambda: self.snapshot(is_leader=False))

    def start(self, *, run_worker: bool = True, lead: bool = True, migrate: bool = True) -> Runtime:
        """Start the runtime loops in background threads; returns the Runtime. `migrate`:
        whether a schema behind is migrated first (else refused in one line)."""
        return self._checked("run", self._start, run_worker, lead, migrate)

    def _start(self, run_worker: bool, lead: bool, migrate: bool) -> Runtime:
        if self._runtime is None:
            self._closing = False
            self.force_stop.clear()
            self._runs_worker = run_worker  # its snapshots say which kinds it runs (`check`)
            self.__dict__.pop("worker", None)  # a worker shut down before claims nothing: a new one
            self._runtime = loops.launch(self, self.host.migrate, self._parts, run_worker=run_worker, lead=lead,
                                         migrating=migrate)
        return self._runtime

    def _parts(self) -> None:
        """The loops' threads share these: made before any thread starts, never twice."""
        _ = (self.duties, self.recent_passes, self.recent_events, self.sync_tracker)

    @property
    def loops(self) -> Runtime | None:
        """The running loops (None before start() and after close())."""
        return self._runtime

    @property
    def leader_refusal(self) -> str | None:
        """Why this process's engine never competes for leadership (`pooler in transaction
        mode`), or None: its one log line may be written before anyone shows the log."""
        return short_refusal(self._runtime.elector.refused if self._runtime is not None else self._last_refusal)

    @property
    def is_leader(self) -> bool:
        return bool(self._runtime and self._runtime.is_leader)

    def serve_metrics(self, addr: str, *, schedule_series: int) -> MetricsServer:
        """Serve /metrics on HOST:PORT until close() (S43); a malformed or taken address
        raises a one-line error before anything runs."""
        if self.metrics is None:
            self.metrics = health_metrics.MetricsServer.serve(
                self.db, addr, is_leader=lambda: self.is_leader, schedule_series=schedule_series, alive=self.alive)
            self.on_job_timed.append(self.metrics.observe_job)
        return self.metrics

    def mark_stopped(self) -> None:
        """A forced stop (a third signal): this runtime's row marked stopped now, whatever
        the clean stop had reached; a failure is logged, the process is leaving anyway."""
        if self.read_only:
            return
        # A connection of its own, never the pool's: the clean stop this signal interrupts may be
        # closing the pool or holding its connections, and a wait here would hang the exit.
        from awa_tui.engine.core.db import connect

        try:
            with connect(self.dsn, application_name=f"{self.application_name} stop") as conn:
                reporter.mark_stopped(conn, self.identity.instance_id)
        except (AwaError, psycopg.Error) as exc:
            log.warning("could not mark the runtime stopped: %s", exc)

    def close(self) -> None:
        """Stop the loops (final snapshot, leader lock released), the metrics server and the
        pass watch. Safe from several threads at once (a signal handler and a `finally`):
        the first caller does the work, the others wait until it is done."""
        self._closing = True
        with self._close_lock:
            runtime, self._runtime = self._runtime, None
            self._runs_worker = False
            if runtime is not None:
                self._last_refusal = runtime.elector.refused
                runtime.stop()
            elif self._declared:
                # A clean close ends the declaration at once; a dead runtime just goes stale.
                try:
                    self.snapshot(stopped=True)
                except AwaError as exc:
                    log.warning("final snapshot failed: %s", exc)
            self._declared = False
            if self.metrics is not None:
                self.on_job_timed.remove(self.metrics.observe_job)
                self.metrics.stop()
                self.metrics = None
            worker = self.__dict__.get("worker")
            if worker is not None:
                worker.close()
            watch = self.__dict__.get("pass_watch")  # made by the first pass only
            if watch is not None:
                watch.close()

    # --- the runtime's parts and duties ----------------------------------------------------

    @functools.cached_property
    def sync_tracker(self) -> SyncTracker:
        """What the next sync must compare (S50)."""
        return syncing.SyncTracker()

    @functools.cached_property
    def duties(self) -> LeaderDuties:
        return duties.LeaderDuties(self)

    @functools.cached_property
    def pass_timeouts(self) -> evaluator.Timeouts:
        return evaluator.Timeouts.of(self.lock_timeout, self.statement_timeout)

    @functools.cached_property
    def pass_watch(self) -> PassWatch:
        """Who blocks a pass that waits (S59), read on a connection of its own."""
        return blockers.watch(self.db, self.lock_timeout)

    @functools.cached_property
    def recent_passes(self) -> RecentPasses:
        """Carried by the snapshot (the runtimes page shows them)."""
        return passes.RecentPasses()

    @functools.cached_property
    def recent_events(self) -> RecentEvents:
        """This process's last events (became leader, lost the lead, a pass timed out, refused
        to lead, started, stopped), carried by the snapshot (the runtime events screen)."""
        return events.RecentEvents()

    def _wake_reporter(self) -> None:
        """A pass timed out: the reporter writes the snapshot that carries it now."""
        if self._runtime is not None:
            self._runtime.elector.changed.set()

    def leader_pass(self) -> None:
        """What the leader does every second (engine/runtime/duties.py): evaluate, and
        keep house, reconcile owners and judge health when they are due."""
        self.duties.run_pass()

    def leader_services(self) -> None:
        """The leader's services that are due (housekeeping, reconciliation, health), on
        the runtime's duties thread, apart from the evaluator's fires."""
        self.duties.run_services()

    def prune_runtimes(self) -> int:
        """Delete snapshot rows of runtimes stopped or silent for over a day."""
        return self._write("prune runtimes", reporter.prune_runtimes)

    def rescue_orphaned_jobs(self) -> list[dict[str, Any]]:
        """Return jobs left running by a stopped or stale runtime to the queue."""
        return job_store.rescued(self._write("rescue", job_store.rescue_orphaned_jobs))

    def reconcile(self, now: datetime | None = None, *, wait: bool = True) -> list[dict[str, Any]]:
        """One reconciliation pass over every owner (S25, S26); DB time when `now` is omitted.

        Returns one dict per owner: owner, now, manifest_hash, inserted / updated / retired
        (schedule names), certified, agreement_since, grace_remaining_s, blockers, skipped
        (only with wait=False, when the protocol lock was busy).
        """
        return self._kept("last_reconcile", self._write("reconcile", reconcile.reconcile, now, wait=wait))

    def end_pauses(self, now: datetime | None = None) -> list[tuple[str, datetime]]:
        """The leader's pause-end duty (S65): resume the schedules whose pause has reached its
        end at `now` (DB time when omitted), audited as `awa-autoresume` with this runtime."""
        return self._write("end pauses", ops.end_pauses, now, runtime=str(self.identity.instance_id))

    def unserved_kinds(self, now: datetime | None = None) -> list[UnservedKind]:
        """Kinds whose jobs wait while no live runtime runs their handler (the leader logs them)."""
        return self._read(health_check.unserved_kinds, now)

    def evaluate_health(self, now: datetime | None = None) -> HealthPass:
        """The leader's health duty (S42): judge every schedule at `now` (DB time when
        omitted), record transitions, count fires for the metrics."""
        return self._write("evaluate health", health_rules.evaluate_health, now, instance_id=self.identity.instance_id)

    @property
    def manifest(self) -> Manifest | None:
        """The canonical manifest of an authoritative runtime (None otherwise); made again
        when a schedule is registered."""
        schedules, generation = self.host.registry()
        if self._manifest_generation != generation:
            self._manifest = manifest_of.declared_manifest(self.owner if self.authoritative else None,
                                                           list(schedules.values()))
            self._manifest_generation = generation
        return self._manifest

    def snapshot(
        self, *, is_leader: bool = False, stopped: bool = False, now: datetime | None = None
    ) -> dict[str, Any] | None:
        """Write this runtime's snapshot and, when authoritative, publish its manifest (S24).
        A read-only console is an observer, not a runtime: it writes none."""
        return None if self.read_only else self._read(
            reporter.write_snapshot, self.identity, is_leader=is_leader, stopped=stopped, manifest=self.manifest,
            now=now, passes=self.recent_passes.latest(), kinds=self._served_kinds(), events=self.recent_events,
            refusal=self.leader_refusal)

    def _served_kinds(self) -> list[str] | None:
        """The kinds this runtime's worker runs: None unless its worker loop runs."""
        return sorted(self.handlers) if self._runs_worker and self.handlers else None

    def publish(self, now: datetime | None = None) -> dict[str, Any]:
        """Publish the snapshot and declaration now (what the reporter loop does).

        Returns {instance_id, owner, at, stopped, manifest_hash, agreement_since?}. A
        Client that published without start() ends its declaration on close().
        """
        return self._checked("publish", self._publish, now)

    def _publish(self, now: datetime | None) -> dict[str, Any]:
        if self._runtime is None:
            self._declared = True
        published = self.snapshot(is_leader=self.is_leader, now=now)
        assert published is not None
        return published

    def alive(self) -> RuntimeAlive:
        """What this process says at /alive (`awa-tui check --alive`): its identity, whether
        it is starting, running or stopping, and what each of its loops is doing."""
        return health_alive.runtime_alive(self.identity, self._runtime, self._closing)

    def prune_finished_jobs(self) -> PruneResult:
        """The leader's retention round: a bounded share of the housekeeping (duties.py)."""
        return self._write("prune jobs", retention.prune_jobs, self.job_retention, keep=self.job_keep,
                           max_batches=duties.PRUNE_BATCHES_PER_ROUND, budget_s=duties.PRUNE_BUDGET_S,
                           cursor=self.retention_cursor)

    @functools.cached_property
    def retention_cursor(self) -> retention.RetentionCursor:
        """Where the next retention round continues (ledger/retention.py)."""
        return retention.RetentionCursor()
