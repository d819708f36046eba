"""Client: the public face of the engine. Registration (S1), one-step entry points for
tests and operators (migrate, sync, evaluate, snapshot, work_once), the runtime
(run/start/close), and the operator actions and read models."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from awa_tui.config import default_operator, resolve_dsn, resolve_leader_dsn
from awa_tui.engine import limits
from awa_tui.engine.db import ConnectionSource, dsn_problem
from awa_tui.engine.errors import AwaError, ReadOnly, ValidationError
from awa_tui.engine.health.listen import DEFAULT_SCHEDULE_SERIES
from awa_tui.engine.read.backend import FEATURES
from awa_tui.engine.runtime.identity import RuntimeIdentity
from awa_tui.printable import printable_logger

# Each method imports the engine module it uses, where it uses it: `awa-tui cron show`
# loads the views it reads, not the evaluator, the runtime or the ledger (issue 18).
# Nothing here may import more at module level than a Client needs to be built.
if TYPE_CHECKING:
    from awa_tui.engine.calendars.models import CalendarInfo, CalendarSummary
    from awa_tui.engine.firing import evaluator
    from awa_tui.engine.firing.backfill import BackfillResult
    from awa_tui.engine.firing.preview import ResumePreview
    from awa_tui.engine.health.metrics import MetricsServer
    from awa_tui.engine.health.models import (
        CheckReport,
        HealthPass,
        RegisteredRuntime,
        RuntimeAlive,
        Transition,
    )
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
    from awa_tui.engine.ownership.manifest import Manifest
    from awa_tui.engine.read.fleet import Blocker
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
    from awa_tui.engine.runtime import worker
    from awa_tui.engine.runtime.blockers import PassWatch
    from awa_tui.engine.runtime.duties import LeaderDuties
    from awa_tui.engine.runtime.leader import Leadership
    from awa_tui.engine.runtime.loops import Runtime
    from awa_tui.engine.runtime.passes import RecentPasses
    from awa_tui.engine.schedules import overrides
    from awa_tui.engine.schedules.definition import Schedule
    from awa_tui.engine.schedules.sync import SyncTracker
    from awa_tui.engine.standby import ServerRole
    from awa_tui.filters import Filter

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
            from awa_tui.engine.ownership.manifest import check_owner

            check_owner(owner)
        if retire_grace < timedelta(0):
            raise ValidationError(f"retire_grace: must not be negative, got {retire_grace}")
        if snapshot_interval <= timedelta(0):
            raise ValidationError(f"snapshot_interval: must be positive, got {snapshot_interval}")
        if not isinstance(leader_lease, timedelta) or leader_lease < limits.MIN_LEASE:
            got = f"{leader_lease.total_seconds():g} s" if isinstance(leader_lease, timedelta) else repr(leader_lease)
            raise ValidationError(
                f"leader_lease: must be a timedelta of at least {limits.MIN_LEASE.total_seconds():g} s, got {got}")
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
        if operator is None:
            self.operator = default_operator()
        else:
            from awa_tui.engine.operations.ops import check_operator

            self.operator = check_operator(operator)
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
        self._manifest: Manifest | None = None  # rebuilt when a schedule is registered
        self._declared = False  # a snapshot was written outside a Runtime: close() ends it
        self.last_reconcile: list[dict[str, Any]] | None = None
        self.last_pass: evaluator.PassResult | None = None
        self.on_pass: list[Callable[[evaluator.PassResult], None]] = []
        self.on_job: list[Callable[[worker.Job, str], None]] = []
        self.metrics: MetricsServer | None = None  # serve_metrics(): /metrics of this runtime

    # A runtime's parts, made on first use (a command that only reads never loads them);
    # start() makes them before the loops' threads run.

    @functools.cached_property
    def sync_tracker(self) -> SyncTracker:
        """What the next sync must compare (S50)."""
        from awa_tui.engine.schedules.sync import SyncTracker

        return SyncTracker()

    @functools.cached_property
    def duties(self) -> LeaderDuties:
        from awa_tui.engine.runtime.duties import LeaderDuties

        return LeaderDuties(self)

    @functools.cached_property
    def pass_timeouts(self) -> evaluator.Timeouts:
        from awa_tui.engine.firing.evaluator import Timeouts

        return Timeouts(lock_ms=round(self.lock_timeout.total_seconds() * 1000),
                        statement_ms=round(self.statement_timeout.total_seconds() * 1000))

    @functools.cached_property
    def pass_watch(self) -> PassWatch:
        """Who blocks a pass that waits (S59), read on a connection of its own."""
        from awa_tui.engine.runtime.blockers import PassWatch, read_blockers

        def sample(pids: list[int]) -> tuple[Blocker, ...]:
            with self.db.connection() as conn:
                return read_blockers(conn, pids)

        return PassWatch(sample, after_s=self.lock_timeout.total_seconds() / 2)

    @functools.cached_property
    def recent_passes(self) -> RecentPasses:
        """Carried by the snapshot (the runtimes page shows them)."""
        from awa_tui.engine.runtime.passes import RecentPasses

        return RecentPasses()

    # --- registration (S1, S2) -------------------------------------------------------

    @_build_parameters
    def periodic(self, *args: Any, **kwargs: Any) -> Schedule:
        """Declare a schedule (the parameters of `Schedule.build`); validated at once,
        written at the next sync."""
        from awa_tui.engine.schedules.definition import Schedule

        schedule = Schedule.build(*args, **kwargs)
        # A client default other than the built-in one is stored with the schedule; the
        # built-in one stays NULL (which means it), so upgrading rewrites no existing row.
        if schedule.max_lateness is None and self.max_lateness != limits.DEFAULT_MAX_LATENESS_S:
            schedule = dataclasses.replace(schedule, max_lateness=self.max_lateness)
        if schedule.name in self._schedules:
            raise ValidationError(f"name: schedule {schedule.name!r} is already registered in this process")
        self._schedules[schedule.name] = schedule
        self._generation += 1
        self._manifest = None
        return schedule

    @property
    def schedules(self) -> list[Schedule]:
        return list(self._schedules.values())

    def register_handler(self, kind: str, handler: worker.Handler) -> None:
        if not isinstance(kind, str) or not kind:
            raise ValidationError(f"kind: a handler needs a non-empty kind, got {kind!r}")
        self.handlers[kind] = handler

    def handler(self, kind: str) -> Callable[[F], F]:
        """Decorator form of `register_handler`."""

        def wrap(fn: F) -> F:
            self.register_handler(kind, fn)
            return fn

        return wrap

    # --- one-step entry points ------------------------------------------------------------

    def migrate(self) -> list[int]:
        from awa_tui.engine import migrations
        from awa_tui.engine.operations import ops

        ops.require_writable(self.read_only, "migrate")
        return migrations.migrate(self.dsn)

    def check_schema(self) -> int:
        from awa_tui.engine import migrations

        with self.db.connection() as conn:
            return migrations.check_version(conn)

    def sync(self) -> dict[str, int]:
        """Additive UPSERT of this process's schedules (S5); for an authoritative runtime,
        insert its new names owned by its owner and fail on a foreign-owned name (S23).
        After the first, a sync compares only what changed since (S50)."""
        from awa_tui.engine.operations import ops
        from awa_tui.engine.ownership.declaration import sync_declared
        from awa_tui.engine.schedules.sync import sync_schedules

        ops.require_writable(self.read_only, "sync")
        owner = self.owner
        write: Callable[[Any, Sequence[Schedule]], dict[str, int]] = sync_schedules
        if self.authoritative and owner:
            def write(conn: Any, schedules: Sequence[Schedule]) -> dict[str, int]:
                return sync_declared(conn, owner, schedules)
        def checked(conn: Any, schedules: Sequence[Schedule]) -> dict[str, int]:
            from awa_tui.engine.calendars.store import refuse_unknown_calendars

            refuse_unknown_calendars(conn, schedules)  # S56: nothing is written then
            return write(conn, schedules)

        with self.db.connection() as conn:
            return self.sync_tracker.sync(conn, self._schedules, self._generation, checked)

    def evaluate(self, now: datetime | None = None) -> evaluator.PassResult:
        """One evaluator pass at `now` (DB time when omitted)."""
        from awa_tui.engine.firing import evaluator
        from awa_tui.engine.operations import ops

        ops.require_writable(self.read_only, "evaluate")
        watch = self.pass_watch
        started = time.perf_counter()
        try:
            with self.db.connection() as conn:
                watch.begin(conn.info.backend_pid)
                result = evaluator.evaluate(conn, now, catch_up_limit=self.catch_up_limit, more=self._watched,
                                            timeouts=self.pass_timeouts)
        except evaluator.PassTimedOut as exc:
            raise self._timed_out(exc, watch.end(), time.perf_counter() - started) from None
        except BaseException:
            watch.end()
            raise
        took = time.perf_counter() - started
        blockers = watch.end()
        if self.metrics is not None:
            self.metrics.observe_pass(took, result.examined + result.hinted)
        self.last_pass = result
        self.recent_passes.record(result.now, took, result.examined + result.hinted, result.fired, len(result.errors),
                                  blockers=blockers)
        for callback in self.on_pass:
            callback(result)
        return result

    @contextlib.contextmanager
    def _watched(self) -> Iterator[Any]:
        """A second connection of the pass (chunks in flight), watched like the first."""
        with self.db.connection() as conn:
            self.pass_watch.add(conn.info.backend_pid)
            yield conn

    def _timed_out(self, exc: evaluator.PassTimedOut, blockers: tuple[Blocker, ...], took: float) -> AwaError:
        """S59: the pass is recorded (the runtimes page and `check` show it) and its error
        names what blocked it, in one line."""
        from awa_tui.engine.runtime.blockers import describe

        if exc.now is not None:
            self.recent_passes.record(exc.now, took, 0, 0, 0, timed_out=True, blockers=blockers)
            if self._runtime is not None:
                self._runtime.elector.changed.set()  # wakes the reporter: the snapshot carries it now
        waited = f" after {took:.1f} s"
        if blockers:
            return type(exc)(f"{exc}{waited}; blocked by {describe(blockers)}", exc.now)
        return type(exc)(f"{exc}{waited}", exc.now)

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
        from awa_tui.engine.operations import ops
        from awa_tui.engine.runtime import reporter

        ops.require_writable(self.read_only, "prune runtimes")
        with self.db.connection() as conn:
            return reporter.prune_runtimes(conn)

    def rescue_orphaned_jobs(self) -> list[dict[str, Any]]:
        """Return jobs left running by a stopped or stale runtime to the queue."""
        from awa_tui.engine.operations import ops
        from awa_tui.engine.runtime import worker

        ops.require_writable(self.read_only, "rescue")
        with self.db.connection() as conn:
            rescued = worker.rescue_orphaned_jobs(conn)
        if rescued:
            log.warning("rescued %d job(s) stranded by a dead runtime", len(rescued))
        return rescued

    def reconcile(self, now: datetime | None = None, *, wait: bool = True) -> list[dict[str, Any]]:
        """One reconciliation pass over every owner (S25, S26); DB time when `now` is omitted.

        Returns one dict per owner: owner, now, manifest_hash, inserted / updated / retired
        (schedule names), certified, agreement_since, grace_remaining_s, blockers, skipped
        (only with wait=False, when the protocol lock was busy).
        """
        from awa_tui.engine.operations import ops
        from awa_tui.engine.ownership import reconcile

        ops.require_writable(self.read_only, "reconcile")
        with self.db.connection() as conn:
            results = reconcile.reconcile(conn, now, wait=wait)
        self.last_reconcile = results
        return results

    def evaluate_health(self, now: datetime | None = None) -> HealthPass:
        """The leader's health duty (S42): judge every schedule at `now` (DB time when
        omitted), record transitions, count fires for the metrics."""
        from awa_tui.engine.health import rules as health_rules
        from awa_tui.engine.operations import ops

        ops.require_writable(self.read_only, "evaluate health")
        with self.db.connection() as conn:
            return health_rules.evaluate_health(conn, now, instance_id=self.identity.instance_id)

    def check(self, *, owner: str | None = None, schedule: str | None = None, tag: str | None = None,
              now: datetime | None = None) -> CheckReport:
        """`awa-tui check` (S43): unhealthy schedules and fleet problems, with the exit code."""
        from awa_tui.engine.health import check as health_check

        return self._read(health_check.check, owner=owner, schedule=schedule, tag=tag, now=now)

    def registered_runtimes(self, hostname: str, *, now: datetime | None = None) -> list[RegisteredRuntime]:
        """`awa-tui check --registered`: the runtimes on `hostname` with a fresh snapshot."""
        from awa_tui.engine.health import check as health_check

        return self._read(health_check.registered, hostname, now)

    def health_history(self, name: str, limit: int = 20) -> list[Transition]:
        """A schedule's health transitions, newest first."""
        from awa_tui.engine.health import check as health_check

        return self._read(health_check.transitions, name, limit=limit)

    def plan(self, owner: str | None = None, now: datetime | None = None) -> list[OwnerPlan]:
        """Preview of reconciliation per owner, from one snapshot, changing nothing (S34).

        See `awa_tui.engine.ownership.reconcile.plan` for what each part means (inserts,
        updates, retirements, conflicts, blockers with code and message, agreement clock).
        """
        from awa_tui.engine.ownership import reconcile
        from awa_tui.engine.read.owners import owner_plan

        with self.db.connection() as conn:
            return [owner_plan(p) for p in reconcile.plan(conn, owner, now)]

    def list_owners(self, now: datetime | None = None) -> list[OwnerSummary]:
        """One summary per owner; see `awa_tui.engine.ownership.reconcile.list_owners`."""
        from awa_tui.engine.ownership import reconcile
        from awa_tui.engine.read.owners import owner_summary

        with self.db.connection() as conn:
            return [owner_summary(o) for o in reconcile.list_owners(conn, now)]

    @property
    def manifest(self) -> Manifest | None:
        """The canonical manifest of an authoritative runtime (None otherwise)."""
        from awa_tui.engine.ownership.manifest import build_manifest

        if not (self.authoritative and self.owner):
            return None
        if self._manifest is None:
            self._manifest = build_manifest(self.owner, self.schedules)
        return self._manifest

    def work_once(self, limit: int | None = None) -> list[tuple[worker.Job, str]]:
        from awa_tui.engine.operations import ops
        from awa_tui.engine.runtime import worker

        ops.require_writable(self.read_only, "work")
        with self.db.connection() as conn:
            outcomes = worker.work_once(
                conn, self.handlers, limit=limit or self.worker_batch, queues=self.worker_queues,
                claimed_by=self.identity.instance_id,
            )
        for job, state in outcomes:
            for callback in self.on_job:
                callback(job, state)
        return outcomes

    def snapshot(
        self, *, is_leader: bool = False, stopped: bool = False, now: datetime | None = None
    ) -> dict[str, Any] | None:
        """Write this runtime's snapshot and, when authoritative, publish its manifest (S24)."""
        from awa_tui.engine.runtime import reporter

        if self.read_only:
            return None  # a read-only console is an observer, not a runtime
        with self.db.connection() as conn:
            return reporter.write_snapshot(
                conn, self.identity, is_leader=is_leader, stopped=stopped, manifest=self.manifest, now=now,
                passes=self.recent_passes.latest(),
            )

    def publish(self, now: datetime | None = None) -> dict[str, Any]:
        """Publish the snapshot and declaration now (what the reporter loop does).

        Returns {instance_id, owner, at, stopped, manifest_hash, agreement_since?}. A
        Client that published without start() ends its declaration on close().
        """
        from awa_tui.engine.operations import ops

        ops.require_writable(self.read_only, "publish")
        if self._runtime is None:
            self._declared = True
        published = self.snapshot(is_leader=self.is_leader, now=now)
        assert published is not None
        return published

    # --- the runtime ----------------------------------------------------------------------

    def start(self, *, run_worker: bool = True, lead: bool = True) -> Runtime:
        """Start the runtime loops in background threads; returns the Runtime."""
        from awa_tui.engine import migrations
        from awa_tui.engine.operations import ops
        from awa_tui.engine.runtime.loops import Runtime
        from awa_tui.engine.standby import standby_refusal

        ops.require_writable(self.read_only, "run")
        if self._runtime is not None:
            return self._runtime
        self._closing = False
        with self.db.connection() as conn:
            refusal = standby_refusal(conn)  # S58: a runtime writes from its first step
            if refusal is not None:
                raise ReadOnly(f"cannot run: {refusal}")
            current = migrations.current_version(conn) == migrations.code_version()
        if not current:  # an up-to-date schema needs no DDL rights (a runtime role has none)
            self.migrate()
        # The loops' threads share these: made here, before any thread starts, never twice.
        _ = (self.duties, self.recent_passes, self.sync_tracker)
        runtime = Runtime(self, run_worker=run_worker, lead=lead)
        runtime.start()
        self._runtime = runtime
        return runtime

    def serve_metrics(self, addr: str, *, schedule_series: int = DEFAULT_SCHEDULE_SERIES) -> MetricsServer:
        """Serve /metrics on HOST:PORT until close() (S43); a malformed or taken address
        raises a one-line error before anything runs."""
        if self.metrics is None:
            from awa_tui.engine.health.metrics import MetricsServer  # prometheus_client: only when serving

            server = MetricsServer(self.db, addr, is_leader=lambda: self.is_leader, schedule_series=schedule_series,
                                   alive=self.alive)
            server.start()
            self.metrics = server
        return self.metrics

    @property
    def is_leader(self) -> bool:
        return bool(self._runtime and self._runtime.is_leader)

    def alive(self) -> RuntimeAlive:
        """What this process says at /alive (`awa-tui check --alive`): its identity, whether
        it is starting, running or stopping, and what each of its loops is doing."""
        from awa_tui.engine.health.models import RuntimeAlive

        runtime = self._runtime
        if self._closing or (runtime is not None and runtime.stop_event.is_set()):
            state = "stopping"
        else:
            state = "starting" if runtime is None else "running"
        ident = self.identity
        return RuntimeAlive(instance_id=str(ident.instance_id), hostname=ident.hostname, pid=ident.pid, state=state,
                            loops=runtime.beats.states() if runtime is not None else [])

    def run(self, stop: threading.Event | None = None) -> None:
        """Run until `stop` is set or SIGINT/SIGTERM arrives; then close cleanly."""
        stop = stop or threading.Event()
        previous = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                previous[sig] = signal.signal(sig, lambda *_: stop.set())
        try:
            self.start()
            stop.wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.close()

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

    # --- operator actions (S16-S18, S20) ---------------------------------------------------
    # operations/ops.py and ownership/lifecycle.py hand back the rows they wrote (engine-internal dicts); what
    # leaves the Client is the typed model of awa_tui/engine/read/models.py.

    def _op(self, action: str, fn: Callable[..., Any], *args: Any, operator: str | None = None) -> Any:
        from awa_tui.engine.operations import ops

        ops.require_writable(self.read_only, action)
        with self.db.connection() as conn:
            return fn(conn, *args, self.operator if operator is None else operator)

    def pause(self, name: str, *, operator: str | None = None) -> ScheduleState:
        from awa_tui.engine.operations import ops
        from awa_tui.engine.read.results import ScheduleState

        return ScheduleState(**self._op("pause", ops.pause, name, operator=operator))

    def resume(self, name: str, *, operator: str | None = None) -> ScheduleState:
        from awa_tui.engine.operations import ops
        from awa_tui.engine.read.results import ScheduleState

        return ScheduleState(**self._op("resume", ops.resume, name, operator=operator))

    def trigger(self, name: str, *, operator: str | None = None) -> TriggeredJob:
        from awa_tui.engine.operations import ops
        from awa_tui.engine.read.results import TriggeredJob

        return TriggeredJob(**self._op("trigger", ops.trigger, name, operator=operator))

    def backfill(self, name: str, from_at: datetime, to_at: datetime, *, dry_run: bool = False,
                 max_count: int = limits.BACKFILL_LIMIT, operator: str | None = None,
                 now: datetime | None = None) -> BackfillResult:
        """One job per instant of [from_at, to_at] that never fired (engine/firing/backfill.py); a
        dry run only counts them (and works on a read-only client)."""
        from awa_tui.engine.firing import backfill as backfills
        from awa_tui.engine.operations import ops

        if not dry_run:
            ops.require_writable(self.read_only, "backfill")
        with self.db.connection() as conn:
            return backfills.backfill(conn, name, from_at, to_at, self.operator if operator is None else operator,
                                      dry_run=dry_run, max_count=max_count, now=now, horizon=self.job_retention)

    def remove(self, name: str, *, operator: str | None = None) -> ScheduleState:
        """The row as it was before it was deleted."""
        from awa_tui.engine.operations import ops
        from awa_tui.engine.read.results import ScheduleState

        return ScheduleState(**self._op("remove", ops.remove, name, operator=operator))

    def override(self, name: str, request: overrides.OverrideRequest, *,
                 operator: str | None = None) -> ScheduleState:
        """Override the expression, zone, args, queue or priority (issue 16); the row after."""
        from awa_tui.engine.read.results import ScheduleState
        from awa_tui.engine.schedules import overrides

        return ScheduleState(**self._op("override", lambda conn, n, op: overrides.override(conn, n, op, request),
                                        name, operator=operator))

    def reset_override(self, name: str, *, operator: str | None = None) -> ScheduleState:
        """Return an overridden schedule to its code definition; the row after."""
        from awa_tui.engine.read.results import ScheduleState
        from awa_tui.engine.schedules import overrides

        return ScheduleState(**self._op("reset", overrides.reset, name, operator=operator))

    # --- owner lifecycle (S23, S27-S29, S31) ------------------------------------------------

    def _lifecycle(self, action: str, fn: Callable[..., Any], *args: Any, operator: str | None,
                   now: datetime | None) -> Any:
        from awa_tui.engine.operations import ops

        ops.require_writable(self.read_only, action)
        with self.db.connection() as conn:
            return fn(conn, *args, self.operator if operator is None else operator, now)

    def adopt(self, name: str, owner: str, *, operator: str | None = None,
              now: datetime | None = None) -> ScheduleState:
        """Give an unowned schedule to `owner`; returns the schedule's state after."""
        from awa_tui.engine.ownership import lifecycle
        from awa_tui.engine.read.results import ScheduleState

        return ScheduleState(**self._lifecycle("adopt", lifecycle.adopt, name, owner, operator=operator, now=now))

    def transfer(self, name: str, to_owner: str, *, operator: str | None = None,
                 now: datetime | None = None) -> ScheduleState:
        """Move an owned schedule to another owner; voids both owners' certificates."""
        from awa_tui.engine.ownership import lifecycle
        from awa_tui.engine.read.results import ScheduleState

        return ScheduleState(
            **self._lifecycle("transfer", lifecycle.transfer, name, to_owner, operator=operator, now=now))

    def retire(self, name: str, *, operator: str | None = None, now: datetime | None = None) -> ScheduleState:
        """Tombstone a schedule: it keeps its row, never fires, cannot be triggered."""
        from awa_tui.engine.ownership import lifecycle
        from awa_tui.engine.read.results import ScheduleState

        return ScheduleState(**self._lifecycle("retire", lifecycle.retire, name, operator=operator, now=now))

    def restore(self, name: str, *, operator: str | None = None, now: datetime | None = None) -> ScheduleState:
        """Clear a tombstone; evaluation resumes from now, nothing from the retired period."""
        from awa_tui.engine.ownership import lifecycle
        from awa_tui.engine.read.results import ScheduleState

        return ScheduleState(**self._lifecycle("restore", lifecycle.restore, name, operator=operator, now=now))

    def retire_owner(self, owner: str, *, operator: str | None = None,
                     now: datetime | None = None) -> OwnerChange:
        """Retire every active schedule of an owner: the names retired now."""
        from awa_tui.engine.ownership import lifecycle
        from awa_tui.engine.read.results import OwnerChange

        return OwnerChange(
            **self._lifecycle("retire owner", lifecycle.retire_owner, owner, operator=operator, now=now))

    def restore_owner(self, owner: str, *, operator: str | None = None,
                      now: datetime | None = None) -> OwnerChange:
        """Restore every retired schedule of an owner: the names restored now."""
        from awa_tui.engine.ownership import lifecycle
        from awa_tui.engine.read.results import OwnerChange

        return OwnerChange(
            **self._lifecycle("restore owner", lifecycle.restore_owner, owner, operator=operator, now=now))

    # --- bulk actions on a selection: names or a parsed filter (engine/operations/bulk.py) ------------

    def bulk(
        self, action: str, names: Sequence[str] | None = None, *, where: Filter | None = None,
        owner: str | None = None, dry_run: bool = False, batch_size: int = limits.BATCH_SIZE,
        operator: str | None = None, now: datetime | None = None,
    ) -> bulk_ops.BulkResult:
        """pause/resume/trigger/retire/restore/adopt (to `owner`) every selected schedule,
        one transaction per batch; a row whose state refuses is skipped with the reason.
        A dry run reports what would be done and writes nothing (also when read-only)."""
        from awa_tui.engine.operations import bulk as bulk_ops
        from awa_tui.engine.operations import ops

        if not dry_run:
            ops.require_writable(self.read_only, f"bulk {action}")
        with self.db.connection() as conn:
            return bulk_ops.run_bulk(conn, action, names, self.operator if operator is None else operator,
                                 where=where, owner=owner, dry_run=dry_run, batch_size=batch_size, now=now)

    def adopt_declared(
        self, owner: str, *, dry_run: bool = False, batch_size: int = limits.BATCH_SIZE,
        operator: str | None = None, now: datetime | None = None,
    ) -> bulk_ops.BulkResult:
        """Adopt for `owner` every unowned schedule its fresh declarations list."""
        from awa_tui.engine.operations import bulk as bulk_ops
        from awa_tui.engine.operations import ops

        if not dry_run:
            ops.require_writable(self.read_only, "adopt declared")
        with self.db.connection() as conn:
            return bulk_ops.adopt_declared(conn, owner, self.operator if operator is None else operator,
                                       dry_run=dry_run, batch_size=batch_size, now=now)

    def queue_pause(self, queue: str, *, operator: str | None = None) -> QueueState:
        from awa_tui.engine.operations import ops
        from awa_tui.engine.read.results import QueueState

        return QueueState(**self._op("queue pause", ops.queue_pause, queue, operator=operator))

    def queue_resume(self, queue: str, *, operator: str | None = None) -> QueueState:
        from awa_tui.engine.operations import ops
        from awa_tui.engine.read.results import QueueState

        return QueueState(**self._op("queue resume", ops.queue_resume, queue, operator=operator))

    def queue_drain(self, queue: str, *, operator: str | None = None) -> QueueDrained:
        from awa_tui.engine.operations import ops
        from awa_tui.engine.read.results import QueueDrained

        return QueueDrained(**self._op("queue drain", ops.queue_drain, queue, operator=operator))

    # --- calendars (S56) ---------------------------------------------------------------------

    def set_calendar(self, name: str, dates: Any, *, operator: str | None = None) -> CalendarInfo:
        """Create or replace calendar `name`: dates and inclusive (start, end) date pairs
        (`calendars/files.parse_dates` reads them from a file). Audited."""
        from awa_tui.engine.calendars import store as calendars
        from awa_tui.engine.schedules.exclusions import exclude_dates_of

        canonical = exclude_dates_of(dates, what=f"calendar {name!r}", limit=None) or ()
        ranges = [(date.fromisoformat(a), date.fromisoformat(b)) for a, b in canonical]
        return self._op("calendar set", calendars.set_calendar, name, ranges, operator=operator)  # type: ignore[no-any-return]

    def delete_calendar(self, name: str, *, operator: str | None = None) -> CalendarInfo:
        """Delete calendar `name`; refused while a schedule names it. Audited."""
        from awa_tui.engine.calendars import store as calendars

        return self._op("calendar delete", calendars.delete_calendar, name, operator=operator)  # type: ignore[no-any-return]

    def list_calendars(self) -> list[CalendarSummary]:
        from awa_tui.engine.calendars import store as calendars

        return self._read(calendars.list_calendars)

    def get_calendar(self, name: str) -> CalendarInfo:
        from awa_tui.engine.calendars import store as calendars

        return self._read(calendars.show_calendar, name)

    # --- read models ------------------------------------------------------------------------

    def _read(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """A read function of the engine (its first parameter the connection), on a pooled one."""
        with self.db.connection() as conn:
            return fn(conn, *args, **kwargs)

    def list_schedules(
        self, filter_text: str | None = None, limit: int = 100000, *, where: Filter | None = None,
        now: datetime | None = None,
    ) -> list[ScheduleRow]:
        """Schedules in name order; `where` is a parsed filter (awa_tui/filters.py)."""
        from awa_tui.engine.read import views

        with self.db.connection() as conn:
            return views.list_schedules(conn, filter_text=filter_text, limit=limit, where=where, now=now)

    def get_schedule(self, name: str) -> ScheduleInfo:
        from awa_tui.engine.read import views

        with self.db.connection() as conn:
            return views.get_schedule(conn, name)

    def next_fires(self, name: str, count: int = 5, *, after: datetime | None = None) -> list[NextFire]:
        from awa_tui.engine.read import views

        with self.db.connection() as conn:
            return views.next_fires(conn, name, count, after=after)

    def resume_preview(self, name: str, *, now: datetime | None = None) -> ResumePreview:
        """What resuming the paused schedule `name` would fire now (DB time when omitted),
        by this client's catch-up cap; reads only."""
        from awa_tui.engine.firing.preview import resume_preview

        with self.db.connection() as conn:
            return resume_preview(conn, name, now, catch_up_limit=self.catch_up_limit)

    def recent_fires(self, name: str, limit: int = 10) -> list[Fire]:
        from awa_tui.engine.read import views

        with self.db.connection() as conn:
            return views.recent_fires(conn, name, limit)

    def list_queues(self) -> list[QueueRow]:
        from awa_tui.engine.read import views

        with self.db.connection() as conn:
            return views.list_queues(conn)

    def list_runtimes(self, now: datetime | None = None) -> list[RuntimeRow]:
        """Runtime snapshots; `role` (leader / stalled / follower) is the leader lock's
        holder's (pg_locks), `is_leader` what the snapshot last reported."""
        from awa_tui.engine.read import views

        with self.db.connection() as conn:
            return views.list_runtimes(conn, now)

    def leadership(self, now: datetime | None = None) -> Leadership:
        """Who holds the leader lock, and whether its lease has expired (STALLED)."""
        from awa_tui.engine.read import views

        with self.db.connection() as conn:
            return views.leadership(conn, now)

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
        from awa_tui.engine.read import views

        with self.db.connection() as conn:
            return views.schedule_page(conn, filter_text=filter_text, sort=sort, descending=descending, limit=limit,
                                       now=now, where=where, counts=counts)

    def schedule_detail(self, name: str, *, now: datetime | None = None) -> ScheduleDetail:
        """Definition, next fires, recent fires and audit entries of one schedule."""
        from awa_tui.engine.read import views

        with self.db.connection() as conn:
            return views.schedule_detail(conn, name, now=now)

    def list_audit(self, target: str | None = None, limit: int = 100) -> list[AuditEntry]:
        from awa_tui.engine.read import views

        with self.db.connection() as conn:
            return views.list_audit(conn, target=target, limit=limit)

    # --- the fire ledger, job outcomes, retention ---------------------------------------

    def list_jobs(self, *, schedule: str | None = None, queue: str | None = None, state: str | None = None,
                  since: datetime | None = None, limit: int = 50) -> list[JobSummary]:
        """Recent jobs, newest first; `since` bounds created_at."""
        from awa_tui.engine.ledger import jobs as ledger_jobs

        return self._read(ledger_jobs.list_jobs, schedule=schedule, queue=queue, state=state, since=since,
                          limit=limit)

    def jobs_page(self, where: Filter | None = None, *, limit: int = 200, now: datetime | None = None) -> JobsPage:
        """The console's jobs panel: the newest `limit` jobs matching a jobs filter."""
        from awa_tui.engine.ledger import jobs as ledger_jobs

        return self._read(ledger_jobs.jobs_page, where, limit=limit, now=now)

    def job_detail(self, job_id: int) -> JobDetail:
        """One job with every failed attempt (error, traceback tail, timing, runtime)."""
        from awa_tui.engine.ledger import jobs as ledger_jobs

        return self._read(ledger_jobs.job_detail, job_id)

    def last_results(self, names: list[str] | None = None) -> dict[str, LastResult]:
        """Per schedule: ok, failed, running, waiting, cancelled or none (its latest job)."""
        from awa_tui.engine.ledger import jobs as ledger_jobs

        return self._read(ledger_jobs.last_results, names)

    def fails_24h(self, now: datetime | None = None) -> dict[str, int]:
        """Per schedule, jobs of the last 24 hours whose latest attempt failed."""
        from awa_tui.engine.ledger import jobs as ledger_jobs

        return self._read(ledger_jobs.fails_24h, now)

    def ledger(self, name: str, *, since: datetime | None = None, until: datetime | None = None,
               limit: int = 50, now: datetime | None = None) -> list[Verdict]:
        """Verdicts of the last `limit` due instants in [since, until], oldest first."""
        from awa_tui.engine.ledger import verdicts

        return self._read(verdicts.ledger, name, since=since, until=until, limit=limit, now=now)

    def outcome_strip(self, name: str, *, count: int = 20, now: datetime | None = None) -> list[Verdict]:
        from awa_tui.engine.ledger import verdicts

        return self._read(verdicts.outcome_strip, name, count=count, now=now)

    def why(self, name: str, *, at: datetime | None = None, now: datetime | None = None) -> Why:
        """One paragraph on the last due instant (or the one at or before `at`)."""
        from awa_tui.engine.ledger import why as ledger_why

        return self._read(ledger_why.why, name, at=at, now=now)

    def ledger_view(self, name: str, *, at: datetime | None = None, limit: int = 50,
                    now: datetime | None = None) -> LedgerView:
        """The console's schedule detail: the last `limit` verdicts and the `why` of `at`."""
        from awa_tui.engine.ledger import why as ledger_why

        return self._read(ledger_why.ledger_view, name, at=at, limit=limit, now=now)

    def search_audit(self, *, operator: str | None = None, action: str | None = None, target: str | None = None,
                     since: datetime | None = None, until: datetime | None = None, limit: int = 50,
                     before_id: int | None = None, where: Filter | None = None,
                     now: datetime | None = None) -> AuditPage:
        from awa_tui.engine.ledger import trail

        return self._read(trail.search_audit, operator=operator, action=action, target=target, since=since,
                          until=until, limit=limit, before_id=before_id, where=where, now=now)

    def retry_job(self, job_id: int, *, operator: str | None = None) -> JobChange:
        from awa_tui.engine.ledger import jobs as ledger_jobs

        return self._op("retry job", ledger_jobs.retry_job, job_id, operator=operator)

    def cancel_job(self, job_id: int, *, operator: str | None = None) -> JobChange:
        from awa_tui.engine.ledger import jobs as ledger_jobs

        return self._op("cancel job", ledger_jobs.cancel_job, job_id, operator=operator)

    def prune_finished_jobs(self) -> PruneResult:
        """The leader's retention round: a bounded share of the housekeeping (duties.py)."""
        from awa_tui.engine.runtime.duties import PRUNE_BATCHES_PER_ROUND, PRUNE_BUDGET_S

        return self.prune_jobs(self.job_retention, keep=self.job_keep, max_batches=PRUNE_BATCHES_PER_ROUND,
                               budget_s=PRUNE_BUDGET_S)

    def prune_jobs(self, older_than: timedelta, *, keep: int = limits.DEFAULT_KEEP, dry_run: bool = False,
                   operator: str | None = None, max_batches: int | None = None,
                   budget_s: float | None = None, duty: float = 1.0,
                   now: datetime | None = None) -> PruneResult:
        """Delete finished jobs older than `older_than`, keeping each schedule's last `keep`.
        With `operator` (the CLI) it is an audited operator action; the leader's own
        housekeeping passes none."""
        from awa_tui.engine.ledger import retention
        from awa_tui.engine.operations import ops

        if not dry_run:
            ops.require_writable(self.read_only, "prune jobs")
        with self.db.connection() as conn:
            return retention.prune_jobs(conn, older_than, keep=keep, now=now, dry_run=dry_run,
                                        max_batches=max_batches, budget_s=budget_s, duty=duty,
                                        operator=operator)

    def server_role(self) -> ServerRole:
        """The server this client reads from: a primary, or a standby and its replay lag (S58)."""
        from awa_tui.engine.standby import server_role

        with self.db.connection() as conn:
            return server_role(conn)

    def db_time(self) -> datetime:
        from awa_tui.engine.read import views

        with self.db.connection() as conn:
            return views.db_time(conn)

    # Every feature the console knows: awa-tui's own schema has them all (read/backend.FEATURES).
    features = FEATURES
    features_note: str | None = None

    def audit_gap(self) -> str | None:
        """awa-tui's own schema audits every operator action in the same transaction."""
        return None

    def write_refusal(self) -> str | None:
        """Why operator actions would be refused here (read-only client, SELECT-only role,
        standby), as one line; None when they can run."""
        from awa_tui.engine.operations import ops

        if self.read_only:
            return "this client is read-only"
        with self.db.connection() as conn:
            return ops.write_refusal(conn)
