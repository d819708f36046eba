"""Client: the public face of the engine. Registration (S1), one-step entry points for
tests and operators (migrate, sync, evaluate, snapshot, work_once), the runtime
(run/start/close), and the operator actions and read models."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar

from awa_tui.config import default_operator, resolve_dsn
from awa_tui.engine import evaluator, migrations, ops, views
from awa_tui.engine.db import ConnectionSource
from awa_tui.engine.errors import AwaError, ValidationError
from awa_tui.engine.ownership import lifecycle, reconcile
from awa_tui.engine.ownership.declaration import sync_declared
from awa_tui.engine.ownership.manifest import Manifest, build_manifest, check_owner
from awa_tui.engine.runtime import leader, reporter, worker
from awa_tui.engine.runtime.duties import LeaderDuties
from awa_tui.engine.runtime.loops import Runtime
from awa_tui.engine.schedule import Schedule
from awa_tui.engine.sync import sync_schedules
from awa_tui.printable import printable_logger

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


def package_version() -> str:
    from awa_tui import __version__

    return __version__


class Client:
    def __init__(
        self,
        dsn: str | None = None,
        *,
        owner: str | None = None,
        authoritative: bool = False,
        retire_grace: timedelta = timedelta(minutes=10),
        snapshot_interval: timedelta = timedelta(seconds=10),
        read_only: bool = False,
        operator: str | None = None,
        catch_up_limit: int = evaluator.CATCH_UP_LIMIT,
        worker_queues: list[str] | None = None,
        worker_batch: int = 10,
        application_name: str = "awa-tui",
        leader_lease: timedelta = leader.DEFAULT_LEASE,
    ) -> None:
        resolved = dsn if dsn is not None else resolve_dsn()
        if resolved is None:
            raise AwaError("no database configured: pass dsn= or set AWA_DATABASE_URL")
        if authoritative and not owner:
            raise ValidationError("owner: an authoritative runtime must name its owner")
        if owner is not None:
            check_owner(owner)
        if retire_grace < timedelta(0):
            raise ValidationError(f"retire_grace: must not be negative, got {retire_grace}")
        if snapshot_interval <= timedelta(0):
            raise ValidationError(f"snapshot_interval: must be positive, got {snapshot_interval}")
        if not isinstance(leader_lease, timedelta) or leader_lease < leader.MIN_LEASE:
            got = f"{leader_lease.total_seconds():g} s" if isinstance(leader_lease, timedelta) else repr(leader_lease)
            raise ValidationError(
                f"leader_lease: must be a timedelta of at least {leader.MIN_LEASE.total_seconds():g} s, got {got}")
        self.dsn = resolved
        self.leader_lease = leader_lease
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
        self.handlers: dict[str, worker.Handler] = {}
        self.identity = reporter.RuntimeIdentity(
            version=package_version(),
            snapshot_interval=snapshot_interval,
            owner=owner,
            authoritative=authoritative,
            retire_grace=retire_grace if authoritative else None,
        )
        self._runtime: Runtime | None = None
        self._close_lock = threading.Lock()
        self._manifest: Manifest | None = None  # rebuilt when a schedule is registered
        self._declared = False  # a snapshot was written outside a Runtime: close() ends it
        self.duties = LeaderDuties(self)
        self.last_reconcile: list[dict[str, Any]] | None = None
        self.last_pass: evaluator.PassResult | None = None
        self.on_pass: list[Callable[[evaluator.PassResult], None]] = []
        self.on_job: list[Callable[[worker.Job, str], None]] = []

    # --- registration (S1, S2) -------------------------------------------------------

    @_parameters_of(Schedule.build)
    def periodic(self, *args: Any, **kwargs: Any) -> Schedule:
        """Declare a schedule (the parameters of `Schedule.build`); validated at once,
        written at the next sync."""
        schedule = Schedule.build(*args, **kwargs)
        if schedule.name in self._schedules:
            raise ValidationError(f"name: schedule {schedule.name!r} is already registered in this process")
        self._schedules[schedule.name] = schedule
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
        ops.require_writable(self.read_only, "migrate")
        return migrations.migrate(self.dsn)

    def check_schema(self) -> int:
        with self.db.connection() as conn:
            return migrations.check_version(conn)

    def sync(self) -> dict[str, int]:
        """Additive UPSERT of this process's schedules (S5); for an authoritative runtime,
        insert its new names owned by its owner and fail on a foreign-owned name (S23)."""
        ops.require_writable(self.read_only, "sync")
        with self.db.connection() as conn:
            if self.authoritative and self.owner:
                return sync_declared(conn, self.owner, self.schedules)
            return sync_schedules(conn, self.schedules)

    def evaluate(self, now: datetime | None = None) -> evaluator.PassResult:
        """One evaluator pass at `now` (DB time when omitted)."""
        ops.require_writable(self.read_only, "evaluate")
        with self.db.connection() as conn:
            result = evaluator.evaluate(conn, now, catch_up_limit=self.catch_up_limit)
        self.last_pass = result
        for callback in self.on_pass:
            callback(result)
        return result

    def leader_pass(self) -> None:
        """What the leader does every second (engine/runtime/duties.py): evaluate, and
        keep house and reconcile owners when they are due."""
        self.duties.run_pass()

    def prune_runtimes(self) -> int:
        """Delete snapshot rows of runtimes stopped or silent for over a day."""
        ops.require_writable(self.read_only, "prune runtimes")
        with self.db.connection() as conn:
            return reporter.prune_runtimes(conn)

    def rescue_orphaned_jobs(self) -> list[dict[str, Any]]:
        """Return jobs left running by a stopped or stale runtime to the queue."""
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
        ops.require_writable(self.read_only, "reconcile")
        with self.db.connection() as conn:
            results = reconcile.reconcile(conn, now, wait=wait)
        self.last_reconcile = results
        return results

    def plan(self, owner: str | None = None, now: datetime | None = None) -> list[dict[str, Any]]:
        """Preview of reconciliation per owner, from one snapshot, changing nothing (S34).

        See `awa_tui.engine.ownership.reconcile.plan` for the shape of each dict (inserts, updates,
        retirements, conflicts, blockers with code and message, agreement clock).
        """
        return self._view(reconcile.plan, owner, now)

    def list_owners(self, now: datetime | None = None) -> list[dict[str, Any]]:
        """One summary dict per owner; see `awa_tui.engine.ownership.reconcile.list_owners`."""
        return self._view(reconcile.list_owners, now)

    @property
    def manifest(self) -> Manifest | None:
        """The canonical manifest of an authoritative runtime (None otherwise)."""
        if not (self.authoritative and self.owner):
            return None
        if self._manifest is None:
            self._manifest = build_manifest(self.owner, self.schedules)
        return self._manifest

    def work_once(self, limit: int | None = None) -> list[tuple[worker.Job, str]]:
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
        if self.read_only:
            return None  # a read-only console is an observer, not a runtime
        with self.db.connection() as conn:
            return reporter.write_snapshot(
                conn, self.identity, is_leader=is_leader, stopped=stopped, manifest=self.manifest, now=now
            )

    def publish(self, now: datetime | None = None) -> dict[str, Any]:
        """Publish the snapshot and declaration now (what the reporter loop does).

        Returns {instance_id, owner, at, stopped, manifest_hash, agreement_since?}. A
        Client that published without start() ends its declaration on close().
        """
        ops.require_writable(self.read_only, "publish")
        if self._runtime is None:
            self._declared = True
        published = self.snapshot(is_leader=self.is_leader, now=now)
        assert published is not None
        return published

    # --- the runtime ----------------------------------------------------------------------

    def start(self, *, run_worker: bool = True, lead: bool = True) -> Runtime:
        """Start the runtime loops in background threads; returns the Runtime."""
        ops.require_writable(self.read_only, "run")
        if self._runtime is not None:
            return self._runtime
        with self.db.connection() as conn:
            current = migrations.current_version(conn) == migrations.code_version()
        if not current:  # an up-to-date schema needs no DDL rights (a runtime role has none)
            self.migrate()
        runtime = Runtime(self, run_worker=run_worker, lead=lead)
        runtime.start()
        self._runtime = runtime
        return runtime

    @property
    def is_leader(self) -> bool:
        return bool(self._runtime and self._runtime.is_leader)

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
            self.db.close_all()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- operator actions (S16-S18, S20) ---------------------------------------------------

    def _op(self, action: str, fn: Callable[..., Any], *args: Any, operator: str | None = None) -> Any:
        ops.require_writable(self.read_only, action)
        with self.db.connection() as conn:
            return fn(conn, *args, self.operator if operator is None else operator)

    def pause(self, name: str, *, operator: str | None = None) -> dict[str, Any]:
        return self._op("pause", ops.pause, name, operator=operator)

    def resume(self, name: str, *, operator: str | None = None) -> dict[str, Any]:
        return self._op("resume", ops.resume, name, operator=operator)

    def trigger(self, name: str, *, operator: str | None = None) -> dict[str, Any]:
        return self._op("trigger", ops.trigger, name, operator=operator)

    def remove(self, name: str, *, operator: str | None = None) -> dict[str, Any]:
        return self._op("remove", ops.remove, name, operator=operator)

    # --- owner lifecycle (S23, S27-S29, S31) ------------------------------------------------

    def _lifecycle(self, action: str, fn: Callable[..., Any], *args: Any, operator: str | None,
                   now: datetime | None) -> Any:
        ops.require_writable(self.read_only, action)
        with self.db.connection() as conn:
            return fn(conn, *args, self.operator if operator is None else operator, now)

    def adopt(self, name: str, owner: str, *, operator: str | None = None,
              now: datetime | None = None) -> dict[str, Any]:
        """Give an unowned schedule to `owner`; returns the schedule's state after."""
        return self._lifecycle("adopt", lifecycle.adopt, name, owner, operator=operator, now=now)

    def transfer(self, name: str, to_owner: str, *, operator: str | None = None,
                 now: datetime | None = None) -> dict[str, Any]:
        """Move an owned schedule to another owner; voids both owners' certificates."""
        return self._lifecycle("transfer", lifecycle.transfer, name, to_owner, operator=operator, now=now)

    def retire(self, name: str, *, operator: str | None = None, now: datetime | None = None) -> dict[str, Any]:
        """Tombstone a schedule: it keeps its row, never fires, cannot be triggered."""
        return self._lifecycle("retire", lifecycle.retire, name, operator=operator, now=now)

    def restore(self, name: str, *, operator: str | None = None, now: datetime | None = None) -> dict[str, Any]:
        """Clear a tombstone; evaluation resumes from now, nothing from the retired period."""
        return self._lifecycle("restore", lifecycle.restore, name, operator=operator, now=now)

    def retire_owner(self, owner: str, *, operator: str | None = None,
                     now: datetime | None = None) -> dict[str, Any]:
        """Retire every active schedule of an owner: {owner, at, names, count}."""
        return self._lifecycle("retire owner", lifecycle.retire_owner, owner, operator=operator, now=now)

    def restore_owner(self, owner: str, *, operator: str | None = None,
                      now: datetime | None = None) -> dict[str, Any]:
        """Restore every retired schedule of an owner: {owner, at, names, count}."""
        return self._lifecycle("restore owner", lifecycle.restore_owner, owner, operator=operator, now=now)

    def queue_pause(self, queue: str, *, operator: str | None = None) -> dict[str, Any]:
        return self._op("queue pause", ops.queue_pause, queue, operator=operator)

    def queue_resume(self, queue: str, *, operator: str | None = None) -> dict[str, Any]:
        return self._op("queue resume", ops.queue_resume, queue, operator=operator)

    def queue_drain(self, queue: str, *, operator: str | None = None) -> dict[str, Any]:
        return self._op("queue drain", ops.queue_drain, queue, operator=operator)

    # --- read models ------------------------------------------------------------------------

    def _view(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with self.db.connection() as conn:
            return fn(conn, *args, **kwargs)

    def list_schedules(self, filter_text: str | None = None, limit: int = 100000) -> list[dict[str, Any]]:
        return self._view(views.list_schedules, filter_text=filter_text, limit=limit)

    def get_schedule(self, name: str) -> dict[str, Any]:
        return self._view(views.get_schedule, name)

    def next_fires(self, name: str, count: int = 5, *, after: datetime | None = None) -> list[dict[str, Any]]:
        return self._view(views.next_fires, name, count, after=after)

    def recent_fires(self, name: str, limit: int = 10) -> list[dict[str, Any]]:
        return self._view(views.recent_fires, name, limit)

    def list_queues(self) -> list[dict[str, Any]]:
        return self._view(views.list_queues)

    def list_runtimes(self, now: datetime | None = None) -> list[dict[str, Any]]:
        """Runtime snapshots; `role` (leader / stalled / follower) is the leader lock's
        holder's (pg_locks), `is_leader` what the snapshot last reported."""
        return self._view(views.list_runtimes, now)

    def leadership(self, now: datetime | None = None) -> leader.Leadership:
        """Who holds the leader lock, and whether its lease has expired (STALLED)."""
        return self._view(views.leadership, now)

    def schedule_page(
        self,
        filter_text: str | None = None,
        *,
        sort: str = "name",
        descending: bool = False,
        limit: int = 1000,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """One filtered, sorted page of schedules with counts (the console's schedules panel)."""
        return self._view(
            views.schedule_page, filter_text=filter_text, sort=sort, descending=descending, limit=limit, now=now
        )

    def schedule_detail(self, name: str, *, now: datetime | None = None) -> dict[str, Any]:
        """Definition, next fires, recent fires and audit entries of one schedule."""
        return self._view(views.schedule_detail, name, now=now)

    def list_audit(self, target: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        return self._view(views.list_audit, target=target, limit=limit)

    def db_time(self) -> datetime:
        return self._view(views.db_time)

    def write_refusal(self) -> str | None:
        """Why operator actions would be refused here (read-only client, SELECT-only role,
        standby), as one line; None when they can run."""
        if self.read_only:
            return "this client is read-only"
        return self._view(ops.write_refusal)
