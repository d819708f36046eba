"""The options many commands take, declared once: the database URLs, --json, --operator, --app.
Only typer is imported here, so `awa-tui --help` stays light."""

from __future__ import annotations

from typing import Annotated

import typer

DsnOpt = Annotated[
    str | None,
    typer.Option("--dsn", help=(
        "Database URL (else --dsn-file, AWA_DATABASE_URL, DATABASE_URL, PG* variables). "
        "A password in it is visible to every local user in `ps`: prefer --dsn-file, "
        "AWA_DATABASE_URL or ~/.pgpass.")),
]
DsnFileOpt = Annotated[
    str | None,
    typer.Option("--dsn-file", metavar="PATH", help=(
        "Read the database URL from this file, one line (0600, or 0640 for a service's group; a file "
        "every user may read is refused); its content is never shown.")),
]
LeaderDsnOpt = Annotated[
    str | None,
    typer.Option("--leader-dsn", help=(
        "Database URL of the leader lock connection only (else --leader-dsn-file, "
        "AWA_LEADER_DATABASE_URL; default: the same as everything else). Point it straight at the "
        "server when --dsn goes through a transaction pooler such as PgBouncer.")),
]
LeaderDsnFileOpt = Annotated[
    str | None,
    typer.Option("--leader-dsn-file", metavar="PATH", help=(
        "Read the leader connection's database URL from this file (keep it 0600); never shown.")),
]
APP_HELP = (
    "module:attribute: setup(client) registering schedules and handlers. The module is looked up on "
    "sys.path, then in the current directory (searched last, so a local file cannot shadow a standard "
    "or installed module)."
)
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
OperatorOpt = Annotated[
    str | None, typer.Option("--operator", help="Operator label recorded in the audit trail (default user@host).")
]

# The built-in SQL job kind (imported pg_cron jobs): off unless asked for, since it runs
# whatever SQL a schedule's args hold.
SQL_TIMEOUT_DEFAULT = 600.0
SqlJobsOpt = Annotated[bool, typer.Option("--sql-jobs", help=(
    "Also run jobs of the built-in SQL kind (awa.sql: imported pg_cron jobs), each on its recorded database of "
    "this runtime's server, as its recorded role (SET ROLE)."))]
SqlTimeoutOpt = Annotated[float, typer.Option("--sql-timeout", metavar="SECONDS", help=(
    "The statement timeout of each SQL job (default 600). Only with --sql-jobs."))]
