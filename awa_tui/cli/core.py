"""`run`, `migrate`, `db`, `runtime list`, `audit`."""

from __future__ import annotations

import logging
import sys
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated, Any

import typer

from awa_tui.cli import app, command_group
from awa_tui.cli.common import (
    emit,
    emit_json,
    emit_table,
    errors_as_lines,
    fail,
    leader_dsn_of,
    make_client,
    require_dsn,
    say,
    sql_timeout_of,
)
from awa_tui.cli.health import MetricsAddrOpt, ScheduleSeriesOpt
from awa_tui.cli.options import (
    APP_HELP,
    SQL_TIMEOUT_DEFAULT,
    DsnOpt,
    JsonOpt,
    LeaderDsnFileOpt,
    LeaderDsnOpt,
    OperatorOpt,
    SqlJobsOpt,
    SqlTimeoutOpt,
)
from awa_tui.cli.timeargs import SinceOpt, UntilOpt, check_range, parse_point
from awa_tui.cli.timeargs import parse_duration as parse_retention
from awa_tui.config import parse_duration, resolve_dsn
from awa_tui.engine.core.errors import AwaError
from awa_tui.engine.health.listen import DEFAULT_SCHEDULE_SERIES, parse_addr
from awa_tui.printable import PrintableFormatter, printable_logger

if TYPE_CHECKING:
    from awa_tui.engine.read.fleet import Leadership

# The engine, the embedded server and upstream mode are imported by the commands that use
# them: `awa-tui audit` does not load what `awa-tui run` needs.

db_app = command_group(
    "db", "The database: its schema, the audit trail of upstream mode, the embedded Postgres used when none is "
    "configured.")
runtime_app = command_group("runtime", "Runtime snapshots.")


def _log_fires(result: Any) -> None:
    log = printable_logger("awa_tui.fires")
    for job in result.jobs[:50]:
        log.info("fired %s @ %s -> job %s", job.name, job.fire_time, job.id)
    if len(result.jobs) > 50:
        log.info("... and %d more fires this pass", len(result.jobs) - 50)
    # Skipped bad rows (S15) are logged once, by the evaluator itself.


@app.command()
def run(
    dsn: DsnOpt = None,
    app_ref: Annotated[str | None, typer.Option("--app", help=APP_HELP)] = None,
    demo: Annotated[bool, typer.Option("--demo", help="Load the built-in demo schedules.")] = False,
    operator: OperatorOpt = None,
    leader_lease: Annotated[
        float, typer.Option("--leader-lease", metavar="SECONDS",
                            help="Leadership lease: a leader silent this long (frozen) is deposed by a standby.")
    ] = 5.0,
    lock_timeout: Annotated[float | None, typer.Option("--lock-timeout", metavar="SECONDS", help=(
        "How long a pass waits for a lock another session holds before it gives up, names that session and "
        "is retried (default 2, at most the lease)."))] = None,
    statement_timeout: Annotated[float, typer.Option("--statement-timeout", metavar="SECONDS", help=(
        "How long one statement of a pass may run (default 30; a shorter one set on the role or database "
        "is kept, and fires go out in smaller statements)."))] = 30.0,
    owner: Annotated[str | None, typer.Option("--owner", help="The owner this runtime runs for.")] = None,
    authoritative: Annotated[bool, typer.Option("--authoritative", help=(
        "The registered schedules are the owner's complete manifest: ones it drops are retired "
        "once every live runtime of the owner agrees for --retire-grace. Needs --owner."))] = False,
    retire_grace: Annotated[str | None, typer.Option("--retire-grace", metavar="DURATION", help=(
        "How long the owner's runtimes must agree before a dropped schedule is retired "
        "(30s, 10m, 2h or seconds; default 10m). Only with --authoritative."))] = None,
    metrics_addr: MetricsAddrOpt = None,
    metrics_schedules: ScheduleSeriesOpt = DEFAULT_SCHEDULE_SERIES,
    job_retention: Annotated[str | None, typer.Option("--job-retention", metavar="DURATION", help=(
        "While leading, prune finished jobs (completed, discarded, cancelled) finished longer ago than this "
        "(90s, 12h, 14d; default 14d); each schedule's last --job-keep jobs are always kept."))] = None,
    job_keep: Annotated[int | None, typer.Option("--job-keep", metavar="N", help=(
        "Finished jobs kept per schedule whatever their age, for its history (default 50; 0 keeps none)."))] = None,
    leader_dsn: LeaderDsnOpt = None,
    leader_dsn_file: LeaderDsnFileOpt = None,
    no_migrate: Annotated[bool, typer.Option("--no-migrate", envvar="AWA_NO_MIGRATE", help=(
        "Never migrate at start: a schema behind is refused in one line. For deploys that run "
        "`awa-tui migrate` as a step of their own (a Kubernetes Job, systemd ExecStartPre=)."))] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", metavar="N", help=(
        "Jobs run at once by this process (async handlers on its event loop, sync ones on its threads)."))] = 10,
    queues: Annotated[str | None, typer.Option("--queues", metavar="A,B=N", help=(
        "Only these queues (all when omitted); `name=N` gives a queue at most N of the slots, so a slow "
        "queue cannot take them all."))] = None,
    shutdown_grace: Annotated[float, typer.Option("--shutdown-grace", metavar="SECONDS", help=(
        "On SIGTERM, how long running jobs get to finish before they are released to run again "
        "(a second signal releases them at once)."))] = 25.0,
    log_level: Annotated[str, typer.Option("--log-level", metavar="LEVEL", help=(
        "debug, info, warning or error. One line per finished job is at info; failures at warning."))] = "info",
    sql_jobs: SqlJobsOpt = False,
    sql_timeout: SqlTimeoutOpt = SQL_TIMEOUT_DEFAULT,
    fleet_alert_grace: Annotated[str | None, typer.Option("--fleet-alert-grace", metavar="DURATION", help=(
        "How long nobody may lead before the 'no leader' alert goes out (4s to 1d; default 10s)."))] = None,
    fleet_stall_after: Annotated[str | None, typer.Option("--fleet-stall-after", metavar="DURATION", help=(
        "How long a leader may hold the lock with no pass completed before the 'stalled leader' alert goes "
        "out (1s to 1d; default 30s)."))] = None,
) -> None:
    """Run the headless runtime (sync, snapshots, leader election, evaluator, worker)."""
    from awa_tui.bootstrap import build_client, dsn_or_embedded
    from awa_tui.engine.runtime.heap import registered_then_frozen

    # Names, kinds and errors in log lines come from the database: one escaped line each,
    # whichever logger wrote it (the engine's own loggers escape at the source too).
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    level = logging.getLevelName(log_level.upper())
    logging.basicConfig(level=level if isinstance(level, int) else logging.INFO, handlers=[handler])
    logging.getLogger("awa_tui.evaluator").setLevel(level if isinstance(level, int) else logging.INFO)
    with errors_as_lines():
        if not isinstance(level, int) or log_level.lower() not in ("debug", "info", "warning", "error"):
            fail(f"--log-level: debug, info, warning or error, got {log_level!r}")
        if not demo and not app_ref and not sql_jobs:
            fail("nothing to run: pass --demo, --app module:attribute or --sql-jobs")
        sql_statement_timeout = sql_timeout_of(sql_jobs, sql_timeout)
        ownership_jobs = _jobs(concurrency, queues, shutdown_grace)
        ownership = _ownership(owner, authoritative, retire_grace)  # refused before any database is touched
        ownership.update(_retention(job_retention, job_keep))
        ownership.update(ownership_jobs)
        log = printable_logger("awa_tui")
        if not 1.0 <= leader_lease <= 86400.0:  # also refuses nan and inf, before any server starts
            fail(f"--leader-lease: must be between 1 and 86400 seconds, got {leader_lease:g}")
        ownership.update(_pass_timeouts(lock_timeout, statement_timeout, leader_lease))
        ownership.update(_fleet_thresholds(fleet_alert_grace, fleet_stall_after))
        if metrics_addr is not None:
            parse_addr(metrics_addr)  # a malformed address fails before any database is touched
        leader = leader_dsn_of(leader_dsn, leader_dsn_file)
        dsn_value, _ = dsn_or_embedded(dsn, lambda m: log.info("%s", m))
        # This process lives for the runtime: what it registers is kept to the end, so the
        # cycle collector is off while it registers and skips it afterwards (runtime/heap.py).
        client, frozen = registered_then_frozen(lambda: build_client(
            dsn_value, app_ref, demo, operator, application_name="awa-tui run",
            leader_lease=timedelta(seconds=leader_lease), leader_dsn=leader, sql_jobs=sql_statement_timeout,
            **ownership))
        client.runtime.on_pass.append(_log_fires)
        log.info("%d schedules registered (%d objects frozen); Ctrl-C stops", len(client.schedules), frozen)
        if metrics_addr is not None:
            try:
                served = client.serve_metrics(metrics_addr, schedule_series=metrics_schedules)
            except AwaError:
                client.close()
                raise
            log.info("serving /metrics on %s:%d", served.host, served.bound_port)
        client.run(migrate=not no_migrate)
        refusal = client.runtime.leader_refusal  # a runtime that never competed held no lock to release
        log.info("stopped cleanly (%s)", f"it never led: {refusal}" if refusal else "leader lock released")


def _pass_timeouts(lock_s: float | None, statement_s: float, lease_s: float) -> dict[str, Any]:
    """The Client's pass timeouts from run's options (S59), refused in one line that names
    the option, before any database is touched."""
    from awa_tui.engine.core.errors import ValidationError
    from awa_tui.engine.core.limits import pass_timeouts

    for option, value in (("--lock-timeout", lock_s), ("--statement-timeout", statement_s)):
        if value is not None and not 0 < value < 86400 * 366:  # nan, inf, negative: no timedelta
            fail(f"{option}: must be a positive number of seconds, got {value:g}")
    lock = None if lock_s is None else timedelta(seconds=lock_s)
    statement = timedelta(seconds=statement_s)
    try:
        pass_timeouts(lock, statement, timedelta(seconds=lease_s))
    except ValidationError as exc:
        fail(str(exc).replace("lock_timeout:", "--lock-timeout:").replace("statement_timeout:", "--statement-timeout:")
             .replace("the leader lease", "--leader-lease"))
    return {"lock_timeout": lock, "statement_timeout": statement}


def _fleet_thresholds(grace: str | None, stall_after: str | None) -> dict[str, Any]:
    """The fleet alerts' thresholds from run's options, refused in one line naming the option
    before any database is touched."""
    from awa_tui.engine.core.errors import ValidationError
    from awa_tui.engine.core.limits import MIN_FLEET_GRACE, check_fleet_threshold

    thresholds: dict[str, Any] = {}
    for option, key, text, least in (("--fleet-alert-grace", "fleet_alert_grace", grace, MIN_FLEET_GRACE),
                                     ("--fleet-stall-after", "fleet_stall_after", stall_after, timedelta(seconds=1))):
        if text is None:
            continue
        try:
            thresholds[key] = check_fleet_threshold(option, parse_duration(option, text), least)
        except ValidationError as exc:
            fail(str(exc))
    return thresholds


def _ownership(owner: str | None, authoritative: bool, retire_grace: str | None) -> dict[str, Any]:
    """The Client's owner arguments from run's options, each misuse refused in one line."""
    from awa_tui.engine.ownership.manifest import check_new_owner

    if owner is not None:
        check_new_owner(owner)
    if authoritative and owner is None:
        fail("--authoritative needs --owner OWNER: the owner whose complete manifest this runtime declares")
    if retire_grace is not None and not authoritative:
        fail("--retire-grace applies only with --authoritative (only an authoritative owner retires schedules)")
    ownership: dict[str, Any] = {"owner": owner, "authoritative": authoritative}
    if retire_grace is not None:
        ownership["retire_grace"] = parse_duration("--retire-grace", retire_grace)
    return ownership


def _jobs(concurrency: int, queues: str | None, grace_s: float) -> dict[str, Any]:
    """The Client's worker arguments from run's options, refused in one line before any
    database is touched."""
    from datetime import timedelta

    from awa_tui.engine.core.limits import check_grace
    from awa_tui.engine.jobs.slots import Slots

    names = [q.strip() for q in queues.split(",")] if queues is not None else None
    Slots.parse(concurrency, names)
    if not 0 <= grace_s <= 3600:  # NaN too
        fail(f"--shutdown-grace: from 0 to 3600 seconds, got {grace_s:g}")
    return {"concurrency": concurrency, "queues": names, "shutdown_grace": check_grace(timedelta(seconds=grace_s))}


def _retention(job_retention: str | None, job_keep: int | None) -> dict[str, Any]:
    """The Client's retention arguments (the leader's housekeeping, S40), refused in one line."""
    from awa_tui.engine.core.limits import MAX_KEEP

    retention: dict[str, Any] = {}
    if job_retention is not None:
        retention["job_retention"] = parse_retention(job_retention, "--job-retention")
    if job_keep is not None:
        if not 0 <= job_keep <= MAX_KEEP:
            fail(f"--job-keep: expected 0..{MAX_KEEP} jobs per schedule, got {job_keep}")
        retention["job_keep"] = job_keep
    return retention


@app.command()
def migrate(
    what: Annotated[str | None, typer.Argument(
        metavar="[status]", help="`status`: list the applied, pending and unknown migrations; change nothing.")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="List what would run, in order, and what each locks; change nothing.")] = False,
    down_to: Annotated[int | None, typer.Option(
        "--down-to", metavar="VERSION", min=0, help=(
            "Undo the migrations above VERSION, newest first (only those that ship their undoing: "
            "docs/operations.md, Upgrading)."))] = None,
    leaders_from: Annotated[int | None, typer.Option(
        "--leaders-from", metavar="PROTOCOL", min=1, help=(
            "Set the lowest runtime protocol that may lead (`awa-tui --version` names a release's): 1 lets "
            "the previous release lead again before a rollback; migrate nothing else."))] = None,
    dsn: DsnOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Apply every migration the database lacks, in order, each in its own transaction."""
    from awa_tui.bootstrap import dsn_or_embedded
    from awa_tui.engine import migrations

    if what not in (None, "status"):
        fail(f"migrate: unknown argument {what!r}: the only one is `status`", 2)
    with errors_as_lines():
        target = dsn_or_embedded(dsn, say)[0]
        if down_to is not None:
            undone = migrations.migrate_down(target, down_to)
            emit({"undone": undone, "version": down_to}, as_json, lambda: say(
                f"undone {', '.join(f'v{v:03d}' for v in undone)}" if undone else f"nothing above {down_to}"))
            return
        if leaders_from is not None:
            before = migrations.set_leader_floor(target, leaders_from)
            emit({"leaders_from": leaders_from, "before": before}, as_json, lambda: say(
                f"runtimes of protocol {leaders_from} and above may lead (it was {before})"))
            return
        if what == "status" or dry_run:
            found = migrations.status_at(target)
            if found.foreign:
                fail(migrations.foreign_refusal(found.foreign))
            _show_status(found, as_json, plan_only=dry_run and what is None)
            return
        applied = migrations.migrate(target)
        data = {"applied": applied, "version": migrations.code_version()}
        emit(data, as_json, lambda: say(
            f"applied {', '.join(f'v{v:03d}' for v in applied)}" if applied else
            f"up to date (schema version {data['version']})"))


def _show_status(found: Any, as_json: bool, *, plan_only: bool) -> None:
    """`migrate status` (everything) or `migrate --dry-run` (what would run)."""
    renumbered = [{"name": r.name, "recorded": r.recorded, "version": r.current} for r in found.renumbered]
    pending = [{"version": s.version, "name": s.name, "locks": list(s.locks)} for s in found.pending]
    data: dict[str, Any] = {"version": found.code_version, "database": found.newest, "renumbered": renumbered,
                            "pending": pending}
    if not plan_only:
        data["applied"] = [{"version": v, "name": n} for v, n in found.applied]
        data["unknown"] = [{"version": v, "name": n} for v, n in found.unknown]

    def render() -> None:
        if not plan_only:
            say(f"this awa-tui needs schema {found.code_version}; the database "
                + (f"is at {found.newest}" if found.newest is not None else "has no awa schema"))
            say("applied: " + (", ".join(f"v{v:03d} {n}" for v, n in found.applied) or "none"))
            if found.unknown:
                say("unknown (a newer awa-tui's): " + ", ".join(f"v{v:03d} {n}" for v, n in found.unknown))
        for r in found.renumbered:
            say(f"to record again: {r.describe()} (applied under its old number)")
        if not found.pending:
            say("nothing to apply" if plan_only else "pending: none")
            return
        say("would apply, in order:" if plan_only else "pending, in order:")
        for step in found.pending:
            say(f"  {step.label}: locks {', '.join(step.locks)} (ACCESS EXCLUSIVE on the first two)")

    emit(data, as_json, render)


@db_app.command("status")
def db_status(dsn: DsnOpt = None, as_json: JsonOpt = False) -> None:
    """The configured database: its schema (awa-tui's, upstream Awa's, or none) and version.
    With none configured: where the embedded server lives, its version, whether it runs."""
    from awa_tui import embedded
    from awa_tui.bootstrap import running_embedded_dsn
    from awa_tui.cli.upstream import database_status

    with errors_as_lines():
        if resolve_dsn(dsn) is not None:
            found = database_status(require_dsn(dsn))
            backend = make_client(dsn, read_only=True)  # on a standby it says so on stderr
            try:
                role = backend.reads.server_role()
            finally:
                backend.close()
            found.update(standby=role.standby, replay_lag_s=role.replay_lag_s)
            emit(found, as_json, lambda: emit_table([found], list(found), title="database"))
            return
        data = embedded.status()
        data["dsn"] = running_embedded_dsn() or data["dsn"]  # the port it really listens on

        def render() -> None:
            emit_table([data], list(data), title="embedded Postgres")
            if data["running"]:
                _say_reuse(str(data["dsn"]))

        emit(data, as_json, render)


def _say_reuse(dsn: str) -> None:
    # No password: role postgres over the socket by peer authentication (embedded.py).
    say(f"reuse it: --dsn '{dsn}' (commands with no database configured use it while it runs)")


@db_app.command("start")
def db_start(as_json: JsonOpt = False) -> None:
    """Start the embedded server (or reuse the running one) and apply migrations."""
    from awa_tui import embedded
    from awa_tui.bootstrap import running_embedded_dsn
    from awa_tui.engine import migrations

    with errors_as_lines():
        server = embedded.ensure_running()
        dsn = running_embedded_dsn() or server.dsn()  # a server started earlier keeps its port
        applied = migrations.migrate(dsn)
        data = {"home": str(server.home), "dsn": dsn, "applied": applied}

        def render() -> None:
            say(f"embedded Postgres running at {server.home}"
                + (f"; applied {', '.join(f'v{v:03d}' for v in applied)}" if applied else ""))
            _say_reuse(dsn)

        emit(data, as_json, render)


@db_app.command("init-audit")
def db_init_audit(dsn: DsnOpt = None, as_json: JsonOpt = False) -> None:
    """Create awa-tui's audit trail (schema awa_tui_audit) on an upstream Awa database, so
    actions in upstream mode are recorded; upstream's own schema is not touched."""
    from awa_tui.cli.upstream import init_upstream_audit

    with errors_as_lines():
        data = init_upstream_audit(require_dsn(dsn))
        emit(data, as_json, lambda: say(
            f"created {data['table']}: operator actions on this database are now audited" if data["created"]
            else f"{data['table']} already exists: operator actions on this database are audited"))


@db_app.command("stop")
def db_stop(as_json: JsonOpt = False) -> None:
    """Stop the embedded server."""
    from awa_tui import embedded

    with errors_as_lines():
        stopped = embedded.stop()
        emit({"stopped": stopped}, as_json, lambda: say(
            "embedded Postgres stopped" if stopped else "embedded Postgres was not running"))


@runtime_app.command("list")
def runtime_list(dsn: DsnOpt = None, as_json: JsonOpt = False) -> None:
    """Runtime snapshots, fresh or stale in DB time; the role is the leader lock's holder's
    (leader, or stalled when its lease expired), not the snapshots' is_leader flags."""
    with errors_as_lines():
        client = make_client(dsn, read_only=True)
        rows = client.reads.list_runtimes()
        if as_json:
            emit_json(rows)
            return
        columns = ["instance_id", "hostname", "pid", "version", "schema_version", "leader_protocol", "role", "fresh",
                   "health", "last_seen_at", "owner", "manifest_hash"]
        # A runtime that never competes for the leader lock says why in its ROLE (its role is
        # only the lock's verdict: follower); --json keeps role and lead_refusal apart.
        emit_table([{**{c: getattr(r, c) for c in columns},
                     **({"role": f"refused: {r.lead_refusal}"} if r.lead_refusal and r.role == "follower" else {})}
                    for r in rows], columns)
        leadership = client.reads.leadership()
        if leadership is not None:  # upstream Awa has no leader lock of ours to name
            say(leader_line(leadership))


@runtime_app.command("events")
def runtime_events(
    instance: Annotated[str, typer.Argument(help="The runtime's instance id (`runtime list` shows them).")],
    dsn: DsnOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A runtime's recent events, newest first, at their database times: started, became
    leader, lost or released the lead, a pass that timed out on a lock, refused to lead, stopped."""
    with errors_as_lines():
        client = make_client(dsn, read_only=True)
        found = client.reads.runtime_events(instance)
        if found is None:
            fail(f"no runtime {instance!r}: no snapshot row has that id (`runtime list` shows them)")
        if as_json:
            emit_json(found)
            return
        if found.refusal:
            say(f"refused: {found.refusal}; it never competes for the leader lock")
        emit_table([{"at": e.at, "event": e.kind, "detail": e.detail or "-"} for e in found.events],
                   ["at", "event", "detail"], title=f"runtime {found.instance_id} ({found.hostname} pid {found.pid})")


def leader_line(leadership: Leadership) -> str:
    """One line naming the leader lock's holder, STALLED when its lease has expired."""
    if not leadership.held:
        return "leader: none (nobody holds the leader lock: nothing fires)"
    if leadership.stalled:
        return f"leader: STALLED {leadership.holder()} (lease expired; a standby deposes it)"
    return f"leader: {leadership.holder()} (lease {leadership.lease_left_s:.1f}s left)"


@app.command()
def audit(
    dsn: DsnOpt = None,
    as_json: JsonOpt = False,
    target: Annotated[str | None, typer.Option("--target", help="Only entries for this target.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10000)] = 50,
    operator: Annotated[str | None, typer.Option("--operator", help="Only entries by this operator.")] = None,
    action: Annotated[str | None, typer.Option("--action", help="Only this action (pause, job_retry...).")] = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    before_id: Annotated[int | None, typer.Option("--before-id", min=1, help="The page older than this id.")] = None,
) -> None:
    """The operator audit trail, newest first, filtered and paged."""
    with errors_as_lines():
        client = make_client(dsn, read_only=True)
        now = client.reads.db_time() if since is not None or until is not None else None
        start = parse_point(since, "--since", now) if since is not None and now is not None else None
        end = parse_point(until, "--until", now) if until is not None and now is not None else None
        check_range(start, end)
        page = client.reads.search_audit(operator=operator, action=action, target=target, since=start, until=end,
                                   limit=limit, before_id=before_id)
        rows = [e.to_dict() for e in page.entries]
        if as_json:
            emit_json(rows)
        else:
            emit_table(rows, ["id", "at", "operator", "action", "target", "before", "after"])
            if page.next_before_id is not None:
                say(f"older entries: --before-id {page.next_before_id}")
