"""Client: the public face of the engine, for the app author: declare schedules and
handlers, migrate, run (or step: sync, evaluate, work_once), close. The other audiences
have entry points of their own: `client.reads` (the console's and the CLI's read models),
`client.actions` (operator actions, audited) and `client.runtime` (the running process's
state and duties)."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from awa_tui.config import default_operator, resolve_dsn, resolve_leader_dsn
from awa_tui.engine.actions.operator import Actions
from awa_tui.engine.backend.protocol import FEATURES
from awa_tui.engine.backend.reads import Reads
from awa_tui.engine.core import guards, limits
from awa_tui.engine.core.db import ConnectionSource, check_app_pool, dsn_problem
from awa_tui.engine.core.errors import AwaError, ValidationError
from awa_tui.engine.core.session import Room, Session
from awa_tui.engine.health.listen import DEFAULT_SCHEDULE_SERIES
from awa_tui.engine.jobs.slots import Slots
from awa_tui.engine.runtime.identity import RuntimeIdentity
from awa_tui.engine.runtime.process import RuntimeProcess
from awa_tui.printable import printable_logger

if TYPE_CHECKING:
    import psycopg

    from awa_tui.engine import migrations
    from awa_tui.engine.firing import evaluator
    from awa_tui.engine.jobs import enqueue as enqueuing
    from awa_tui.engine.jobs import handlers as job_handlers
    from awa_tui.engine.jobs import sql as sql_jobs
    from awa_tui.engine.jobs.context import Job
    from awa_tui.engine.jobs.handlers import Handler, HandlerSpec, RetryPolicy, SchedulePolicy
    from awa_tui.engine.ownership import api_schedules as made
    from awa_tui.engine.ownership import manifest as manifest_of
    from awa_tui.engine.runtime import loops
    from awa_tui.engine.runtime.loops import Runtime
    from awa_tui.engine.runtime.metrics import MetricsServer
    from awa_tui.engine.schedules import definition
    from awa_tui.engine.schedules.definition import Schedule
else:
    migrations = Room("awa_tui.engine.migrations")
    manifest_of = Room("awa_tui.engine.ownership.manifest")
    made = Room("awa_tui.engine.ownership.api_schedules")
    loops = Room("awa_tui.engine.runtime.loops")
    enqueuing = Room("awa_tui.engine.jobs.enqueue")
    job_handlers = Room("awa_tui.engine.jobs.handlers")
    sql_jobs = Room("awa_tui.engine.jobs.sql")
    definition = Room("awa_tui.engine.schedules.definition")

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



class Client(Session):
    """The engine's public face for the app author. Each public method hands its work to the
    room (or the entry point) that does it, in one line; the rooms load on first use, so a
    command pays only for what it calls."""

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
        concurrency: int = limits.DEFAULT_CONCURRENCY,
        queues: list[str] | dict[str, int] | None = None,
        worker_batch: int = 10,
        shutdown_grace: timedelta = limits.DEFAULT_SHUTDOWN_GRACE,
        resources: Mapping[str, Any] | None = None,
        job_log_level: int = logging.INFO,
        application_name: str = "awa-tui",
        leader_lease: timedelta = limits.DEFAULT_LEASE,
        job_retention: timedelta = limits.DEFAULT_HORIZON,
        job_keep: int = limits.DEFAULT_KEEP,
        max_lateness: timedelta = timedelta(seconds=limits.DEFAULT_MAX_LATENESS_S),
        lock_timeout: timedelta | None = None,
        statement_timeout: timedelta = limits.DEFAULT_STATEMENT_TIMEOUT,
        pool: object | None = None,
        fleet_alert_grace: timedelta = limits.DEFAULT_FLEET_GRACE,
        fleet_stall_after: timedelta = limits.DEFAULT_FLEET_STALL_AFTER,
        tracer_provider: object | None = None,
    ) -> None:
        # The app's own pool (psycopg_pool.ConnectionPool): every call borrows from it; only the
        # sessions that must stay open (the leader lock, the alert deliverer) are the engine's.
        app_pool = check_app_pool(pool) if pool is not None else None
        resolved = dsn if dsn is not None else resolve_dsn()
        conninfo = getattr(pool, "conninfo", None)
        if resolved is None and isinstance(conninfo, str):
            resolved = conninfo  # the pool's own database, for the sessions that stay open
        if resolved is None:
            raise AwaError("no database configured: pass dsn= or set AWA_DATABASE_URL")
        if authoritative and not owner:
            raise ValidationError("owner: an authoritative runtime must name its owner")
        if owner is not None:
            manifest_of.check_new_owner(owner)
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
        # S70: how long nobody may lead, and a leader go without a pass, before it is alerted.
        self.fleet_alert_grace = limits.check_fleet_threshold("fleet_alert_grace", fleet_alert_grace,
                                                             limits.MIN_FLEET_GRACE)
        self.fleet_stall_after = limits.check_fleet_threshold("fleet_stall_after", fleet_stall_after)
        self.job_keep = limits.check_keep(job_keep)
        self.owner = owner
        self.authoritative = authoritative
        self.retire_grace = retire_grace
        self.snapshot_interval = snapshot_interval
        self.read_only = read_only
        # An explicit label is checked now (an empty one is an error, not a default).
        self.operator = default_operator() if operator is None else guards.check_operator(operator)
        self.catch_up_limit = catch_up_limit
        # How many jobs run at once, in which queues (a queue may have a cap of its own).
        self.slots = Slots.parse(concurrency, queues)
        self.concurrency, self.queues = concurrency, queues
        self.worker_batch = worker_batch
        self.shutdown_grace = limits.check_grace(shutdown_grace)
        self.resources: Mapping[str, Any] = dict(resources or {})  # handed to every handler as job.resources
        self.job_log_level = job_log_level
        # OpenTelemetry spans of fires and jobs (the `otel` extra): this provider's, else the
        # global one once the app set it; none without either.
        self.tracer_provider = tracer_provider
        self.application_name = application_name
        # A statement that meets a missing table or column is explained by the schema's
        # version against this code's, in one line (the migrations load only then).
        source = ConnectionSource(resolved, application_name, read_only=read_only,
                                  explain=lambda conn: migrations.mismatch(conn), app_pool=app_pool)
        super().__init__(source, read_only=read_only, operator=self.operator)
        self._schedules: dict[str, Schedule] = {}
        self._generation = 0  # bumped by periodic(): the registry changed since the last sync
        self.handlers: dict[str, HandlerSpec] = {}
        self.policies: dict[str, SchedulePolicy] = {}  # a schedule's own timeout and retries (job_policy)
        self.identity = RuntimeIdentity(
            version=package_version(),
            snapshot_interval=snapshot_interval,
            owner=owner,
            authoritative=authoritative,
            retire_grace=retire_grace if authoritative else None,
        )
        # The three audiences beside the app author's: the console's and the CLI's reads,
        # operator actions, and the runtime this process runs (its state lives there).
        self.reads = Reads(self.db, read_only=read_only, operator=self.operator, catch_up_limit=catch_up_limit)
        self.actions = Actions(self.db, read_only=read_only, operator=self.operator, job_retention=self.job_retention,
                               max_lateness=self.max_lateness)
        self.runtime = RuntimeProcess(self)

    # --- declaring schedules and handlers (S1, S2) ----------------------------------------------

    @_build_parameters
    def periodic(self, *args: Any, **kwargs: Any) -> Schedule:
        """Declare a schedule (the parameters of `Schedule.build`); validated at once,
        written at the next sync."""
        return self._registered(definition.declare(self._schedules, self.max_lateness, *args, **kwargs))

    def _registered(self, schedule: Schedule) -> Schedule:
        """The registry changed: the next sync compares it, the manifest is made again."""
        self._generation += 1
        return schedule

    @property
    def schedules(self) -> list[Schedule]:
        return list(self._schedules.values())

    def registry(self) -> tuple[dict[str, Schedule], int]:
        """The declared schedules by name, and how many times they changed (the runtime
        syncs and publishes its manifest from them)."""
        return self._schedules, self._generation

    def register_handler(self, kind: str, handler: Handler, *, timeout: timedelta | float | None = None,
                         retry: RetryPolicy | None = None) -> None:
        """Run `handler` for jobs of `kind`: an `async def` one on the worker's event loop, a
        plain one on its threads; at most `timeout` per attempt; failures retried by `retry`."""
        self.handlers[job_handlers.check_kind(kind)] = job_handlers.spec(handler, timeout, retry)

    def handler(self, kind: str, *, timeout: timedelta | float | None = None,
                retry: RetryPolicy | None = None) -> Callable[[F], F]:
        """Decorator form of `register_handler`."""

        def wrap(fn: F) -> F:
            self.register_handler(kind, fn, timeout=timeout, retry=retry)
            return fn

        return wrap

    def enable_sql_jobs(self, statement_timeout: timedelta | None = None) -> None:
        """Run jobs of the built-in SQL kind (`awa.sql`, what an imported pg_cron job is):
        each on a database of this client's own server, as its recorded role, each statement
        bounded by `statement_timeout` (default 10 minutes). Off unless called: it runs
        whatever SQL a schedule's args hold."""
        sql_jobs.enable(self.register_handler, self.dsn, statement_timeout)

    def job_policy(self, schedule: str, *, timeout: timedelta | float | None = None,
                   retry: RetryPolicy | None = None) -> None:
        """Give the jobs of one schedule their own timeout and retry policy, over their kind's."""
        self.policies[schedule] = job_handlers.policy(schedule, timeout, retry)

    # --- schedules made at run time (S64) ---------------------------------------------------------
    # Each takes the app's psycopg connection as `conn` (the change then commits or rolls
    # back with the app's own rows; a refusal rolls back only what it wrote) or, without
    # one, commits on its own. A schedule made here belongs to `owner` (default: this
    # client's owner, else "app"); code sync and other owners never touch it.

    def create_schedule(self, name: str, cron_expr: str, kind: str, args: dict[str, Any] | None = None, *,
                        owner: str | None = None, conn: psycopg.Connection[Any] | None = None,
                        dry_run: bool = False, operator_action: bool = False, **options: Any) -> Schedule:
        """Make one schedule now (`periodic`'s parameters and validation); returns it. A dry
        run checks everything a create does and writes nothing. `operator_action`: an
        operator's (the CLI's), through the audit gate like every operator action."""
        return self._checked("create schedule", made.create_one, self.db, conn, self._made_owner(owner),
                             self.operator, definition.built(self.max_lateness, name, cron_expr, kind, args, **options),
                             dry_run=dry_run, operator_action=operator_action)

    def create_schedules(self, schedules: Iterable[Schedule], *, owner: str | None = None,
                         conn: psycopg.Connection[Any] | None = None) -> int:
        """Make many schedules (built with `Schedule.build`) in one set-based write; all or none."""
        return self._checked("create schedules", made.create_many, self.db, conn, self._made_owner(owner),
                             self.operator, schedules, self.max_lateness)

    def update_schedule(self, name: str, *, owner: str | None = None, conn: psycopg.Connection[Any] | None = None,
                        dry_run: bool = False, operator_action: bool = False, **changes: Any) -> Schedule:
        """Change some settings (`periodic`'s) of a schedule made at run time; returns its
        definition now (a dry run: what it would be, nothing written)."""
        return self._checked("update schedule", made.edit_one, self.db, conn, name, changes, owner, self.operator,
                             self.max_lateness, dry_run=dry_run, operator_action=operator_action)

    def update_schedules(self, schedules: Iterable[Schedule], *, owner: str | None = None,
                         conn: psycopg.Connection[Any] | None = None) -> int:
        """Replace the definitions of many schedules made at run time; all or none."""
        return self._checked("update schedules", made.update_many, self.db, conn, schedules, owner, self.operator,
                             self.max_lateness)

    def delete_schedule(self, name: str, *, owner: str | None = None, conn: psycopg.Connection[Any] | None = None,
                        dry_run: bool = False, operator_action: bool = False) -> None:
        """Delete one schedule made at run time (never one declared in code)."""
        self._checked("delete schedule", made.delete_many, self.db, conn, [name], owner, self.operator,
                      dry_run=dry_run, operator_action=operator_action)

    def delete_schedules(self, names: Iterable[str], *, owner: str | None = None,
                         conn: psycopg.Connection[Any] | None = None) -> int:
        """Delete many schedules made at run time; all or none. Returns how many."""
        return self._checked("delete schedules", made.delete_many, self.db, conn, names, owner, self.operator)

    def _made_owner(self, owner: str | None) -> str:
        return owner or self.owner or made.DEFAULT_OWNER

    # --- enqueueing --------------------------------------------------------------------------------

    def enqueue(
        self,
        kind: str,
        args: Mapping[str, Any] | None = None,
        *,
        queue: str = "default",
        run_at: datetime | None = None,
        delay: timedelta | None = None,
        priority: int = 2,
        max_attempts: int = 25,
        unique_key: str | None = None,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        conn: psycopg.Connection[Any] | None = None,
    ) -> int:
        """Add a one-off job (at `run_at`, or after `delay`, or now); returns its id. With
        `conn` (the app's psycopg connection) it is written in the app's open transaction, so
        it exists exactly when the app's own writes commit. A `unique_key` held by a waiting
        or running job adds nothing and returns that job's id."""
        return self._checked("enqueue", enqueuing.enqueue_via, self.db, kind, args, conn=conn, queue=queue,
                             run_at=run_at, delay=delay, priority=priority, max_attempts=max_attempts,
                             unique_key=unique_key, tags=tags, metadata=metadata)

    # --- one-step entry points (deploy steps, tests, a fake clock) ------------------------------

    def migrate(self) -> list[int]:
        return self._checked("migrate", migrations.migrate, self.dsn)

    def sync(self) -> dict[str, int]:
        """Write the declared schedules now (what a runtime does at start): additive (S5);
        an authoritative runtime owns its new names (S23)."""
        return self.runtime.sync()

    def evaluate(self, now: datetime | None = None) -> evaluator.PassResult:
        """One evaluator pass at `now` (DB time when omitted)."""
        return self.runtime.evaluate(now)

    def work_once(self, limit: int | None = None) -> list[tuple[Job, str]]:
        """Claim up to `limit` due jobs, run them with the registered handlers, wait for all;
        returns each job with its new state, in claim order."""
        return self.runtime.work_once(limit)

    # --- running ------------------------------------------------------------------------------

    def start(self, *, run_worker: bool = True, lead: bool = True, migrate: bool = True) -> Runtime:
        """Start the runtime loops in background threads; returns them. `migrate=False`: a
        schema behind is refused instead of migrated (migration is a deploy step of its own)."""
        return self.runtime.start(run_worker=run_worker, lead=lead, migrate=migrate)

    def run(self, stop: threading.Event | None = None, *, migrate: bool = True) -> None:
        """Run until `stop` is set or SIGINT/SIGTERM arrives; then close cleanly (a second
        signal ends the running jobs' shutdown grace; a third forces the stop, the runtime's
        row marked stopped, by raising KeyboardInterrupt)."""
        loops.run_until_stopped(functools.partial(self.start, migrate=migrate), self.close, stop,
                                self.runtime.mark_stopped, self.runtime.force_stop)

    @property
    def is_leader(self) -> bool:
        return self.runtime.is_leader

    def serve_metrics(self, addr: str, *, schedule_series: int = DEFAULT_SCHEDULE_SERIES) -> MetricsServer:
        """Serve /metrics on HOST:PORT until close() (S43)."""
        return self.runtime.serve_metrics(addr, schedule_series=schedule_series)

    def close(self) -> None:
        """Stop the runtime (final snapshot, leader lock released) and close connections.
        Safe from several threads at once."""
        self.runtime.close()
        self.db.close_all()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Every feature the console knows: awa-tui's own schema has them all (backend/protocol.FEATURES).
    features = FEATURES
    features_note: str | None = None


