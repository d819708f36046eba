"""`awa-tui` with no subcommand: the operator console (S36, S37)."""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import timedelta
from typing import Annotated

import typer

from awa_tui.cli import app
from awa_tui.cli.common import fail, leader_dsn_of, sql_timeout_of
from awa_tui.cli.health import MetricsAddrOpt, ScheduleSeriesOpt
from awa_tui.cli.options import (
    APP_HELP,
    SQL_TIMEOUT_DEFAULT,
    DsnOpt,
    LeaderDsnFileOpt,
    LeaderDsnOpt,
    OperatorOpt,
    SqlJobsOpt,
    SqlTimeoutOpt,
)
from awa_tui.config import REFRESH_MAX_S, REFRESH_MIN_S, resolve_dsn
from awa_tui.engine.core.errors import AwaError
from awa_tui.engine.health.listen import DEFAULT_SCHEDULE_SERIES

NO_TERMINAL = ("the console needs a terminal and this has none: run the scheduler headless with `awa-tui run`, "
               "or a subcommand (`awa-tui --help` lists them: cron, jobs, check, migrate ...)")


def version_line() -> str:
    """What `awa-tui --version` prints: the release, the schema it migrates to and the runtime
    protocol it speaks (docs/versioning.md)."""
    from awa_tui import __version__
    from awa_tui.engine.migrations import code_version
    from awa_tui.engine.runtime.identity import RUNTIME_PROTOCOL

    # The protocol the schema's release policy judges (`migrate --leaders-from` takes it).
    return f"awa-tui {__version__} (schema version {code_version()}, runtime protocol {RUNTIME_PROTOCOL})"


def _show_version(shown: bool) -> None:
    if shown:
        sys.stdout.write(version_line() + "\n")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def console(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option(
        "--version", "-V", callback=_show_version, is_eager=True,
        help="Print the version (and the schema version and runtime protocol) and exit.")] = False,
    dsn: DsnOpt = None,
    lead: Annotated[bool, typer.Option("--lead", help="Also run the engine in-process as a leader.")] = False,
    app_ref: Annotated[str | None, typer.Option("--app", help=APP_HELP)] = None,
    demo: Annotated[bool, typer.Option("--demo", help="Load the built-in demo schedules.")] = False,
    read_only: Annotated[bool, typer.Option(
        "--read-only", help="No mutations, in the UI or the engine (not with --lead, whose engine writes).")] = False,
    operator: OperatorOpt = None,
    refresh: Annotated[float | None, typer.Option(
        "--refresh", help=f"Panel refresh interval, seconds ({REFRESH_MIN_S:g} to {REFRESH_MAX_S:g}; default: "
        "the config file's, else 2).", show_default=False)] = None,
    metrics_addr: MetricsAddrOpt = None,
    metrics_schedules: ScheduleSeriesOpt = DEFAULT_SCHEDULE_SERIES,
    leader_dsn: LeaderDsnOpt = None,
    leader_dsn_file: LeaderDsnFileOpt = None,
    sql_jobs: SqlJobsOpt = False,
    sql_timeout: SqlTimeoutOpt = SQL_TIMEOUT_DEFAULT,
) -> None:
    given = leader_dsn is not None or leader_dsn_file is not None
    if ctx.invoked_subcommand is not None:
        if given:
            fail("--leader-dsn before a subcommand: it belongs to `awa-tui --lead` or `awa-tui run --leader-dsn`")
        return
    try:
        from awa_tui.tui.config import read_user_config, user_config_path, user_settings
        from awa_tui.tui.launch import build_config, check_options, launch_console, say
    except ImportError:
        fail("the console is not available in this build; use `awa-tui run` or `awa-tui --help`")
    # The user's config file (awa-tui/config.toml): a flag given wins; a bad file is one
    # warning line when the console starts, and ignored.
    user, config_problem = read_user_config(user_config_path())
    if refresh is None:
        refresh = user.refresh if user.refresh is not None else 2.0
    # The variable is for an engine in this process: without --lead only the flags count
    # (and are refused).
    leader = leader_dsn_of(leader_dsn, leader_dsn_file) if lead or given else None
    statement_timeout = sql_timeout_of(sql_jobs, sql_timeout)  # one line when given alone or out of range
    from awa_tui.engine.core.db import check_dsn

    try:
        check_options(lead=lead, app_ref=app_ref, demo=demo, read_only=read_only, refresh=refresh,
                      metrics_addr=metrics_addr, leader_dsn=leader, sql_jobs=sql_jobs)
        configured = resolve_dsn(dsn)
        if configured is not None:
            check_dsn(configured)  # a malformed URL is named as such, terminal or not
    except AwaError as exc:
        fail(str(exc))
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        # `ssh host awa-tui` without -t, a CI step, a pipe: a full-screen console there would
        # hang (and under --lead be a leader nobody sees), so it is refused before it starts.
        fail(NO_TERMINAL, 2)
    try:
        config = build_config(
            dsn=dsn, lead=lead, app_ref=app_ref, demo=demo, read_only=read_only,
            operator=operator, refresh=refresh, say=say,
            metrics_addr=metrics_addr, metrics_schedules=metrics_schedules, leader_dsn=leader, sql_jobs=sql_jobs,
            sql_timeout=statement_timeout or timedelta(seconds=SQL_TIMEOUT_DEFAULT),
        )
    except AwaError as exc:
        fail(str(exc))
    launch_console(replace(config, **user_settings(user, config_problem)))
