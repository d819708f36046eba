"""Client: the public face of the engine. Registration (S1), one-step entry points for
tests and operators (migrate, sync, evaluate, snapshot, work_once), the runtime
(run/start/close), and the operator actions and read models; each hands its work to the
room of the engine that does it."""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from awa_tui.config import default_operator, resolve_dsn, resolve_leader_dsn
from awa_tui.engine import limits
from awa_tui.engine.db import ConnectionSource, dsn_problem
from awa_tui.engine.errors import AwaError, ValidationError
from awa_tui.engine.health.listen import DEFAULT_SCHEDULE_SERIES
from awa_tui.engine.read.backend import FEATURES
from awa_tui.engine.runtime.identity import RuntimeIdentity
from awa_tui.printable import printable_logger


class _Room:
    """A room's module, imported at its first use: `views.get_schedule` reads as the module
    it names, and `awa-tui cron show` loads the views it reads, never the evaluator, the
    runtime or the ledger (issue 18, tests/cli/test_cli_lazy.py)."""

    __slots__ = ("_path",)

    def __init__(self, path: str) -> None:
        self._path = path

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module(self._path), name)


if TYPE_CHECKING:
    from awa_tui.engine import migrations, standby
    from awa_tui.engine.calendars import store as calendars
    from awa_tui.engine.calendars.models import CalendarInfo, CalendarSummary
    from awa_tui.engine.firing import backfill as backfills
    from awa_tui.engine.firing import evaluator, preview
    from awa_tui.engine.firing.backfill import BackfillResult
    from awa_tui.engine.firing.preview import ResumePreview
    from awa_tui.engine.health import alive as health_alive
    from awa_tui.engine.health import check as health_check
    from awa_tui.engine.health import metrics as health_metrics
    from awa_tui.engine.health import rules as health_rules
    from awa_tui.engine.health.metrics import MetricsServer
    from awa_tui.engine.health.models import CheckReport, HealthPass, RegisteredRuntime, RuntimeAlive, Transition
    from awa_tui.engine.ledger import jobs as ledger_jobs
    from awa_tui.engine.ledger import retention, trail, verdicts
    from awa_tui.engine.ledger import why as ledger_why
    from awa_tui.engine.ledger.models import (
        AuditPage,
        JobChange,
        JobDetail,
        JobsPage,
        JobSummary,
        LastResult,
        LedgerView,
        PruneResult,
        Verdict,
        Why,
    )
    from awa_tui.engine.operations import bulk as bulk_ops
    from awa_tui.engine.operations import ops
    from awa_tui.engine.ownership import declaration, lifecycle, reconcile
    from awa_tui.engine.ownership import manifest as manifest_of
    from awa_tui.engine.ownership.manifest import Manifest
    from awa_tui.engine.read import page, results, views
    from awa_tui.engine.read.models import (
        AuditEntry,
        Fire,
        NextFire,
        OwnerChange,
        OwnerPlan,
        OwnerSummary,
        QueueDrained,
        QueueRow,
        QueueState,
        RuntimeRow,
        ScheduleDetail,
        ScheduleInfo,
        SchedulePage,
        ScheduleRow,
        ScheduleState,
        TriggeredJob,
    )
    from awa_tui.engine.runtime import blockers, duties, evaluation, loops, passes, reporter, worker
    from awa_tui.engine.runtime.blockers import PassWatch
    from awa_tui.engine.runtime.duties import LeaderDuties
    from awa_tui.engine.runtime.leader import Leadership
    from awa_tui.engine.runtime.loops import Runtime
    from awa_tui.engine.runtime.passes import RecentPasses
    from awa_tui.engine.schedules import definition, overrides
    from awa_tui.engine.schedules import sync as syncing
    from awa_tui.engine.schedules.definition import Schedule
    from awa_tui.engine.schedules.sync import SyncTracker
    from awa_tui.engine.standby import ServerRole
    from awa_tui.filters import Filter
else:
    migrations = _Room("awa_tui.engine.migrations")
    standby = _Room("awa_tui.engine.standby")
    calendars = _Room("awa_tui.engine.calendars.store")
    backfills = _Room("awa_tui.engine.firing.backfill")
    evaluator = _Room("awa_tui.engine.firing.evaluator")
    preview = _Room("awa_tui.engine.firing.preview")
    health_alive = _Room("awa_tui.engine.health.alive")
    health_check = _Room("awa_tui.engine.health.check")
    health_metrics = _Room("awa_tui.engine.health.metrics")  # prometheus_client: only when serving
    health_rules = _Room("awa_tui.engine.health.rules")
    ledger_jobs = _Room("awa_tui.engine.ledger.jobs")
    retention = _Room("awa_tui.engine.ledger.retention")
    trail = _Room("awa_tui.engine.ledger.trail")
    verdicts = _Room("awa_tui.engine.ledger.verdicts")
    ledger_why = _Room("awa_tui.engine.ledger.why")
    bulk_ops = _Room("awa_tui.engine.operations.bulk")
    ops = _Room("awa_tui.engine.operations.ops")
    declaration = _Room("awa_tui.engine.ownership.declaration")
    lifecycle = _Room("awa_tui.engine.ownership.lifecycle")
    reconcile = _Room("awa_tui.engine.ownership.reconcile")
    manifest_of = _Room("awa_tui.engine.ownership.manifest")
    results = _Room("awa_tui.engine.read.results")
    page = _Room("awa_tui.engine.read.page")
    views = _Room("awa_tui.engine.read.views")
    blockers = _Room("awa_tui.engine.runtime.blockers")
    duties = _Room("awa_tui.engine.runtime.duties")
    evaluation = _Room("awa_tui.engine.runtime.evaluation")
    loops = _Room("awa_tui.engine.runtime.loops")
    passes = _Room("awa_tui.engine.runtime.passes")
    reporter = _Room("awa_tui.engine.runtime.reporter")
    worker = _Room("awa_tui.engine.runtime.worker")
    definition = _Room("awa_tui.engine.schedules.definition")
    overrides = _Room("awa_tui.engine.schedules.overrides")
    syncing = _Room("awa_tui.engine.schedules.sync")

log = printable_logger("awa_tui")

F = TypeVar("F", bound=Callable[..., Any])
P = ParamSpec("P")


def _parameters_of(
    build: Callable[P, Schedule],
) -> Callable[[Callable[..., Schedule]], Callable[Concatenate[Any, P], Schedule]]:
    """Give the decorated method `build`'s parameters for type checkers: they and their
    defaults are written once, on `Schedule.build`."""

    def typed(method: Callable[..., Schedule]) -> Callable[Concatenate[Any, P], Schedule]:
        return method

    return typed


if TYPE_CHECKING:
    _build_parameters = _parameters_of(Schedule.build)
else:  # the decorator changes nothing at run time: Schedule loads when a schedule is declared
    def _build_parameters(method: F) -> F:
        return method


def package_version() -> str:
    from awa_tui import __version__

    return __version__


_T = TypeVar("_T")



class Client:
    """The engine's public face. Each public method hands its work to the room that does it
    (engine/<room>/), in one line: the helpers below add only what every call shares (a
    pooled connection, the read-only refusal, the operator's label). The rooms load on
    first use, so a command pays only for what it calls (issue 18)."""

    def __init__(
        self,
        dsn: str | None = None,
        *,
        leader_dsn: str | None = None,
        owner: str | None = None,
        authoritative: bool = False,
        retire_grace: timedelta = timedelta(minutes=10),
        snapshot_interval: timedelta = timedelta(seconds=10),
        read_only: bool = False,
        operator: str | None = None,
        catch_up_limit: int = limits.CATCH_UP_LIMIT,
        worker_queues: list[str] | None = None,
        worker_batch: int = 10,
        application_name: str = "awa-tui",
        leader_lease: timedelta = limits.DEFAULT_LEASE,
        job_retention: timedelta = limits.DEFAULT_HORIZON,
        job_keep: int = limits.DEFAULT_KEEP,
        max_lateness: timedelta = timedelta(seconds=limits.DEFAULT_MAX_LATENESS_S),
        lock_timeout: timedelta | None = None,
        statement_timeout: timedelta = limits.DEFAULT_STATEMENT_TIMEOUT,
    ) -> None:
        resolved = dsn if dsn is not None else resolve_dsn()
        if resolved is None:
            raise AwaError("no database configured: pass dsn= or set AWA_DATABASE_URL")
        if authoritative and not owner:
            raise ValidationError("owner: an authoritative runtime must name its owner")
        if owner is not None:
            manifest_of.check_owner(owner)
        limits.check_runtime_timings(retire_grace, snapshot_interval, leader_lease)
        self.dsn = resolved
        # S57: the leader lock connection may bypass a transaction pooler the rest goes through.
        # Its variable is read only beside AWA_DATABASE_URL's (dsn=None): never paired with
        # a dsn given here, which may name another database.
        leader = leader_dsn if leader_dsn is not None or dsn is not None else resolve_leader_dsn()
        if leader is not None:
            problem = dsn_problem(leader)
            if problem is not None:
                raise ValidationError(f"leader_dsn: the database URL could not be parsed: {problem}")
        self.leader_dsn = leader or resolved
        # S41: the max_lateness of every schedule registered here that declares none.
        self.max_lateness = limits.check_seconds("max_lateness", max_lateness)
        self.leader_lease = leader_lease
        # S59: how long a pass's statement may wait for a lock, and run.
        self.lock_timeout, self.statement_timeout = limits.pass_timeouts(lock_timeout, statement_timeout, leader_lease)
        self.job_retention = limits.check_horizon(job_retention)
        self.job_keep = limits.check_keep(job_keep)
        self.owner = owner
        self.authoritative = authoritative
        self.retire_grace = retire_grace
        self.snapshot_interval = snapshot_interval
        self.read_only = read_only
        # An explicit label is checked now (an empty one is an error, not a default).
        self.operator = default_operator() if operator is None else ops.check_operator(operator)
        self.catch_up_limit = catch_up_limit
        self.worker_queues = worker_queues
        self.worker_batch = worker_batch
        self.application_name = application_name
        self.db = ConnectionSource(resolved, application_name, read_only=read_only)
        self._schedules: dict[str, Schedule] = {}
        self._generation = 0  # bumped by periodic(): the registry changed since the last sync
        self.handlers: dict[str, worker.Handler] = {}
        self.identity = RuntimeIdentity(
            version=package_version(),
            snapshot_interval=snapshot_interval,
            owner=owner,
            authoritative=authoritative,
            retire_grace=retire_grace if authoritative else None,
        )
        self._runtime: Runtime | None = None
        self._close_lock = threading.Lock()
        self._closing = False  # close() has begun: /alive says stopping
        self._declared = False  # a snapshot was written outside a Runtime: close() ends it
        self.last_reconcile: list[dict[str, Any]] | None = None
        self.last_pass: evaluator.PassResult | None = None
        self.on_pass: list[Callable[[evaluator.PassResult], None]] = []
        self.on_job: list[Callable[[worker.Job, str], None]] = []
        self.metrics: MetricsServer | None = None  # serve_metrics(): /metrics of this runtime

    # --- what every call shares --------------------------------------------------------------

    def _read(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """A function of a room (its first parameter the connection), on a pooled one."""
        with self.db.connection() as conn:
            return fn(conn, *args, **kwargs)

    def _checked(self, action: str, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """`fn` once the client may write; a dry run (`dry_run=True`) writes nothing, so it
        runs on a read-only client too."""
        if not kwargs.get("dry_run"):
            ops.require_writable(self.read_only, action)
        return fn(*args, **kwargs)

    def _write(self, action: str, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """`_checked` on a pooled connection."""
        return self._checked(action, self._read, fn, *args, **kwargs)

    def _op(self, action: str, fn: Callable[..., Any], *args: Any, operator: str | None = None,
            model: Callable[..., _T] | None = None, **kwargs: Any) -> Any:
        """An operator action, labelled with `operator` (this client's when omitted): the
        room's function takes it after its own arguments. `model` turns the row the room
        wrote (engine-internal) into the typed result of read/results.py."""
        done = self._write(action, fn, *args, self.operator if operator is None else operator, **kwargs)
        return done if model is None else model(**done)

    def _kept(self, name: str, value: _T) -> _T:
        """`value`, also kept as this client's attribute `name` (last_pass, metrics...)."""
        setattr(self, name, value)
        return value

    # A runtime's parts, made on first use (a command that only reads never loads them);
    # start() makes them before the loops' threads run.

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

    # --- registration (S1, S2) -------------------------------------------------------

    @_build_parameters
    def periodic(self, *args: Any, **kwargs: Any) -> Schedule:
        """Declare a schedule (the parameters of `Schedule.build`); validated at once,
        written at the next sync."""
        return self._registered(definition.declare(self._schedules, self.max_lateness, *args, **kwargs))

    def _registered(self, schedule: Schedule) -> Schedule:
        """The registry changed: the next sync compares it, the manifest is made again."""
        self._generation += 1
        self.__dict__.pop("manifest", None)
        return schedule

    @property
    def schedules(self) -> list[Schedule]:
        return list(self._schedules.values())

    def register_handler(self, kind: str, handler: worker.Handler) -> None:
        self.handlers[worker.check_kind(kind)] = handler

    def handler(self, kind: str) -> Callable[[F], F]:
        """Decorator form of `register_handler`."""

        def wrap(fn: F) -> F:
            self.register_handler(kind, fn)
            return fn

        return wrap

    # --- one-step entry points ------------------------------------------------------------

    def migrate(self) -> list[int]:
        return self._checked("migrate", migrations.migrate, self.dsn)

    def check_schema(self) -> int:
        return self._read(migrations.check_version)

    def sync(self) -> dict[str, int]:
        """Additive UPSERT of this process's schedules (S5); for an authoritative runtime,
        insert its new names owned by its owner and fail on a foreign-owned name (S23).
        After the first, a sync compares only what changed since (S50)."""
        return self._write("sync", self.sync_tracker.sync, self._schedules, self._generation,
                           declaration.sync_writer(self.owner if self.authoritative else None))

    def evaluate(self, now: datetime | None = None) -> evaluator.PassResult:
        """One evaluator pass at `now` (DB time when omitted)."""
        return self._checked("evaluate", evaluation.run_pass, self, now, self._wake_reporter)

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
        return worker.rescued(self._write("rescue", worker.rescue_orphaned_jobs))

    def reconcile(self, now: datetime | None = None, *, wait: bool = True) -> list[dict[str, Any]]:
        """One reconciliation pass over every owner (S25, S26); DB time when `now` is omitted.

        Returns one dict per owner: owner, now, manifest_hash, inserted / updated / retired
        (schedule names), certified, agreement_since, grace_remaining_s, blockers, skipped
        (only with wait=False, when the protocol lock was busy).
        """
        return self._kept("last_reconcile", self._write("reconcile", reconcile.reconcile, now, wait=wait))

    def evaluate_health(self, now: datetime | None = None) -> HealthPass:
        """The leader's health duty (S42): judge every schedule at `now` (DB time when
        omitted), record transitions, count fires for the metrics."""
        return self._write("evaluate health", health_rules.evaluate_health, now, instance_id=self.identity.instance_id)

    def check(self, *, owner: str | None = None, schedule: str | None = None, tag: str | None = None,
              now: datetime | None = None) -> CheckReport:
        """`awa-tui check` (S43): unhealthy schedules and fleet problems, with the exit code."""
        return self._read(health_check.check, owner=owner, schedule=schedule, tag=tag, now=now)

    def registered_runtimes(self, hostname: str, *, now: datetime | None = None) -> list[RegisteredRuntime]:
        """`awa-tui check --registered`: the runtimes on `hostname` with a fresh snapshot."""
        return self._read(health_check.registered, hostname, now)

    def health_history(self, name: str, limit: int = 20) -> list[Transition]:
        """A schedule's health transitions, newest first."""
        return self._read(health_check.transitions, name, limit=limit)

    def plan(self, owner: str | None = None, now: datetime | None = None) -> list[OwnerPlan]:
        """Preview of reconciliation per owner, from one snapshot, changing nothing (S34).

        See `awa_tui.engine.ownership.reconcile.plan` for what each part means (inserts,
        updates, retirements, conflicts, blockers with code and message, agreement clock).
        """
        return self._read(reconcile.owner_plans, owner, now)

    def list_owners(self, now: datetime | None = None) -> list[OwnerSummary]:
        """One summary per owner; see `awa_tui.engine.ownership.reconcile.list_owners`."""
        return self._read(reconcile.owner_summaries, now)

    @functools.cached_property
    def manifest(self) -> Manifest | None:
        """The canonical manifest of an authoritative runtime (None otherwise); made again
        when a schedule is registered."""
        return manifest_of.declared_manifest(self.owner if self.authoritative else None, self.schedules)

    def work_once(self, limit: int | None = None) -> list[tuple[worker.Job, str]]:
        return worker.announce(self._write("work", worker.work_once, self.handlers, limit=limit or self.worker_batch,
                                           queues=self.worker_queues, claimed_by=self.identity.instance_id),
                               self.on_job)

    def snapshot(
        self, *, is_leader: bool = False, stopped: bool = False, now: datetime | None = None
    ) -> dict[str, Any] | None:
        """Write this runtime's snapshot and, when authoritative, publish its manifest (S24).
        A read-only console is an observer, not a runtime: it writes none."""
        return None if self.read_only else self._read(
            reporter.write_snapshot, self.identity, is_leader=is_leader, stopped=stopped, manifest=self.manifest,
            now=now, passes=self.recent_passes.latest())

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

    # --- the runtime ----------------------------------------------------------------------

    def start(self, *, run_worker: bool = True, lead: bool = True) -> Runtime:
        """Start the runtime loops in background threads; returns the Runtime."""
        return self._checked("run", self._start, run_worker, lead)

    def _start(self, run_worker: bool, lead: bool) -> Runtime:
        if self._runtime is None:
            self._closing = False
            self._runtime = loops.launch(self, self.migrate, self._runtime_parts, run_worker=run_worker, lead=lead)
        return self._runtime

    def _runtime_parts(self) -> None:
        """The loops' threads share these: made before any thread starts, never twice."""
        _ = (self.duties, self.recent_passes, self.sync_tracker)

    def serve_metrics(self, addr: str, *, schedule_series: int = DEFAULT_SCHEDULE_SERIES) -> MetricsServer:
        """Serve /metrics on HOST:PORT until close() (S43); a malformed or taken address
        raises a one-line error before anything runs."""
        return self._kept("metrics", self.metrics or health_metrics.MetricsServer.serve(
            self.db, addr, is_leader=lambda: self.is_leader, schedule_series=schedule_series, alive=self.alive))

    @property
    def is_leader(self) -> bool:
        return bool(self._runtime and self._runtime.is_leader)

    def alive(self) -> RuntimeAlive:
        """What this process says at /alive (`awa-tui check --alive`): its identity, whether
        it is starting, running or stopping, and what each of its loops is doing."""
        return health_alive.runtime_alive(self.identity, self._runtime, self._closing)

    def run(self, stop: threading.Event | None = None) -> None:
        """Run until `stop` is set or SIGINT/SIGTERM arrives; then close cleanly."""
        loops.run_until_stopped(self.start, self.close, stop)

    def close(self) -> None:
        """Stop the loops (final snapshot, leader lock released) and close connections.

        Safe from several threads at once (a signal handler and a `finally`): the first
        caller does the work, the others wait until it is done."""
        self._closing = True
        with self._close_lock:
            runtime, self._runtime = self._runtime, None
            if runtime is not None:
                runtime.stop()
            elif self._declared:
                # A clean close ends the declaration at once; a dead runtime just goes stale.
                try:
                    self.snapshot(stopped=True)
                except AwaError as exc:
                    log.warning("final snapshot failed: %s", exc)
            self._declared = False
            if self.metrics is not None:
                self.metrics.stop()
                self.metrics = None
            watch = self.__dict__.get("pass_watch")  # made by the first pass only
            if watch is not None:
                watch.close()
            self.db.close_all()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- operator actions (S16-S18, S20): operations/ops.py, schedules/overrides.py --------

    def pause(self, name: str, *, operator: str | None = None) -> ScheduleState:
        return self._op("pause", ops.pause, name, operator=operator, model=results.ScheduleState)

    def resume(self, name: str, *, operator: str | None = None) -> ScheduleState:
        return self._op("resume", ops.resume, name, operator=operator, model=results.ScheduleState)

    def trigger(self, name: str, *, operator: str | None = None) -> TriggeredJob:
        return self._op("trigger", ops.trigger, name, operator=operator, model=results.TriggeredJob)

    def backfill(self, name: str, from_at: datetime, to_at: datetime, *, dry_run: bool = False,
                 max_count: int = limits.BACKFILL_LIMIT, operator: str | None = None,
                 now: datetime | None = None) -> BackfillResult:
        """One job per instant of [from_at, to_at] that never fired (engine/firing/backfill.py);
        a dry run only counts them (and works on a read-only client)."""
        return self._op("backfill", backfills.backfill, name, from_at, to_at, operator=operator, dry_run=dry_run,
                        max_count=max_count, now=now, horizon=self.job_retention)

    def remove(self, name: str, *, operator: str | None = None) -> ScheduleState:
        """The row as it was before it was deleted."""
        return self._op("remove", ops.remove, name, operator=operator, model=results.ScheduleState)

    def override(self, name: str, request: overrides.OverrideRequest, *,
                 operator: str | None = None) -> ScheduleState:
        """Override the expression, zone, args, queue or priority (issue 16); the row after."""
        return self._op("override", overrides.override, name, operator=operator, request=request,
                        model=results.ScheduleState)

    def reset_override(self, name: str, *, operator: str | None = None) -> ScheduleState:
        """Return an overridden schedule to its code definition; the row after."""
        return self._op("reset", overrides.reset, name, operator=operator, model=results.ScheduleState)

    # --- owner lifecycle (S23, S27-S29, S31): ownership/lifecycle.py ------------------------

    def adopt(self, name: str, owner: str, *, operator: str | None = None,
              now: datetime | None = None) -> ScheduleState:
        """Give an unowned schedule to `owner`; returns the schedule's state after."""
        return self._op("adopt", lifecycle.adopt, name, owner, operator=operator, now=now, model=results.ScheduleState)

    def transfer(self, name: str, to_owner: str, *, operator: str | None = None,
                 now: datetime | None = None) -> ScheduleState:
        """Move an owned schedule to another owner; voids both owners' certificates."""
        return self._op("transfer", lifecycle.transfer, name, to_owner, operator=operator, now=now,
                        model=results.ScheduleState)

    def retire(self, name: str, *, operator: str | None = None, now: datetime | None = None) -> ScheduleState:
        """Tombstone a schedule: it keeps its row, never fires, cannot be triggered."""
        return self._op("retire", lifecycle.retire, name, operator=operator, now=now, model=results.ScheduleState)

    def restore(self, name: str, *, operator: str | None = None, now: datetime | None = None) -> ScheduleState:
        """Clear a tombstone; evaluation resumes from now, nothing from the retired period."""
        return self._op("restore", lifecycle.restore, name, operator=operator, now=now, model=results.ScheduleState)

    def retire_owner(self, owner: str, *, operator: str | None = None,
                     now: datetime | None = None) -> OwnerChange:
        """Retire every active schedule of an owner: the names retired now."""
        return self._op("retire owner", lifecycle.retire_owner, owner, operator=operator, now=now,
                        model=results.OwnerChange)

    def restore_owner(self, owner: str, *, operator: str | None = None,
                      now: datetime | None = None) -> OwnerChange:
        """Restore every retired schedule of an owner: the names restored now."""
        return self._op("restore owner", lifecycle.restore_owner, owner, operator=operator, now=now,
                        model=results.OwnerChange)

    # --- bulk actions on a selection: names or a parsed filter (operations/bulk.py) ---------

    def bulk(
        self, action: str, names: Sequence[str] | None = None, *, where: Filter | None = None,
        owner: str | None = None, dry_run: bool = False, batch_size: int = limits.BATCH_SIZE,
        operator: str | None = None, now: datetime | None = None,
    ) -> bulk_ops.BulkResult:
        """pause/resume/trigger/retire/restore/adopt (to `owner`) every selected schedule,
        one transaction per batch; a row whose state refuses is skipped with the reason.
        A dry run reports what would be done and writes nothing (also when read-only)."""
        return self._op(f"bulk {action}", bulk_ops.run_bulk, action, names, operator=operator, where=where,
                        owner=owner, dry_run=dry_run, batch_size=batch_size, now=now)

    def adopt_declared(
        self, owner: str, *, dry_run: bool = False, batch_size: int = limits.BATCH_SIZE,
        operator: str | None = None, now: datetime | None = None,
    ) -> bulk_ops.BulkResult:
        """Adopt for `owner` every unowned schedule its fresh declarations list."""
        return self._op("adopt declared", bulk_ops.adopt_declared, owner, operator=operator, dry_run=dry_run,
                        batch_size=batch_size, now=now)

    def queue_pause(self, queue: str, *, operator: str | None = None) -> QueueState:
        return self._op("queue pause", ops.queue_pause, queue, operator=operator, model=results.QueueState)

    def queue_resume(self, queue: str, *, operator: str | None = None) -> QueueState:
        return self._op("queue resume", ops.queue_resume, queue, operator=operator, model=results.QueueState)

    def queue_drain(self, queue: str, *, operator: str | None = None) -> QueueDrained:
        return self._op("queue drain", ops.queue_drain, queue, operator=operator, model=results.QueueDrained)

    # --- calendars (S56): calendars/store.py ---------------------------------------------------

    def set_calendar(self, name: str, dates: Any, *, operator: str | None = None) -> CalendarInfo:
        """Create or replace calendar `name`: dates and inclusive (start, end) date pairs
        (`calendars/files.parse_dates` reads them from a file). Audited."""
        return self._op("calendar set", calendars.set_calendar_dates, name, dates, operator=operator)  # type: ignore[no-any-return]

    def delete_calendar(self, name: str, *, operator: str | None = None) -> CalendarInfo:
        """Delete calendar `name`; refused while a schedule names it. Audited."""
        return self._op("calendar delete", calendars.delete_calendar, name, operator=operator)  # type: ignore[no-any-return]

    def list_calendars(self) -> list[CalendarSummary]:
        return self._read(calendars.list_calendars)

    def get_calendar(self, name: str) -> CalendarInfo:
        return self._read(calendars.show_calendar, name)

    # --- read models: read/views.py, firing/preview.py --------------------------------------

    def list_schedules(
        self, filter_text: str | None = None, limit: int = 100000, *, where: Filter | None = None,
        now: datetime | None = None,
    ) -> list[ScheduleRow]:
        """Schedules in name order; `where` is a parsed filter (awa_tui/filters.py)."""
        return self._read(views.list_schedules, filter_text=filter_text, limit=limit, where=where, now=now)

    def get_schedule(self, name: str) -> ScheduleInfo:
        return self._read(views.get_schedule, name)

    def next_fires(self, name: str, count: int = 5, *, after: datetime | None = None) -> list[NextFire]:
        return self._read(views.next_fires, name, count, after=after)

    def resume_preview(self, name: str, *, now: datetime | None = None) -> ResumePreview:
        """What resuming the paused schedule `name` would fire now (DB time when omitted),
        by this client's catch-up cap; reads only."""
        return self._read(preview.resume_preview, name, now, catch_up_limit=self.catch_up_limit)

    def recent_fires(self, name: str, limit: int = 10) -> list[Fire]:
        return self._read(views.recent_fires, name, limit)

    def list_queues(self) -> list[QueueRow]:
        return self._read(views.list_queues)

    def list_runtimes(self, now: datetime | None = None) -> list[RuntimeRow]:
        """Runtime snapshots; `role` (leader / stalled / follower) is the leader lock's
        holder's (pg_locks), `is_leader` what the snapshot last reported."""
        return self._read(views.list_runtimes, now)

    def leadership(self, now: datetime | None = None) -> Leadership:
        """Who holds the leader lock, and whether its lease has expired (STALLED)."""
        return self._read(views.leadership, now)

    def schedule_page(
        self,
        filter_text: str | None = None,
        *,
        sort: str = "name",
        descending: bool = False,
        limit: int = 1000,
        now: datetime | None = None,
        where: Filter | None = None,
        counts: bool = True,
    ) -> SchedulePage:
        """One filtered, sorted page of schedules with counts (the console's schedules panel;
        None without `counts`); `where` is a parsed filter (awa_tui/filters.py) on top of the
        free text."""
        return self._read(views.schedule_page, page.PageQuery(filter_text, sort, descending, limit, now, where, counts))

    def schedule_detail(self, name: str, *, now: datetime | None = None) -> ScheduleDetail:
        """Definition, next fires, recent fires and audit entries of one schedule."""
        return self._read(views.schedule_detail, name, now=now)

    def list_audit(self, target: str | None = None, limit: int = 100) -> list[AuditEntry]:
        return self._read(views.list_audit, target=target, limit=limit)

    # --- the fire ledger, job outcomes, retention: ledger/ -----------------------------------

    def list_jobs(self, *, schedule: str | None = None, queue: str | None = None, state: str | None = None,
                  since: datetime | None = None, limit: int = 50) -> list[JobSummary]:
        """Recent jobs, newest first; `since` bounds created_at."""
        return self._read(ledger_jobs.list_jobs, schedule=schedule, queue=queue, state=state, since=since,
                          limit=limit)

    def jobs_page(self, where: Filter | None = None, *, limit: int = 200, now: datetime | None = None) -> JobsPage:
        """The console's jobs panel: the newest `limit` jobs matching a jobs filter."""
        return self._read(ledger_jobs.jobs_page, where, limit=limit, now=now)

    def job_detail(self, job_id: int) -> JobDetail:
        """One job with every failed attempt (error, traceback tail, timing, runtime)."""
        return self._read(ledger_jobs.job_detail, job_id)

    def last_results(self, names: list[str] | None = None) -> dict[str, LastResult]:
        """Per schedule: ok, failed, running, waiting, cancelled or none (its latest job)."""
        return self._read(ledger_jobs.last_results, names)

    def fails_24h(self, now: datetime | None = None) -> dict[str, int]:
        """Per schedule, jobs of the last 24 hours whose latest attempt failed."""
        return self._read(ledger_jobs.fails_24h, now)

    def ledger(self, name: str, *, since: datetime | None = None, until: datetime | None = None,
               limit: int = 50, now: datetime | None = None) -> list[Verdict]:
        """Verdicts of the last `limit` due instants in [since, until], oldest first."""
        return self._read(verdicts.ledger, name, since=since, until=until, limit=limit, now=now)

    def outcome_strip(self, name: str, *, count: int = 20, now: datetime | None = None) -> list[Verdict]:
        return self._read(verdicts.outcome_strip, name, count=count, now=now)

    def why(self, name: str, *, at: datetime | None = None, now: datetime | None = None) -> Why:
        """One paragraph on the last due instant (or the one at or before `at`)."""
        return self._read(ledger_why.why, name, at=at, now=now)

    def ledger_view(self, name: str, *, at: datetime | None = None, limit: int = 50,
                    now: datetime | None = None) -> LedgerView:
        """The console's schedule detail: the last `limit` verdicts and the `why` of `at`."""
        return self._read(ledger_why.ledger_view, name, at=at, limit=limit, now=now)

    def search_audit(self, *, operator: str | None = None, action: str | None = None, target: str | None = None,
                     since: datetime | None = None, until: datetime | None = None, limit: int = 50,
                     before_id: int | None = None, where: Filter | None = None,
                     now: datetime | None = None) -> AuditPage:
        return self._read(trail.search_audit, operator=operator, action=action, target=target, since=since,
                          until=until, limit=limit, before_id=before_id, where=where, now=now)

    def retry_job(self, job_id: int, *, operator: str | None = None) -> JobChange:
        return self._op("retry job", ledger_jobs.retry_job, job_id, operator=operator)  # type: ignore[no-any-return]

    def cancel_job(self, job_id: int, *, operator: str | None = None) -> JobChange:
        return self._op("cancel job", ledger_jobs.cancel_job, job_id, operator=operator)  # type: ignore[no-any-return]

    def prune_finished_jobs(self) -> PruneResult:
        """The leader's retention round: a bounded share of the housekeeping (duties.py)."""
        return self.prune_jobs(self.job_retention, keep=self.job_keep, max_batches=duties.PRUNE_BATCHES_PER_ROUND,
                               budget_s=duties.PRUNE_BUDGET_S)

    def prune_jobs(self, older_than: timedelta, *, keep: int = limits.DEFAULT_KEEP, dry_run: bool = False,
                   operator: str | None = None, max_batches: int | None = None,
                   budget_s: float | None = None, duty: float = 1.0,
                   now: datetime | None = None) -> PruneResult:
        """Delete finished jobs older than `older_than`, keeping each schedule's last `keep`.
        With `operator` (the CLI) it is an audited operator action; the leader's own
        housekeeping passes none."""
        return self._write("prune jobs", retention.prune_jobs, older_than, keep=keep, now=now, dry_run=dry_run,
                           max_batches=max_batches, budget_s=budget_s, duty=duty, operator=operator)

    def server_role(self) -> ServerRole:
        """The server this client reads from: a primary, or a standby and its replay lag (S58)."""
        return self._read(standby.server_role)

    def db_time(self) -> datetime:
        return self._read(views.db_time)

    # Every feature the console knows: awa-tui's own schema has them all (read/backend.FEATURES).
    features = FEATURES
    features_note: str | None = None

    def audit_gap(self) -> str | None:
        """awa-tui's own schema audits every operator action in the same transaction."""
        return None

    def write_refusal(self) -> str | None:
        """Why operator actions would be refused here (read-only client, SELECT-only role,
        standby), as one line; None when they can run."""
        return "this client is read-only" if self.read_only else self._read(ops.write_refusal)
