"""What every command shares: DSN resolution, the client, output, one-line errors."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, is_dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, NoReturn
from uuid import UUID

import typer

from awa_tui.cli.options import SQL_TIMEOUT_DEFAULT, DsnFileOpt
from awa_tui.config import resolve_dsn
from awa_tui.engine.core.errors import AwaError
from awa_tui.printable import printable

if TYPE_CHECKING:
    from awa_tui.engine.backend.protocol import ConsoleBackend

# Imported here: typer, and light modules of our own. The engine (psycopg) loads when a
# command first connects: `awa-tui --help` needs none of it (tests/cli/test_cli_lazy.py).
# Output is plain text written to the streams: no Rich on a command's path (start-up time).


def say(text: str) -> None:
    """One line of human output. Every line may quote the database (names, operators),
    so it is escaped (awa_tui/printable.py); it is written as it is, never read as markup
    or emoji codes (":fire:" and "[bold]" in a name are text)."""
    sys.stdout.write(printable(text) + "\n")


def warn(text: str) -> None:
    """One line on stderr that is not an error (the command goes on), escaped like `say`."""
    sys.stderr.write(printable(text) + "\n")


def fail(message: str, code: int = 1) -> NoReturn:
    """One line on stderr, non-zero exit, never a traceback. The message may quote the
    database ("already paused (by ...)"): escaped, so no control byte reaches the terminal."""
    sys.stderr.write(f"error: {printable(' '.join(str(message).split()))}\n")
    raise typer.Exit(code)


@contextmanager
def errors_as_lines() -> Iterator[None]:
    try:
        yield
    except AwaError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted", 130)


NO_DATABASE = "no database configured: pass --dsn or set AWA_DATABASE_URL (or DATABASE_URL, PG* variables)"


def leader_dsn_of(flag: str | None, dsn_file: str | None) -> str | None:
    """The leader connection's own DSN from --leader-dsn, --leader-dsn-file or
    AWA_LEADER_DATABASE_URL, checked (one line quoting none of it); None when not set."""
    from awa_tui.config import resolve_leader_dsn
    from awa_tui.engine.core.db import dsn_problem

    try:
        dsn = resolve_leader_dsn(flag, dsn_file)
    except AwaError as exc:
        fail(str(exc))
    if dsn is not None and (problem := dsn_problem(dsn)) is not None:
        fail(f"--leader-dsn: the database URL could not be parsed: {problem}")
    return dsn


def require_dsn(flag: str | None) -> str:
    """Commands that inspect or change a database need one configured, or the embedded
    Postgres already running (started by the console or `awa-tui db start`). It is never
    started here: a forgotten variable on a bastion must fail, not point the command at
    a new, empty database."""
    try:
        return resolved_dsn(flag)
    except AwaError as exc:
        fail(str(exc))


def resolved_dsn(flag: str | None) -> str:
    """require_dsn's answer, or AwaError saying why there is none (`check` turns it into
    UNKNOWN, exit 3, where every other command exits 1)."""
    from awa_tui.engine.core.db import check_dsn

    dsn = resolve_dsn(flag)
    if dsn is None:
        from awa_tui import embedded
        from awa_tui.bootstrap import running_embedded_dsn

        dsn = running_embedded_dsn()
        if dsn is None:
            state = embedded.status()
            if state["initialised"]:  # it was started once: say it is stopped, not absent
                raise AwaError(f"no database configured, and the embedded Postgres at {state['home']} is stopped: "
                               "start it with `awa-tui db start`, or pass --dsn (or set AWA_DATABASE_URL)")
            raise AwaError(NO_DATABASE)
        warn(f"no database configured: using the running embedded Postgres: {dsn}")
        return dsn
    check_dsn(dsn)  # libpq's own parse errors would quote the password
    return dsn


@functools.cache
def _typer_param(name: str) -> Any:
    """The --dsn-file or top-level --json option exactly as Typer builds it."""
    probe = typer.Typer()

    @probe.command()
    def _probe(
        dsn_file: DsnFileOpt = None,
        as_json: Annotated[bool, typer.Option("--json", help="JSON output of the subcommand.")] = False,
    ) -> None:
        """Only here to have Typer build the options."""

    return next(p for p in typer.main.get_command(probe).params if p.name == name)


@dataclass
class GlobalOptions:
    """Options given before the subcommand (`awa-tui --dsn X cron list`). The top-level
    callback records them and click always runs it before the subcommand, in this one
    process; each command then takes them as if given after its own name."""

    dsn: str | None = None
    as_json: bool = False
    operator: str | None = None


GLOBAL_OPTIONS = GlobalOptions()


def set_global_options(dsn: str | None, as_json: bool, operator: str | None) -> None:
    GLOBAL_OPTIONS.dsn, GLOBAL_OPTIONS.as_json, GLOBAL_OPTIONS.operator = dsn, as_json, operator


def _apply_global_options(command: str, leaf: bool, kwargs: dict[str, Any]) -> None:
    """Give a command the options given before it; the same option given both before and
    after with different values is refused (which one was meant cannot be guessed)."""
    given = GLOBAL_OPTIONS
    if given.dsn is not None and leaf:
        if "dsn" not in kwargs:
            fail(f"--dsn/--dsn-file: `{command}` does not use a database URL")
        if kwargs["dsn"] not in (None, given.dsn):  # the values are never quoted: passwords
            fail("--dsn/--dsn-file given both before and after the subcommand, with different values: give it once")
        kwargs["dsn"] = given.dsn
    if given.operator is not None and "operator" in kwargs:
        if kwargs["operator"] not in (None, given.operator):
            fail("--operator given both before and after the subcommand, with different labels: give it once")
        kwargs["operator"] = given.operator
    if given.as_json and "as_json" in kwargs:
        kwargs["as_json"] = True


def _with_options(callback: Callable[..., Any], command: str, leaf: bool) -> Callable[..., Any]:
    @functools.wraps(callback)
    def wrapper(*args: Any, dsn_file: str | None = None, **kwargs: Any) -> Any:
        if dsn_file is not None:
            try:
                kwargs["dsn"] = resolve_dsn(kwargs.get("dsn"), dsn_file)
            except AwaError as exc:
                fail(str(exc))
        if not command:  # the top level: record what a subcommand will take (the console has no JSON)
            set_global_options(kwargs.get("dsn"), kwargs.pop("as_json", False), kwargs.get("operator"))
        else:
            _apply_global_options(command, leaf, kwargs)
        return callback(*args, **kwargs)

    return wrapper


def prepare_command(command: Any, path: str) -> None:
    """Give a command that takes --dsn a --dsn-file beside it (in one place, so no command
    can miss it): the file's content reaches the command as its dsn. Every command also
    takes the options given before the subcommand (GlobalOptions); the top level (path "")
    takes --json for its subcommand.

    Called by the lazy command tree (cli/lazy.py) on each command it builds, with its path
    ("cron show"). `command` is a click command Typer built (Typer vendors click, so it is
    handled through its attributes: params, callback, and a group's commands)."""
    if not path:
        command.params.append(_typer_param("as_json"))  # the top level's --json, for its subcommand
    names = [p.name for p in command.params]
    if "dsn" in names and "dsn_file" not in names:
        command.params.insert(names.index("dsn") + 1, _typer_param("dsn_file"))
    if command.callback is not None:
        command.callback = _with_options(command.callback, path, leaf=not hasattr(command, "commands"))


def make_client(dsn_flag: str | None, operator: str | None = None, *, read_only: bool = False) -> ConsoleBackend:
    """What a command reads and acts through (`.reads`, `.actions`): a Client on awa-tui's
    own schema (or none: its own errors say what to do), upstream mode's backend on an
    upstream Awa schema (cli/upstream.py), with the same operator and read-only flag."""
    from awa_tui.engine.client import Client
    from awa_tui.engine.migrations.detect import detect_schema, has_upstream_table

    client = Client(require_dsn(dsn_flag), operator=operator, read_only=read_only, application_name="awa-tui cli")
    # Only a database with upstream's version table can be upstream's: for every other (awa-tui's
    # own schema, or none) this one catalog read decides, and upstream mode is never loaded.
    with client.db.connection() as conn:
        upstream = has_upstream_table(conn) and detect_schema(conn).kind == "upstream"
    backend: ConsoleBackend = client
    if upstream:
        client.close()
        from awa_tui.cli.upstream import upstream_backend

        backend = upstream_backend(client.dsn, operator=client.operator, read_only=read_only)
    if read_only:  # a read from a standby says so, and how far behind (a write is refused anyway)
        standby = backend.reads.server_role().describe()
        if standby:
            warn(standby)
    return backend


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, UUID):
        return str(value)
    return str(value)


def plain(data: Any) -> Any:
    """A read model (awa_tui/engine/read/models.py), or a list of them, as dicts keyed by field
    name; anything else as it is."""
    if is_dataclass(data) and not isinstance(data, type):
        return asdict(data)
    if isinstance(data, list):
        return [plain(item) for item in data]
    return data


def to_json(data: Any) -> str:
    """The one `--json` form of every command: read models by their field names, times
    ISO-8601, durations in seconds, UUIDs as text."""
    return json.dumps(plain(data), default=_default, indent=2, sort_keys=False)


def emit_json(data: Any) -> None:
    sys.stdout.write(to_json(data) + "\n")


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S%z")
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=_default)
    return str(value)


# Values asdict leaves as they are: most cells, checked first (a table reads thousands).
_SCALARS = frozenset({str, int, float, bool, datetime, timedelta, UUID, type(None)})


def _plain_value(value: Any) -> Any:
    """A field's value as `plain` (dataclasses.asdict) would leave it in its row's dict."""
    if type(value) in _SCALARS:
        return value
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain_value(v) for v in value)
    if isinstance(value, dict):
        return {_plain_value(k): _plain_value(v) for k, v in value.items()}
    return value


def field_of(row: Any, name: str) -> Any:
    """A dict's key or a read model's field (None when it has none), as `plain(row)[name]`
    would be, without copying the whole row."""
    return row.get(name) if isinstance(row, dict) else _plain_value(getattr(row, name, None))


def cell(row: Any, column: str) -> str:
    """One table cell, shown by `fmt` and escaped (a newline would forge a row, ESC drive
    the terminal). A missing one shows as "-"."""
    return printable(fmt(field_of(row, column)))


def emit_table(rows: Sequence[Any], columns: Sequence[str], title: str | None = None) -> None:
    """`rows`: read models or dicts; `columns` are their field names (keys), each headed by
    its operator words (cli/headings.py). Only the shown columns are read: a read model is
    never copied whole (asdict)."""
    from awa_tui.cli.headings import heading
    from awa_tui.cli.table import render

    cells = [[cell(row, c) for c in columns] for row in rows]
    sys.stdout.write(render([printable(heading(c)) for c in columns], cells, printable(title) if title else None))


def emit(data: Any, as_json: bool, render: Callable[[], object]) -> None:
    if as_json:
        emit_json(data)
    else:
        render()


def run_action(dsn: str | None, operator: str | None, as_json: bool, act: Callable[[ConsoleBackend], Any],
               summary: Callable[[Any], str]) -> None:
    """An operator action: `act` on a writable client, then its result as JSON or the
    one line `summary` makes of it."""
    with errors_as_lines():
        result = act(make_client(dsn, operator))
        emit(result, as_json, lambda: say(summary(result)))


SQL_TIMEOUT_MAX_S = 86400.0  # a day: a statement longer than that is not a scheduled job's


def sql_timeout_of(sql_jobs: bool, seconds: float) -> timedelta | None:
    """--sql-jobs' statement timeout (None: no SQL jobs), refused in one line."""
    if seconds != SQL_TIMEOUT_DEFAULT and not sql_jobs:
        fail("--sql-timeout applies only with --sql-jobs")
    if not 0 < seconds <= SQL_TIMEOUT_MAX_S:  # nan too
        fail(f"--sql-timeout: more than 0 and at most {SQL_TIMEOUT_MAX_S:g} seconds, got {seconds:g}")
    return timedelta(seconds=seconds) if sql_jobs else None
