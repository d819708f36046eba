"""What every command shares: DSN resolution, the client, output, one-line errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Annotated, Any, NoReturn
from uuid import UUID

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from awa_tui.config import resolve_dsn
from awa_tui.engine.errors import AwaError
from awa_tui.printable import printable

DsnOpt = Annotated[
    str | None,
    typer.Option("--dsn", help="Database URL (else AWA_DATABASE_URL, DATABASE_URL, PG* variables)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
OperatorOpt = Annotated[
    str | None, typer.Option("--operator", help="Operator label recorded in the audit trail (default user@host).")
]

# Piped output keeps tables at their natural width: a script or a log must see whole values.
# No emoji codes: ":fire:" in a schedule name is text, like "[bold]" (markup=False below).
out = Console(highlight=False, soft_wrap=True, emoji=False, width=None if sys.stdout.isatty() else 10_000)
err = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)


def say(text: str) -> None:
    """One line of human output. Every line may quote the database (names, operators),
    so it is escaped (awa_tui/printable.py) and never read as markup."""
    out.print(printable(text), markup=False)


def fail(message: str, code: int = 1) -> NoReturn:
    """One line on stderr, non-zero exit, never a traceback. The message may quote the
    database ("already paused (by ...)"): escaped, so no control byte reaches the terminal."""
    err.print(f"error: {printable(' '.join(str(message).split()))}", markup=False)
    raise typer.Exit(code)


@contextmanager
def errors_as_lines() -> Iterator[None]:
    try:
        yield
    except AwaError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted", 130)


def require_dsn(flag: str | None) -> str:
    """Commands that inspect or change a database need one configured explicitly."""
    dsn = resolve_dsn(flag)
    if dsn is None:
        fail("no database configured: pass --dsn or set AWA_DATABASE_URL (or DATABASE_URL, PG* variables)")
    return dsn


def make_client(dsn_flag: str | None, operator: str | None = None, *, read_only: bool = False) -> Any:
    from awa_tui.engine.client import Client

    return Client(require_dsn(dsn_flag), operator=operator, read_only=read_only, application_name="awa-tui cli")


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, UUID):
        return str(value)
    return str(value)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, default=_default, indent=2, sort_keys=False) + "\n")


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


def emit_table(rows: Sequence[dict[str, Any]], columns: Sequence[str], title: str | None = None) -> None:
    table = Table(title=title, show_lines=False)
    for column in columns:
        # Fold, never ellipsise: a narrow terminal (or a pipe, 80 columns) must not hide data.
        table.add_column(column, overflow="fold")
    for row in rows:
        # Text, not markup: values from the database ("[queue paused]", names) print as is,
        # control bytes escaped (a newline would forge a row, ESC drive the terminal).
        table.add_row(*(Text(printable(fmt(row.get(c)))) for c in columns))
    out.print(table)


def emit(data: Any, as_json: bool, render: Callable[[], None]) -> None:
    if as_json:
        emit_json(data)
    else:
        render()
