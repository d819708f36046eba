"""pg_cron's jobs carried over (S68): read `cron.job` of a real pg_cron, plan one run-time
schedule per job (S64's public path), apply the plan, and switch a job over so that no
instant is run twice or missed.

A job becomes a schedule of the built-in SQL kind (engine/jobs/sql.py) named after the job
(or `pg_cron-<jobid>`), its expression in pg_cron's forms translated (`$` is `L`,
`N seconds` is a seconds field when N divides a minute), in pg_cron's zone (`cron.timezone`,
GMT before pg_cron 1.5), with the job's database, user and command as its args. pg_cron runs
one run of a job at a time and queues the next: the overlap policy `buffer_one`; it never
retries: one attempt. What cannot be carried over is a refusal in the plan, with why.

The switch-over (`unschedule`) gives every instant to exactly one side: with T the job's
first instant after the switch, by the source server's clock, the schedule is created (or
an earlier import's resumed) with `start_at = T`, then the pg_cron job is deactivated
(`cron.alter_job(active := false)`: the way back is one call). pg_cron ran the instants
before T; awa runs T and after. It is done only inside a safe window: at least `margin`
after pg_cron's previous instant (so its run has started) and `margin` before T (so pg_cron's
worker has dropped the job when T comes); outside it, the switch waits for the window.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from awa_tui.engine.actions import ops
from awa_tui.engine.core.db import ConnectionSource, check_dsn, describe_dsn, redact
from awa_tui.engine.core.errors import AwaError, Conflict, ValidationError
from awa_tui.engine.cron.expression import compile_cron, iso_utc, parse_timezone
from awa_tui.engine.jobs.sql import SQL_KIND
from awa_tui.engine.ownership import api_schedules as made
from awa_tui.engine.schedules.definition import Schedule, with_default_lateness

DEFAULT_OWNER = "pg_cron"
TAG = "pg_cron"
PAUSE_REASON = "imported from pg_cron, which still runs it: switch it over with --unschedule"
INACTIVE_REASON = "inactive in pg_cron"
SWITCH_MARGIN = timedelta(seconds=5)
SWITCH_SLACK = timedelta(seconds=1)  # room for the switch itself inside its window
_SECONDS = re.compile(r"^\s*(\d+)\s+seconds?\s*$", re.IGNORECASE)
LOCAL_NODES = frozenset({"localhost", "127.0.0.1", "::1", ""})

READ_SQL = "SELECT to_jsonb(j) AS job FROM cron.job j ORDER BY jobid"
ZONE_SQL = "SELECT current_setting('cron.timezone', true) AS zone, clock_timestamp() AS now"
SERVER_SQL = "SELECT system_identifier::text AS id FROM pg_control_system()"
OTHER_SERVER = ("pg_cron runs on another server than this awa database: an imported job runs on its runtime's "
                "own server; import into an awa database on pg_cron's server")
EXISTING_SQL = "SELECT name, owner, origin, paused_at FROM awa.cron_jobs WHERE name = ANY(%(names)s::text[])"


@dataclass(frozen=True)
class PgCronJob:
    """One row of pg_cron's `cron.job`, as read (columns a version lacks at their default)."""

    jobid: int
    jobname: str | None
    schedule: str
    command: str
    database: str
    username: str
    active: bool = True
    nodename: str = "localhost"


@dataclass(frozen=True)
class PlannedJob:
    """What one pg_cron job becomes: a schedule (`cron_expr` in `timezone`), or a refusal."""

    jobid: int
    name: str
    schedule: str  # pg_cron's, as written
    cron_expr: str | None
    timezone: str
    database: str
    username: str
    active: bool
    command: str
    refusal: str | None = None
    exists: bool = False  # an earlier import of the same owner made it

    @property
    def action(self) -> str:
        if self.refusal is not None:
            return "refused"
        return "exists" if self.exists else "create"


@dataclass(frozen=True)
class ImportPlan:
    source: str  # where the jobs were read (no password)
    timezone: str
    owner: str
    jobs: tuple[PlannedJob, ...]

    @property
    def refused(self) -> tuple[PlannedJob, ...]:
        return tuple(j for j in self.jobs if j.refusal is not None)

    @property
    def carried(self) -> tuple[PlannedJob, ...]:
        return tuple(j for j in self.jobs if j.refusal is None)


@dataclass(frozen=True)
class Switched:
    name: str
    jobid: int
    at: datetime  # the first instant awa runs; pg_cron ran those before it


@dataclass(frozen=True)
class ImportResult:
    created: tuple[str, ...]
    paused: tuple[str, ...]
    switched: tuple[Switched, ...]
    skipped: tuple[str, ...]  # refused jobs left behind (with skip_refused)
    history: int = 0  # pg_cron runs carried over as finished jobs


# --- reading -------------------------------------------------------------------------------


def connect_source(dsn: str) -> psycopg.Connection[Any]:
    """A connection to pg_cron's database; a failure is one line without the password."""
    check_dsn(dsn)
    try:
        return psycopg.connect(dsn, autocommit=True, row_factory=dict_row, connect_timeout=10,  # type: ignore[arg-type]
                               application_name="awa-tui import pg-cron")
    except psycopg.Error as exc:
        raise AwaError(f"--from {describe_dsn(dsn)}: cannot connect: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    """The server's (or libpq's) first line, without any password it may quote."""
    return redact((str(exc).strip().splitlines() or [type(exc).__name__])[0])


@contextmanager
def source_errors() -> Iterator[None]:
    """A statement pg_cron's database refused (`cron.alter_job` by a role that may not, a
    connection lost): one line saying where, never a traceback, never the password."""
    try:
        yield
    except psycopg.Error as exc:
        raise AwaError(f"pg_cron database: {_first_line(exc)}") from None


def read_jobs(conn: psycopg.Connection[Any]) -> tuple[list[PgCronJob], str | None]:
    """pg_cron's jobs and its `cron.timezone` (None: a pg_cron before 1.5, which runs in GMT)."""
    with source_errors():
        try:
            rows = conn.execute(READ_SQL).fetchall()
        except psycopg.errors.UndefinedTable:
            raise AwaError("--from: no cron.job table there: is pg_cron installed in this database "
                           "(its cron.database_name)?") from None
        zone = conn.execute(ZONE_SQL).fetchone()
    jobs = []
    for row in rows:
        j = row["job"]
        jobs.append(PgCronJob(jobid=int(j["jobid"]), jobname=j.get("jobname"), schedule=str(j["schedule"]),
                              command=str(j["command"]), database=str(j["database"]), username=str(j["username"]),
                              active=bool(j.get("active", True)), nodename=str(j.get("nodename") or "")))
    return jobs, zone["zone"] if zone else None


# --- planning ------------------------------------------------------------------------------


def translate(schedule: str) -> str:
    """pg_cron's schedule as an awa expression, or ValidationError saying why not."""
    text = " ".join(schedule.split())
    seconds = _SECONDS.match(text)
    if seconds:
        n = int(seconds.group(1))
        if not 1 <= n <= 59:
            raise ValidationError(f"every {n} seconds: pg_cron takes 1 to 59 seconds")
        if 60 % n:
            raise ValidationError(f"every {n} seconds does not divide a minute: awa's seconds field "
                                  "starts again at each minute")
        return "* * * * * *" if n == 1 else f"*/{n} * * * * *"
    if text.lower() == "@reboot":
        raise ValidationError("@reboot runs at server start: awa has no start-up fires")
    fields = text.split(" ")
    if not text.startswith("@") and len(fields) != 5:
        raise ValidationError(f"pg_cron reads five fields, this has {len(fields)}")
    if "$" in text:
        if text.startswith("@") or "$" in " ".join(fields[:2] + fields[3:]):
            raise ValidationError("$ (the last day) belongs in the day-of-month field")
        fields[2] = fields[2].replace("$", "L")
        text = " ".join(fields)
    compile_cron(text, "UTC")  # awa's own checks, their one line
    return text


def _local(nodename: str) -> bool:
    """pg_cron connects to the node itself: its own host name, or a socket directory (cron.host)."""
    return nodename.lower() in LOCAL_NODES or nodename.startswith("/")


def job_name(job: PgCronJob) -> str:
    return job.jobname if job.jobname else f"pg_cron-{job.jobid}"


def plan(jobs: Sequence[PgCronJob], zone: str | None, owner: str, source: str,
         existing: Mapping[str, Mapping[str, Any]], same_server: bool = True) -> ImportPlan:
    """One planned schedule (or refusal) per job. `existing`: awa's rows of the same names;
    `same_server`: False when pg_cron's server is known not to be awa's database's."""
    timezone = zone or "UTC"  # pg_cron before 1.5 computes in GMT
    every_job = None if same_server else OTHER_SERVER  # a refusal of the whole source
    try:
        parse_timezone(timezone)
    except ValidationError as exc:
        every_job = every_job or f"cron.timezone {timezone!r}: {exc}"
    names: dict[str, int] = {}
    out = []
    for job in jobs:
        name = job_name(job)
        refusal = every_job
        cron_expr = None
        if refusal is None:
            try:
                cron_expr = translate(job.schedule)
            except ValidationError as exc:
                refusal = f"schedule {job.schedule!r}: {exc}"
        if refusal is None and not _local(job.nodename):
            refusal = (f"runs on node {job.nodename!r}: an imported job runs on its runtime's own server")
        if refusal is None and name in names:
            refusal = f"name {name!r} is also job {names[name]}'s (pg_cron names are per user)"
        held = existing.get(name)
        exists = False
        if refusal is None and held is not None:
            if held["origin"] == made.ORIGIN and held["owner"] == owner:
                exists = True
            else:
                holder = "a schedule declared in code" if held["origin"] != made.ORIGIN else f"owner {held['owner']!r}"
                refusal = f"name {name!r} is taken in awa by {holder}"
        if refusal is None:
            try:
                _schedule(PlannedJob(job.jobid, name, job.schedule, cron_expr, timezone, job.database,
                                     job.username, job.active, job.command))
            except ValidationError as exc:
                refusal = str(exc)
        names.setdefault(name, job.jobid)
        out.append(PlannedJob(job.jobid, name, job.schedule, cron_expr if refusal is None else None, timezone,
                              job.database, job.username, job.active, job.command, refusal, exists))
    return ImportPlan(source, timezone, owner, tuple(out))


def _schedule(job: PlannedJob, start_at: datetime | None = None) -> Schedule:
    assert job.cron_expr is not None
    return Schedule.build(
        job.name, job.cron_expr, SQL_KIND,
        {"command": job.command, "database": job.database, "role": job.username},
        timezone=job.timezone, max_attempts=1, overlap="buffer_one", tags=[TAG],
        metadata={"pg_cron_jobid": job.jobid, "pg_cron_schedule": job.schedule}, start_at=start_at)


def read_plan(source_dsn: str, db: ConnectionSource, owner: str = DEFAULT_OWNER) -> ImportPlan:
    """Read pg_cron's jobs at `source_dsn` and plan them against awa's database `db`."""
    from awa_tui.engine.ownership.manifest import check_new_owner

    owner = check_new_owner(owner)
    with connect_source(source_dsn) as conn:
        jobs, zone = read_jobs(conn)
        source_server = _server_id(conn)
    names = [job_name(j) for j in jobs]
    with db.connection() as conn:
        rows = conn.execute(EXISTING_SQL, {"names": names}).fetchall()
        awa_server = _server_id(conn)
    existing = {r["name"]: r for r in rows}
    same = source_server is None or awa_server is None or source_server == awa_server
    return plan(jobs, zone, owner, describe_dsn(source_dsn), existing, same)


def _server_id(conn: psycopg.Connection[Any]) -> str | None:
    """The cluster's system identifier (a standby shares its primary's); None when this role
    may not read it (then the servers are not compared)."""
    try:
        with conn.transaction():
            row = conn.execute(SERVER_SQL).fetchone()
    except psycopg.errors.InsufficientPrivilege:
        return None
    return str(row["id"]) if row else None


# --- applying ------------------------------------------------------------------------------


def apply(plan_: ImportPlan, db: ConnectionSource, operator: str, max_lateness: int | None, *,
          source_dsn: str | None = None, skip_refused: bool = False, unschedule: bool = False,
          history: bool = False, margin: timedelta = SWITCH_MARGIN,
          wait: Callable[[float], object] | None = None) -> ImportResult:
    """Create the planned schedules; with `unschedule`, switch each active job over; with
    `history`, pg_cron's finished runs of each job become its finished jobs.

    Without `skip_refused`, a plan with a refusal writes nothing. Without `unschedule`, an
    active job's schedule is created paused (pg_cron still runs it: nothing runs twice) and
    an inactive one's paused too; `unschedule` creates them running from each job's switch
    instant and deactivates the pg_cron jobs, one at a time."""
    if plan_.refused and not skip_refused:
        raise ValidationError(f"{len(plan_.refused)} of {len(plan_.jobs)} pg_cron jobs cannot be carried over "
                              "(the plan says why); nothing was written: pass --skip-refused to import the rest")
    if (unschedule or history) and source_dsn is None:
        raise ValidationError("unschedule, history: need the pg_cron database")
    carried = plan_.carried
    if unschedule:  # a job that could never be switched is refused before anything is written
        for job in carried:
            if job.active:
                assert job.cron_expr is not None
                try:
                    switch_window(job.cron_expr, job.timezone, datetime.now(UTC), margin)
                except ValidationError as exc:
                    raise ValidationError(f"{job.name}: {exc}") from None
    to_create = [j for j in carried if not j.exists and not (unschedule and j.active)]
    created: list[str] = []
    paused: list[str] = []
    switched: list[Switched] = []
    runs = 0
    with ExitStack() as stack:
        source = stack.enter_context(connect_source(source_dsn)) if source_dsn and (unschedule or history) else None
        with db.connection() as conn, conn.transaction():
            schedules = [with_default_lateness(_schedule(j), max_lateness) for j in to_create]
            if schedules:
                made.create(conn, schedules, plan_.owner, operator)
            for job in to_create:
                ops.pause(conn, job.name, operator, reason=PAUSE_REASON if job.active else INACTIVE_REASON)
                paused.append(job.name)
                if source is not None and history:
                    runs += carry_history(conn, source, job)
            created = [j.name for j in to_create]
        if unschedule:
            assert source is not None
            for job in carried:
                if job.active:
                    done, carried_runs = switch_over(job, plan_.owner, db, source, operator, max_lateness,
                                                     margin=margin, wait=wait, history=history)
                    switched.append(done)
                    runs += carried_runs
                    if not job.exists:
                        created.append(job.name)
    return ImportResult(tuple(created), tuple(paused), tuple(switched), tuple(j.name for j in plan_.refused), runs)


# --- the switch-over -------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    """When a switch may happen: `at` is T, the first instant awa runs; `wait_until`, when
    set, is when to look again (too close to pg_cron's previous instant or to T)."""

    at: datetime
    wait_until: datetime | None = None


def switch_window(cron_expr: str, timezone: str, now: datetime, margin: timedelta = SWITCH_MARGIN) -> Window:
    """The switch instant T for a switch made at `now` (the source server's clock), or when
    to look again: T must be at least `margin` away, and pg_cron's previous instant at least
    `margin` past (its run has started, or it was never due)."""
    expr = compile_cron(cron_expr, timezone)
    at = expr.next_after(now).at
    # The window opens after some instant only if a gap of the schedule holds it (seen over
    # its next 64 instants: a seconds schedule repeats within a minute, others are wider).
    instants = [f.at for f in expr.upcoming(now, 64)]
    widest = max((b - a for a, b in pairwise(instants)), default=timedelta.max)
    if widest < 2 * margin + SWITCH_SLACK:
        raise ValidationError(f"instants {widest.total_seconds():g} s apart are too close to switch over "
                              f"with {margin.total_seconds():g} s on each side: deactivate the job in pg_cron, "
                              "then resume the schedule")
    previous = expr.latest_at_or_before(now)
    if previous is not None and now - previous.at < margin:
        return Window(at, previous.at + margin)
    if at - now < margin:
        return Window(at, at + margin)
    return Window(at)


def _source_now(source: psycopg.Connection[Any]) -> datetime:
    with source_errors():
        row = source.execute("SELECT clock_timestamp() AS now").fetchone()
    assert row is not None
    return row["now"]  # type: ignore[no-any-return]


def switch_over(job: PlannedJob, owner: str, db: ConnectionSource, source: psycopg.Connection[Any], operator: str,
                max_lateness: int | None, *, margin: timedelta = SWITCH_MARGIN,
                wait: Callable[[float], object] | None = None, history: bool = False) -> tuple[Switched, int]:
    """Give `job`'s instants from T on to awa and those before to pg_cron (see the module)."""
    assert job.cron_expr is not None
    pause = wait or threading.Event().wait
    while True:
        now = _source_now(source)
        window = switch_window(job.cron_expr, job.timezone, now, margin)
        if window.wait_until is None:
            break
        pause(max((window.wait_until - now).total_seconds(), 0.01))
    at = window.at
    schedule = with_default_lateness(_schedule(job, start_at=at), max_lateness)
    runs = 0
    with db.connection() as conn, conn.transaction():
        fired = False
        if job.exists:
            made.update(conn, [schedule], owner, operator)
            row = conn.execute("SELECT paused_at, last_enqueued_at FROM awa.cron_jobs WHERE name = %s",
                               (job.name,)).fetchone()
            fired = row is not None and row["last_enqueued_at"] is not None
            if row is not None and row["paused_at"] is not None:
                ops.resume(conn, job.name, operator)
        else:
            made.create(conn, [schedule], owner, operator)
        if history and not fired:  # in the creating transaction: before any fire of awa's (see carry_history)
            runs = carry_history(conn, source, job)
    try:
        _deactivate(source, job.jobid)
    except BaseException:
        _undo(job, owner, db, operator)
        raise
    done = _source_now(source)
    if at - done < margin / 5:  # the switch took most of the margin: pg_cron may run T as well
        raise Conflict(f"{job.name}: the switch ended {(at - done).total_seconds():.1f} s before {at.isoformat()}; "
                       "check that instant ran once (cron.job_run_details and the ledger)")
    return Switched(job.name, job.jobid, at), runs


def _deactivate(source: psycopg.Connection[Any], jobid: int) -> None:
    with source_errors(), source.transaction():
        has_alter = source.execute("SELECT to_regprocedure('cron.alter_job(bigint,text,text,text,text,boolean)')"
                                   " IS NOT NULL AS ok").fetchone()
        if has_alter and has_alter["ok"]:
            source.execute("SELECT cron.alter_job(%s, active := false)", (jobid,))
        else:  # a pg_cron before 1.4 has no active flag: the job goes
            source.execute("SELECT cron.unschedule(%s)", (jobid,))


def _undo(job: PlannedJob, owner: str, db: ConnectionSource, operator: str) -> None:
    """pg_cron kept the job: the schedule made for it goes (an earlier import's is paused)."""
    with db.connection() as conn, conn.transaction():
        if job.exists:
            ops.pause(conn, job.name, operator, reason=PAUSE_REASON)
        else:
            made.delete(conn, [job.name], owner, operator)


# --- history -----------------------------------------------------------------------------------

HISTORY_LIMIT = 1000  # a job's newest finished runs carried over
RUNS_SQL = """
SELECT runid, status, return_message, start_time, end_time FROM cron.job_run_details
WHERE jobid = %(jobid)s AND status IN ('succeeded', 'failed') AND start_time IS NOT NULL AND end_time IS NOT NULL
ORDER BY runid DESC LIMIT %(limit)s
"""
CARRIED_SQL = """
SELECT (metadata ->> 'pg_cron_runid')::bigint AS runid FROM awa.jobs
WHERE metadata ? 'cron_name' AND metadata ->> 'cron_name' = %(name)s AND metadata ? 'pg_cron_runid'
"""
HISTORY_SQL = """
INSERT INTO awa.jobs (kind, args, state, attempt, max_attempts, run_at, created_at, attempted_at, finalized_at,
                      metadata, tags, errors)
VALUES (%(kind)s, %(args)s, %(state)s, 1, 1, %(fire)s, %(start)s, %(start)s, %(end)s, %(metadata)s,
        ARRAY[%(tag)s], %(errors)s)
"""


def carry_history(conn: psycopg.Connection[Any], source: psycopg.Connection[Any], job: PlannedJob) -> int:
    """pg_cron's finished runs of `job` (its newest HISTORY_LIMIT in `cron.job_run_details`)
    as finished jobs of its schedule: completed or discarded with pg_cron's message as the
    error, each stamped with the instant it ran for (the schedule's latest at or before its
    start), its start and end. Runs carried before are skipped; runs still going are left.
    Called in the transaction that makes (or first resumes) the schedule, before awa fires
    it, so these jobs' ids come before every job awa fires (the ledger walks ids)."""
    assert job.cron_expr is not None
    with source_errors():
        has_table = source.execute("SELECT to_regclass('cron.job_run_details') IS NOT NULL AS ok").fetchone()
        if not has_table or not has_table["ok"]:
            return 0
        runs = source.execute(RUNS_SQL, {"jobid": job.jobid, "limit": HISTORY_LIMIT}).fetchall()
    done = {r["runid"] for r in conn.execute(CARRIED_SQL, {"name": job.name}).fetchall()}
    expr = compile_cron(job.cron_expr, job.timezone)
    rows = []
    for run in reversed(runs):
        if run["runid"] in done:
            continue
        fire = expr.latest_at_or_before(run["start_time"])
        at = fire.at if fire is not None else run["start_time"]
        failed = run["status"] == "failed"
        rows.append({
            "kind": SQL_KIND, "args": Jsonb({"command": job.command, "database": job.database, "role": job.username}),
            "state": "discarded" if failed else "completed", "fire": at, "start": run["start_time"],
            "end": run["end_time"], "tag": TAG,
            "metadata": Jsonb({"cron_name": job.name, "cron_fire_time": iso_utc(at), "imported_from": "pg_cron",
                               "pg_cron_jobid": job.jobid, "pg_cron_runid": run["runid"]}),
            "errors": Jsonb([{"attempt": 1, "error": (run["return_message"] or "failed")[:2000],
                              "started_at": run["start_time"].isoformat(), "at": run["end_time"].isoformat()}]
                            if failed else []),
        })
    if rows:
        with conn.cursor() as cur:
            cur.executemany(HISTORY_SQL, rows)
    return len(rows)
