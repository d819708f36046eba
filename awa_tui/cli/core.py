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
)
from awa_tui.cli.health import MetricsAddrOpt, ScheduleSeriesOpt
from awa_tui.cli.options import APP_HELP, DsnOpt, JsonOpt, LeaderDsnFileOpt, LeaderDsnOpt, OperatorOpt
from awa_tui.cli.timeargs import SinceOpt, UntilOpt, check_range, parse_point
from awa_tui.cli.timeargs import parse_duration as parse_retention
from awa_tui.config import parse_duration, resolve_dsn
from awa_tui.engine.errors import AwaError
from awa_tui.engine.health.listen import DEFAULT_SCHEDULE_SERIES, parse_addr
from awa_tui.printable import PrintableFormatter, printable_logger

if TYPE_CHECKING:
    from awa_tui.engine.runtime.leader import Leadership

# The engine, the embedded server and upstream mode are imported by the commands that use
# them: `awa-tui audit` does not load what `awa-tui run` needs (issue 18).

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
) -> None:
    """Run the headless runtime (sync, snapshots, leader election, evaluator, worker)."""
    from awa_tui.bootstrap import build_client, dsn_or_embedded
    from awa_tui.engine.runtime.heap import registered_then_frozen

    # Names, kinds and errors in log lines come from the database: one escaped line each,
    # whichever logger wrote it (the engine's own loggers escape at the source too).
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    logging.getLogger("awa_tui.evaluator").setLevel(logging.INFO)
    with errors_as_lines():
        if not demo and not app_ref:
            fail("nothing to run: pass --demo or --app module:attribute")
        ownership = _ownership(owner, authoritative, retire_grace)  # refused before any database is touched
        ownership.update(_retention(job_retention, job_keep))
        log = printable_logger("awa_tui")
        if not 1.0 <= leader_lease <= 86400.0:  # also refuses nan and inf, before any server starts
            fail(f"--leader-lease: must be between 1 and 86400 seconds, got {leader_lease:g}")
        ownership.update(_pass_timeouts(lock_timeout, statement_timeout, leader_lease))
        if metrics_addr is not None:
            parse_addr(metrics_addr)  # a malformed address fails before any database is touched
        leader = leader_dsn_of(leader_dsn, leader_dsn_file)
        dsn_value, _ = dsn_or_embedded(dsn, lambda m: log.info("%s", m))
        # This process lives for the runtime: what it registers is kept to the end, so the
        # cycle collector is off while it registers and skips it afterwards (runtime/heap.py).
        client, frozen = registered_then_frozen(lambda: build_client(
            dsn_value, app_ref, demo, operator, application_name="awa-tui run",
            leader_lease=timedelta(seconds=leader_lease), leader_dsn=leader, **ownership))
        client.on_pass.append(_log_fires)
        jobs_log = printable_logger("awa_tui.jobs")
        client.on_job.append(lambda job, state: jobs_log.info("job %s %s -> %s", job.id, job.kind, state))
        log.info("%d schedules registered (%d objects frozen); Ctrl-C stops", len(client.schedules), frozen)
        if metrics_addr is not None:
            try:
                served = client.serve_metrics(metrics_addr, schedule_series=metrics_schedules)
            except AwaError:
                client.close()
                raise
            log.info("serving /metrics on %s:%d", served.host, served.bound_port)
        client.run()
        log.info("stopped cleanly (leader lock released)")


def _pass_timeouts(lock_s: float | None, statement_s: float, lease_s: float) -> dict[str, Any]:
    """The Client's pass timeouts from run's options (S59), refused in one line that names
    the option, before any database is touched."""
    from awa_tui.engine.errors import ValidationError
    from awa_tui.engine.limits import pass_timeouts

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


def _ownership(owner: str | None, authoritative: bool, retire_grace: str | None) -> dict[str, Any]:
    """The Client's owner arguments from run's options, each misuse refused in one line."""
    from awa_tui.engine.ownership.manifest import check_owner

    if owner is not None:
        check_owner(owner)
    if authoritative and owner is None:
        fail("--authoritative needs --owner OWNER: the owner whose complete manifest this runtime declares")
    if retire_grace is not None and not authoritative:
        fail("--retire-grace applies only with --authoritative (only an authoritative owner retires schedules)")
    ownership: dict[str, Any] = {"owner": owner, "authoritative": authoritative}
    if retire_grace is not None:
        ownership["retire_grace"] = parse_duration("--retire-grace", retire_grace)
    return ownership


def _retention(job_retention: str | None, job_keep: int | None) -> dict[str, Any]:
    """The Client's retention arguments (the leader's housekeeping, S40), refused in one line."""
    from awa_tui.engine.limits import MAX_KEEP

    retention: dict[str, Any] = {}
    if job_retention is not None:
        retention["job_retention"] = parse_retention(job_retention, "--job-retention")
    if job_keep is not None:
        if not 0 <= job_keep <= MAX_KEEP:
            fail(f"--job-keep: expected 0..{MAX_KEEP} jobs per schedule, got {job_keep}")
        retention["job_keep"] = job_keep
    return retention


@app.command()
def migrate(dsn: DsnOpt = None, as_json: JsonOpt = False) -> None:
    """Apply pending schema migrations."""
    from awa_tui.bootstrap import dsn_or_embedded
    from awa_tui.engine import migrations

    with errors_as_lines():
        applied = migrations.migrate(dsn_or_embedded(dsn, say)[0])
        data = {"applied": applied, "version": migrations.code_version()}
        emit(data, as_json, lambda: say(
            f"applied {', '.join(f'v{v:03d}' for v in applied)}" if applied else
            f"up to date (schema version {data['version']})"))


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
        rows = client.list_runtimes()
        if as_json:
            emit_json(rows)
            return
        emit_table(rows, [
            "instance_id", "hostname", "pid", "version", "protocol_version", "role", "fresh",
            "health", "last_seen_at", "owner", "manifest_hash"])
        leadership = client.leadership()
        if leadership is not None:  # upstream Awa has no leader lock of ours to name
            say(leader_line(leadership))


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
        now = client.db_time() if since is not None or until is not None else None
        start = parse_point(since, "--since", now) if since is not None and now is not None else None
        end = parse_point(until, "--until", now) if until is not None and now is not None else None
        check_range(start, end)
        page = client.search_audit(operator=operator, action=action, target=target, since=start, until=end,
                                   limit=limit, before_id=before_id)
        rows = [e.to_dict() for e in page.entries]
        if as_json:
            emit_json(rows)
        else:
            emit_table(rows, ["id", "at", "operator", "action", "target", "before", "after"])
            if page.next_before_id is not None:
                say(f"older entries: --before-id {page.next_before_id}")
