"""The built-in SQL job kind (`awa.sql`): a statement run on a database of the runtime's own
server, as a recorded role, with a statement timeout. What a pg_cron job becomes once
imported (engine/imports/pg_cron.py); registered only by a runtime started with
`--sql-jobs`, since it runs whatever SQL a schedule's args hold.

The job's args: `command` (the SQL, one or more statements, run as pg_cron runs them: one
simple query, so one implicit transaction), `database` and `role`. The connection is the
runtime's own DSN with the database name replaced (its host, port, user and password: no
other server is reachable through a schedule's args); `SET ROLE` makes the recorded role
the one the statements run as, never the runtime's own. The outcome lands in the ledger as
any job's: a failure is the job's error, retried as the schedule's max_attempts allow.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, LiteralString, cast

import psycopg
from psycopg import sql

from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.jobs.context import Job
from awa_tui.engine.jobs.handlers import MAX_TIMEOUT_S, Handler
from awa_tui.printable import printable_logger

SQL_KIND = "awa.sql"
DEFAULT_STATEMENT_TIMEOUT = timedelta(minutes=10)
APPLICATION_NAME = "awa-tui sql job"
# The handler's own limit is the statement's and a little more, so the server's timeout
# (a clear error) ends a long statement before the worker gives up on the attempt.
HANDLER_SLACK_S = 5.0

log = printable_logger("awa_tui.sql_jobs")  # database and role names are data: escaped


class SqlJobError(Exception):
    """A SQL job that cannot run (its args are not a SQL job's): one line, the job's error."""


def check_statement_timeout(value: timedelta) -> timedelta:
    seconds = value.total_seconds()
    if not 0 < seconds <= MAX_TIMEOUT_S - HANDLER_SLACK_S:
        raise ValidationError(f"statement timeout: more than 0 and less than 7 days, got {seconds:g} s")
    return value


def target_dsn(runtime_dsn: str, database: str) -> str:
    """The runtime's own DSN on another database of the same server."""
    return psycopg.conninfo.make_conninfo(runtime_dsn, dbname=database)


def _text_arg(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value:
        raise SqlJobError(f"a SQL job needs args.{key} (a non-empty string)")
    return value


def run_sql_job(runtime_dsn: str, statement_timeout: timedelta, job: Job) -> str:
    """Run the job's command; returns the server's status line of its last statement."""
    command = _text_arg(job.args, "command")
    database = _text_arg(job.args, "database")
    role = _text_arg(job.args, "role")
    timeout_ms = int(statement_timeout.total_seconds() * 1000)
    with psycopg.connect(target_dsn(runtime_dsn, database), autocommit=True,
                         application_name=APPLICATION_NAME) as conn:
        conn.execute("SELECT set_config('statement_timeout', %s, false)", (f"{timeout_ms}ms",))
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        # No parameters: psycopg sends the text as one simple query, several statements
        # allowed, as pg_cron does. The command is data the operator imported, not ours.
        cur = conn.execute(cast(LiteralString, command))
        status = cur.statusmessage or ""
    log.info("sql job %s (%s as %s) done: %s", job.id, database, role, status)
    return status


def enable(register: Callable[..., None], runtime_dsn: str, statement_timeout: timedelta | None) -> None:
    """Register `awa.sql` through `register` (a Client's register_handler): one attempt's
    limit a little over the statement's; a schedule's max_attempts decides any retry."""
    handler, timeout = sql_handler(runtime_dsn, statement_timeout or DEFAULT_STATEMENT_TIMEOUT)
    register(SQL_KIND, handler, timeout=timeout)


def sql_handler(runtime_dsn: str, statement_timeout: timedelta = DEFAULT_STATEMENT_TIMEOUT) -> tuple[Handler, float]:
    """The handler of `awa.sql` for a runtime on `runtime_dsn`, and its per-attempt timeout."""
    timeout = check_statement_timeout(statement_timeout)

    def handle(job: Job) -> str:
        return run_sql_job(runtime_dsn, timeout, job)

    return handle, timeout.total_seconds() + HANDLER_SLACK_S
