"""`awa-tui check` (S43): one line per unhealthy schedule, one per fleet problem, a
summary line, and a Nagios exit code: 0 ok, 1 warning (late), 2 critical (failing, missed,
broken, paused by awa-autopause; no live leader, leader stalled, schema mismatch), 3 cannot
tell (database unreachable, unknown schedule). `--alive` and `--registered` probe one
runtime instead (a container's liveness and readiness)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated, NoReturn, TypeVar

import typer

from awa_tui.cli import app
from awa_tui.cli.common import emit_json, make_client, resolved_dsn, say
from awa_tui.cli.options import DsnOpt, JsonOpt
from awa_tui.engine.core.errors import AwaError
from awa_tui.engine.core.limits import CHECK_TIMEOUT
from awa_tui.printable import printable

if TYPE_CHECKING:
    from awa_tui.engine.health.models import CheckReport, ProbeReport, ScheduleHealth

METRICS_ADDR_HELP = "Serve Prometheus /metrics on HOST:PORT (e.g. 127.0.0.1:9464)."
SCHEDULE_SERIES_HELP = ("Per-schedule metric series for at most this many schedules, unhealthy first "
                        "(0: none; the per-health totals always cover all).")
MetricsAddrOpt = Annotated[str | None, typer.Option("--metrics-addr", metavar="HOST:PORT", help=METRICS_ADDR_HELP)]
ScheduleSeriesOpt = Annotated[int, typer.Option("--metrics-schedules", min=0, help=SCHEDULE_SERIES_HELP)]


def _line(s: ScheduleHealth) -> str:
    level = "WARNING" if s.health == "late" else "CRITICAL"
    since = s.since.isoformat() if s.since else "unknown"
    owner = f"owner {s.owner}, " if s.owner else ""
    return f"{level} {s.health} {s.name} ({owner}queue {s.queue}) since {since}: {s.reason or ''}"


def summary(report: CheckReport) -> str:
    parts = [f"{h} {report.unhealthy_count(h)}" for h in ("broken", "failing", "missed", "late")
             if report.unhealthy_count(h)]
    autopaused = sum(1 for s in report.unhealthy if s.autopaused)
    if autopaused:
        parts.append(f"autopaused {autopaused}")
    health = f"{len(report.unhealthy)} unhealthy of {report.checked} schedules" + (
        f" ({', '.join(parts)})" if parts else "")
    fleet = f"{len(report.fleet)} fleet problem(s)" if report.fleet else "leader ok"
    return f"{report.status.upper()}: {health}; {fleet}"


ALIVE_HELP = ("Only this: is the runtime serving /metrics on HOST:PORT (its --metrics-addr, e.g. "
              "127.0.0.1:9464) alive, with none of its loops stuck? Reads no database. For a liveness probe.")
REGISTERED_HELP = ("Only this: does the database answer, and has a runtime on this host (its hostname: in "
                   "Kubernetes the pod's name) a fresh snapshot? For a readiness probe.")
STUCK_HELP = "With --alive: a loop inside one step for longer than this is stuck."
CHECK_TIMEOUT_S = CHECK_TIMEOUT.total_seconds()
TIMEOUT_HELP = ("Answer within this: a lock or a statement the check waits on longer makes it UNKNOWN (exit 3), "
                "naming the session in the way.")


ReportT = TypeVar("ReportT")


def _or_unknown(read: Callable[[], ReportT]) -> ReportT:
    """The report `read` makes; any error on the way means the check cannot tell (exit 3)."""
    try:
        return read()
    except AwaError as exc:
        raise _unknown(str(exc)) from None


def _finish(report: CheckReport | ProbeReport, as_json: bool, lines: Callable[[], list[str]]) -> NoReturn:
    """The report as JSON or as its lines, then its exit code."""
    if as_json:
        emit_json(report)
    else:
        for line in lines():
            say(line)
    raise typer.Exit(report.exit_code)


def _unknown(message: str) -> typer.Exit:
    """The status line a monitoring system reads (stdout), and the error as every command
    words one (stderr); exit 3, cannot tell."""
    from awa_tui.engine.health.models import EXIT_UNKNOWN

    message = printable(" ".join(message.split()))
    typer.echo(f"UNKNOWN: {message}")
    if not _same_terminal():  # on one terminal the two lines would say the same thing twice
        typer.echo(f"error: {message}", err=True)
    return typer.Exit(EXIT_UNKNOWN)


def _same_terminal() -> bool:
    """stdout and stderr are one terminal (an operator typing `check`), not a pipe or a log."""
    import os
    import sys

    try:
        if not (sys.stdout.isatty() and sys.stderr.isatty()):
            return False
        out, err = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
    except (OSError, ValueError):
        return False
    return (out.st_dev, out.st_ino, out.st_rdev) == (err.st_dev, err.st_ino, err.st_rdev)


@app.command()
def check(
    dsn: DsnOpt = None,
    as_json: JsonOpt = False,
    owner: Annotated[str | None, typer.Option("--owner", help="Only this owner's schedules.")] = None,
    schedule: Annotated[str | None, typer.Option("--schedule", help="Only this schedule.")] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Only schedules with this tag.")] = None,
    alive: Annotated[str | None, typer.Option("--alive", metavar="HOST:PORT", help=ALIVE_HELP)] = None,
    registered: Annotated[bool, typer.Option("--registered", help=REGISTERED_HELP)] = False,
    stuck_after: Annotated[float | None, typer.Option("--stuck-after", metavar="SECONDS", help=STUCK_HELP)] = None,
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS", help=TIMEOUT_HELP)] = CHECK_TIMEOUT_S,
) -> None:
    """Health of the schedules and of the runtime fleet, with an exit code for cron,
    Nagios/Icinga and CI: 0 ok, 1 warning, 2 critical, 3 cannot tell. With --alive or
    --registered, only one runtime's liveness or readiness, for a container's probes."""
    if alive is not None or registered:
        if owner is not None or schedule is not None or tag is not None:
            raise _unknown("--alive and --registered check one runtime, not schedules: "
                           "drop --owner, --schedule and --tag (or run a second check)")
        _probe(dsn, as_json, alive, registered, stuck_after)
    if stuck_after is not None:
        raise _unknown("--stuck-after applies only with --alive")
    if not 0.1 <= timeout <= 3600.0:  # also refuses nan and inf
        raise _unknown(f"--timeout: must be between 0.1 and 3600 seconds, got {timeout:g}")
    target = _or_unknown(lambda: resolved_dsn(dsn))  # none configured: cannot tell (3), not a usage error
    report = _or_unknown(lambda: make_client(target, read_only=True).reads.check(
        owner=owner, schedule=schedule, tag=tag, timeout=timedelta(seconds=timeout)))
    _finish(report, as_json, lambda: [*map(_line, report.unhealthy),
                                      *(f"{'WARNING' if p.warning else 'CRITICAL'} fleet {p.code}: {p.message}"
                                        for p in report.fleet),
                                      summary(report)])


def _probe(dsn: str | None, as_json: bool, alive: str | None, registered: bool, stuck_after: float | None) -> None:
    """`--alive` / `--registered`: one line per problem, then a summary line; exit 0 or 2."""
    import socket

    from awa_tui.engine.health.listen import parse_addr
    from awa_tui.engine.runtime.alive import DEFAULT_STUCK_AFTER_S
    from awa_tui.engine.runtime.probe import probe

    if stuck_after is not None and alive is None:
        raise _unknown("--stuck-after applies only with --alive")
    if stuck_after is not None and not 1.0 <= stuck_after <= 86400.0:  # also refuses nan and inf
        raise _unknown(f"--stuck-after: must be between 1 and 86400 seconds, got {stuck_after:g}")

    def read() -> ProbeReport:
        if alive is not None:
            parse_addr(alive, "--alive")  # a malformed address is the caller's mistake: cannot tell
        # The database is opened only for --registered: --alive alone never touches it.
        registered_runtimes = make_client(dsn, read_only=True).reads.registered_runtimes if registered else None
        return probe(alive_at=alive, stuck_after_s=stuck_after or DEFAULT_STUCK_AFTER_S,
                     hostname=socket.gethostname(), registered=registered_runtimes)

    report = _or_unknown(read)
    _finish(report, as_json, lambda: [*(f"CRITICAL {problem}" for problem in report.problems), probe_summary(report)])


def probe_summary(report: ProbeReport) -> str:
    parts = []
    if report.alive is not None and not report.problems:
        parts.append(f"runtime {report.alive.hostname}:{report.alive.pid} {report.alive.state}, "
                     f"{len(report.alive.loops)} loops, none stuck")
    if report.registered:
        newest = report.registered[0]
        parts.append(f"registered as {newest.instance_id} on {newest.hostname} (pid {newest.pid})")
    if report.problems:
        parts.append(f"{len(report.problems)} problem(s)")
    return f"{report.status.upper()}: {'; '.join(parts)}"
