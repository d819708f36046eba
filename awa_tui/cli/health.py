"""`awa-tui check` (S43): one line per unhealthy schedule, one per fleet problem, a
summary line, and a Nagios exit code: 0 ok, 1 warning (late), 2 critical (failing, missed,
broken, paused by awa-autopause; no live leader, leader stalled, schema mismatch), 3 cannot
tell (database unreachable, unknown schedule)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from awa_tui.cli import app
from awa_tui.cli.common import DsnOpt, JsonOpt, emit_json, make_client, say
from awa_tui.engine.errors import AwaError
from awa_tui.printable import printable

if TYPE_CHECKING:
    from awa_tui.engine.health.models import CheckReport, ScheduleHealth

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


@app.command()
def check(
    dsn: DsnOpt = None,
    as_json: JsonOpt = False,
    owner: Annotated[str | None, typer.Option("--owner", help="Only this owner's schedules.")] = None,
    schedule: Annotated[str | None, typer.Option("--schedule", help="Only this schedule.")] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Only schedules with this tag.")] = None,
) -> None:
    """Health of the schedules and of the runtime fleet, with an exit code for cron,
    Nagios/Icinga, Kubernetes probes and CI: 0 ok, 1 warning, 2 critical, 3 cannot tell."""
    from awa_tui.engine.health.models import EXIT_UNKNOWN

    try:
        client = make_client(dsn, read_only=True)
        report = client.check(owner=owner, schedule=schedule, tag=tag)
    except AwaError as exc:
        # The status line a monitoring system reads (stdout), and the error as every
        # command words one (stderr).
        message = printable(" ".join(str(exc).split()))
        typer.echo(f"UNKNOWN: {message}")
        typer.echo(f"error: {message}", err=True)
        raise typer.Exit(EXIT_UNKNOWN) from None
    if as_json:
        emit_json(report)
    else:
        for s in report.unhealthy:
            say(_line(s))
        for problem in report.fleet:
            say(f"CRITICAL fleet {problem.code}: {problem.message}")
        say(summary(report))
    raise typer.Exit(report.exit_code)
