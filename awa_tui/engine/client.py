"""Client: the public face of the engine. Registration (S1), one-step entry points for
tests and operators (migrate, sync, evaluate, snapshot, work_once), the runtime
(run/start/close), and the operator actions and read models."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from awa_tui.config import default_operator, resolve_dsn
from awa_tui.engine import evaluator, migrations, ops, reporter, views, worker
from awa_tui.engine.db import ConnectionSource
from awa_tui.engine.errors import AwaError, ValidationError
from awa_tui.engine.schedule import Schedule
from awa_tui.engine.sync import sync_schedules

log = logging.getLogger("awa_tui")

F = TypeVar("F", bound=Callable[..., Any])


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
    ) -> None:
        resolved = dsn if dsn is not None else resolve_dsn()
        if resolved is None:
            raise AwaError("no database configured: pass dsn= or set AWA_DATABASE_URL")
        if authoritative and not owner:
            raise ValidationError("owner: an authoritative runtime must name its owner")
        if snapshot_interval <= timedelta(0):
            raise ValidationError(f"snapshot_interval: must be positive, got {snapshot_interval}")
        self.dsn = resolved
        self.owner = owner
        self.authoritative = authoritative
        self.retire_grace = retire_grace
        self.snapshot_interval = snapshot_interval
        self.read_only = read_only
        self.operator = operator or default_operator()
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
        )
        self._runtime: Any = None
        self.last_pass: evaluator.PassResult | None = None
        self.on_pass: list[Callable[[evaluator.PassResult], None]] = []
        self.on_job: list[Callable[[worker.Job, str], None]] = []

    # --- registration (S1, S2) -------------------------------------------------------

    def periodic(
        self,
        name: str,
        cron_expr: str,
        kind: str,
        args: dict[str, Any] | None = None,
        *,
        timezone: str = "UTC",
        queue: str = "default",
        priority: int = 2,
        max_attempts: int = 25,
        tags: tuple[str, ...] | list[str] = (),
        metadata: dict[str, Any] | None = None,
        missed_fire_policy: str = "coalesce",
    ) -> Schedule:
        """Declare a schedule; validated at once, written at the next sync."""
        schedule = Schedule.build(
            name, cron_expr, kind, args, timezone=timezone, queue=queue, priority=priority,
            max_attempts=max_attempts, tags=tags, metadata=metadata,
            missed_fire_policy=missed_fire_policy,
        )
        if name in self._schedules:
            raise ValidationError(f"name: schedule {name!r} is already registered in this process")
        self._schedules[name] = schedule
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
        """Additive UPSERT of this process's schedules (S5)."""
        ops.require_writable(self.read_only, "sync")
        with self.db.connection() as conn:
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
        """What the leader does every second."""
        self.evaluate()

    def work_once(self, limit: int | None = None) -> list[tuple[worker.Job, str]]:
        ops.require_writable(self.read_only, "work")
        with self.db.connection() as conn:
            outcomes = worker.work_once(
                conn, self.handlers, limit=limit or self.worker_batch, queues=self.worker_queues
            )
        for job, state in outcomes:
            for callback in self.on_job:
                callback(job, state)
        return outcomes

    def snapshot(self, *, is_leader: bool = False, stopped: bool = False) -> None:
        if self.read_only:
            return  # a read-only console is an observer, not a runtime
        with self.db.connection() as conn:
            reporter.write_snapshot(conn, self.identity, is_leader=is_leader, stopped=stopped)

    # --- the runtime ----------------------------------------------------------------------

    def start(self, *, run_worker: bool = True, lead: bool = True) -> Any:
        """Start the runtime loops in background threads; returns the Runtime."""
        from awa_tui.engine.runtime import Runtime

        ops.require_writable(self.read_only, "run")
        if self._runtime is not None:
            return self._runtime
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
        """Stop the loops (final snapshot, leader lock released) and close connections."""
        runtime, self._runtime = self._runtime, None
        if runtime is not None:
            runtime.stop()
        self.db.close_all()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- operator actions (S16-S18, S20) ---------------------------------------------------

    def _op(self, action: str, fn: Callable[..., Any], *args: Any, operator: str | None = None) -> Any:
        ops.require_writable(self.read_only, action)
        with self.db.connection() as conn:
            return fn(conn, *args, operator or self.operator)

    def pause(self, name: str, *, operator: str | None = None) -> dict[str, Any]:
        return self._op("pause", ops.pause, name, operator=operator)

    def resume(self, name: str, *, operator: str | None = None) -> dict[str, Any]:
        return self._op("resume", ops.resume, name, operator=operator)

    def trigger(self, name: str, *, operator: str | None = None) -> dict[str, Any]:
        return self._op("trigger", ops.trigger, name, operator=operator)

    def remove(self, name: str, *, operator: str | None = None) -> dict[str, Any]:
        return self._op("remove", ops.remove, name, operator=operator)

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

    def next_fires(self, name: str, count: int = 5) -> list[dict[str, Any]]:
        return self._view(views.next_fires, name, count)

    def recent_fires(self, name: str, limit: int = 10) -> list[dict[str, Any]]:
        return self._view(views.recent_fires, name, limit)

    def list_queues(self) -> list[dict[str, Any]]:
        return self._view(views.list_queues)

    def list_runtimes(self) -> list[dict[str, Any]]:
        return self._view(views.list_runtimes)

    def list_audit(self, target: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        return self._view(views.list_audit, target=target, limit=limit)

    def db_time(self) -> datetime:
        return self._view(views.db_time)
