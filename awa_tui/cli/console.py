"""`awa-tui` with no subcommand: the operator console (S36, S37)."""

from __future__ import annotations

from typing import Annotated

import typer

from awa_tui.cli import app
from awa_tui.cli.common import fail, leader_dsn_of
from awa_tui.cli.health import MetricsAddrOpt, ScheduleSeriesOpt
from awa_tui.cli.options import APP_HELP, DsnOpt, LeaderDsnFileOpt, LeaderDsnOpt, OperatorOpt
from awa_tui.config import REFRESH_MAX_S, REFRESH_MIN_S
from awa_tui.engine.errors import AwaError
from awa_tui.engine.health.listen import DEFAULT_SCHEDULE_SERIES


@app.callback(invoke_without_command=True)
def console(
    ctx: typer.Context,
    dsn: DsnOpt = None,
    lead: Annotated[bool, typer.Option("--lead", help="Also run the engine in-process as a leader.")] = False,
    app_ref: Annotated[str | None, typer.Option("--app", help=APP_HELP)] = None,
    demo: Annotated[bool, typer.Option("--demo", help="Load the built-in demo schedules.")] = False,
    read_only: Annotated[bool, typer.Option(
        "--read-only", help="No mutations, in the UI or the engine (not with --lead, whose engine writes).")] = False,
    operator: OperatorOpt = None,
    refresh: Annotated[float, typer.Option(
        "--refresh", help=f"Panel refresh interval, seconds ({REFRESH_MIN_S:g} to {REFRESH_MAX_S:g}).")] = 2.0,
    metrics_addr: MetricsAddrOpt = None,
    metrics_schedules: ScheduleSeriesOpt = DEFAULT_SCHEDULE_SERIES,
    leader_dsn: LeaderDsnOpt = None,
    leader_dsn_file: LeaderDsnFileOpt = None,
) -> None:
    given = leader_dsn is not None or leader_dsn_file is not None
    if ctx.invoked_subcommand is not None:
        if given:
            fail("--leader-dsn before a subcommand: it belongs to `awa-tui --lead` or `awa-tui run --leader-dsn`")
        return
    try:
        from awa_tui.tui.launch import build_config, launch_console, say
    except ImportError:
        fail("the console is not available in this build; use `awa-tui run` or `awa-tui --help`")
    # The variable is for an engine in this process: without --lead only the flags count
    # (and are refused).
    leader = leader_dsn_of(leader_dsn, leader_dsn_file) if lead or given else None
    try:
        config = build_config(
            dsn=dsn, lead=lead, app_ref=app_ref, demo=demo, read_only=read_only,
            operator=operator, refresh=refresh, say=say,
            metrics_addr=metrics_addr, metrics_schedules=metrics_schedules, leader_dsn=leader,
        )
    except AwaError as exc:
        fail(str(exc))
    launch_console(config)
