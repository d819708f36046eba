"""`awa-tui [--lead] [--demo] [--app m:attr] [--read-only]`: build the console and run it
(the CLI's options arrive here; nothing here depends on the CLI).

The console always has its own Client (reads and operator actions, read-only if asked).
Under --lead a second Client runs the engine in-process (sync, snapshots, election,
evaluator, worker) on its own threads and connections, so rendering never delays a pass.
Whatever ends the console (q, SIGHUP, SIGTERM, a lost terminal, a crash) ends in
`finally`, which stops the engine and releases the leader lock.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from awa_tui.config import REFRESH_MAX_S, REFRESH_MIN_S
from awa_tui.engine.core.errors import AwaError
from awa_tui.engine.health.listen import DEFAULT_SCHEDULE_SERIES, parse_addr
from awa_tui.tui.config import ConsoleConfig

if TYPE_CHECKING:
    from awa_tui.engine.backend.protocol import ConsoleBackend
    from awa_tui.engine.client import Client
    from awa_tui.tui.app import ConsoleApp


# The statement timeout of an in-process engine's SQL jobs (`--lead --sql-jobs`), as `run`'s default.
SQL_JOBS_TIMEOUT = timedelta(minutes=10)


def create_app(config: ConsoleConfig) -> ConsoleApp:
    """The one factory of the console: the CLI and the tests both build it here."""
    from awa_tui.tui.app import ConsoleApp

    return ConsoleApp(config)


def console_client(dsn: str, operator: str | None, read_only: bool) -> Client:
    """The console's own Client: reads and operator actions, never the engine's loops."""
    from awa_tui.engine.client import Client

    return Client(dsn, operator=operator, read_only=read_only, application_name="awa-tui console")


def upstream_console(dsn: str, operator: str | None, read_only: bool) -> ConsoleBackend:
    """The console's backend on an upstream Awa database (engine/upstream/backend.py)."""
    from awa_tui.engine.upstream.backend import UpstreamBackend

    return UpstreamBackend(dsn, operator=operator, read_only=read_only)


def check_options(*, lead: bool, app_ref: str | None, demo: bool, read_only: bool, refresh: float,
                  metrics_addr: str | None, leader_dsn: str | None, sql_jobs: bool = False) -> None:
    """The console's options checked together, before any database or terminal is needed:
    AwaError with a one-line message."""
    if not (REFRESH_MIN_S <= refresh <= REFRESH_MAX_S):  # also false for nan
        raise AwaError(f"--refresh: must be between {REFRESH_MIN_S:g} and {REFRESH_MAX_S:g} seconds, got {refresh:g}")
    if read_only and lead:
        raise AwaError("--read-only and --lead: a read-only console cannot run the engine, which writes; drop one")
    if leader_dsn is not None and not lead:
        raise AwaError("--leader-dsn is the in-process engine's leader connection: add --lead")
    if (app_ref or demo) and not lead:
        raise AwaError("--app and --demo register schedules for the engine: add --lead")
    if sql_jobs and not lead:
        raise AwaError("--sql-jobs runs SQL jobs in the in-process engine: add --lead")
    if metrics_addr is not None:
        if not lead:
            raise AwaError("--metrics-addr serves the in-process engine's metrics: add --lead")
        parse_addr(metrics_addr)  # malformed: refused before any database is touched


def build_config(
    *,
    dsn: str | None,
    lead: bool,
    app_ref: str | None,
    demo: bool,
    read_only: bool,
    operator: str | None,
    refresh: float,
    say: Callable[[str], None],
    clock: Callable[[], datetime] | None = None,
    metrics_addr: str | None = None,
    metrics_schedules: int = DEFAULT_SCHEDULE_SERIES,
    leader_dsn: str | None = None,
    sql_jobs: bool = False,
    sql_timeout: timedelta = SQL_JOBS_TIMEOUT,
) -> ConsoleConfig:
    """Resolve the database (embedded when none is configured), build the clients, and
    start the engine under --lead. Raises AwaError with a one-line message."""
    from awa_tui.bootstrap import build_client, dsn_or_embedded
    from awa_tui.engine.client import Client

    check_options(lead=lead, app_ref=app_ref, demo=demo, read_only=read_only, refresh=refresh,
                  metrics_addr=metrics_addr, leader_dsn=leader_dsn, sql_jobs=sql_jobs)
    resolved, is_embedded = dsn_or_embedded(dsn, say)
    from awa_tui.engine.migrations.detect import detect_at, label

    found = detect_at(resolved)
    if found.kind == "upstream":
        if lead:
            raise AwaError(f"--lead runs awa-tui's engine, which needs its own schema; this database holds "
                           f"{label(found)} (its own leader fires the schedules): drop --lead to operate it")
        return ConsoleConfig(client=upstream_console(resolved, operator, read_only), refresh=refresh, clock=clock,
                             handle_signals=True, schema_label=label(found))
    engine = None
    if lead:
        engine = build_client(resolved, app_ref, demo, operator, application_name="awa-tui console leader",
                              leader_dsn=leader_dsn, sql_jobs=sql_timeout if sql_jobs else None)
        if metrics_addr is not None:
            try:
                engine.serve_metrics(metrics_addr, schedule_series=metrics_schedules)
            except AwaError:
                engine.close()
                raise
        engine.start()  # migrates, syncs (bad definitions fail here), then runs the loops
    elif is_embedded and not read_only:
        Client(resolved, operator=operator).migrate()  # the zero-config database starts empty
    return ConsoleConfig(
        client=console_client(resolved, operator, read_only),
        engine=engine,
        # Its DSN (under the home; no password: peer over the socket), so the header names a
        # database other tools can reuse.
        embedded_at=resolved if is_embedded else None,
        refresh=refresh,
        clock=clock,
        handle_signals=True,
        schema_label=label(detect_at(resolved)),  # after --lead or the embedded database migrated it
    )


def say(message: str) -> None:
    """A line on stderr about the console's start or stop (not a database string)."""
    try:
        print(message, file=sys.stderr, flush=True)
    except OSError:  # the terminal is gone (SIGHUP): nobody to tell, carry on
        pass


# How long a stopping console waits for its engine and connections to close. Past it the
# process exits without them: a database that stopped answering (a pooler whose server
# sessions are all taken, a frozen server) must not keep a console that was told to stop
# (q, TERM, INT, a lost terminal). Its server sessions, and a leader lock with them, end
# when the server sees the connections close.
STOP_BOUND_S = 10.0


def within(work: Callable[[], object], seconds: float) -> bool:
    """Run `work` on a daemon thread; True when it finished within `seconds` (its error,
    if any, is raised here), False when it is still blocked (it is left behind)."""
    done = threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # handed to the caller below
            failed.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name="awa-stop", daemon=True).start()
    if not done.wait(seconds):
        return False
    if failed:
        raise failed[0]
    return True


def launch_console(config: ConsoleConfig) -> None:
    """Run the console built by build_config, then stop its engine and clients, whatever
    ended it. The CLI turns build_config's AwaError into its one-line error first."""
    app = create_app(config)
    try:
        app.run()
    finally:
        # Release leadership first: it is what other runtimes are waiting for.
        deadline = time.monotonic() + STOP_BOUND_S  # one bound for the whole stop
        if config.engine is not None:
            refusal = config.engine.runtime.leader_refusal  # before close(), which lets the runtime go
            why = f" ({app.exit_reason})" if app.exit_reason not in (None, "quit") else ""
            if within(config.engine.close, STOP_BOUND_S):
                say(f"engine stopped{why}, " + (f"it never led ({refusal})" if refusal else "leader lock released"))
            else:
                say(f"engine did not stop within {STOP_BOUND_S:g} s{why}: the database is not answering; exiting "
                    "anyway (the server ends this process's sessions, and a leader lock with them)")
        within(config.client.close, max(0.5, deadline - time.monotonic()))
    if app.return_code:
        sys.exit(app.return_code)
