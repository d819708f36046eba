"""Shared start-up steps of the CLI and the console: which database, which schedules."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from awa_tui import embedded
from awa_tui.config import resolve_dsn
from awa_tui.engine.core.errors import AwaError

# The apps this process loaded (`--app`): their code may have registered exit handlers or
# started threads of its own, so the process then ends through the interpreter's full
# teardown (awa_tui/entry.py).
loaded_apps: list[str] = []


def load_app(ref: str) -> Callable[[Any], None]:
    """Resolve `module:attribute`; the attribute is a callable `setup(client)`."""
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise AwaError(f"--app: expected module:attribute, got {ref!r}")
    # Like other app runners, find the app in the current directory (a console script's
    # sys.path starts at its own bin/ directory, not where the operator stands). Appended,
    # not prepended: a local file named like a standard or installed module (json.py,
    # psycopg.py) must not replace it inside the scheduler.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AwaError(f"--app: cannot import {module_name!r}: {exc}") from None
    try:
        target = getattr(module, attr)
    except AttributeError:
        raise AwaError(f"--app: {module_name!r} has no attribute {attr!r}") from None
    if not callable(target):
        raise AwaError(f"--app: {ref!r} is not callable (expected setup(client))")
    loaded_apps.append(ref)
    return target


def dsn_or_embedded(flag: str | None, say: Callable[[str], None]) -> tuple[str, bool]:
    """The configured DSN, or the embedded Postgres (started if needed), announced.

    Returns (dsn, embedded?).
    """
    dsn = resolve_dsn(flag)
    if dsn is not None:
        from awa_tui.engine.core.db import check_dsn

        check_dsn(dsn)  # one line naming the problem, never the text (it may hold the password)
        return dsn, False
    server = embedded.ensure_running()
    say(f"no database configured: using embedded Postgres at {server.home} (data: {server.data_dir})")
    return server.dsn(), True


def running_embedded_dsn(home: Path | None = None) -> str | None:
    """The DSN of the embedded Postgres if it is running now, else None; never starts it.

    Over its socket, as role postgres by peer authentication: no password in it. The
    port is the one the server announced in postmaster.pid (a Postgres file: line 4)."""
    state = embedded.status(home)
    if not state["running"]:
        return None
    home = Path(str(state["home"]))
    try:
        port = int((home / "data" / "postmaster.pid").read_text().splitlines()[3])
    except (OSError, ValueError, IndexError):
        port = embedded.DEFAULT_PORT  # a server still writing its pid file: the default
    return embedded.EmbeddedServer(home=home, bindir=Path(), port=port, tcp=False).dsn()


def build_client(dsn: str, app_ref: str | None, demo: bool, operator: str | None, *,
                 sql_jobs: timedelta | None = None, **kwargs: Any) -> Any:
    """A Client with the demo set and/or the app's schedules and handlers registered, and
    the built-in SQL job kind when `sql_jobs` (its statement timeout) is given."""
    from awa_tui.engine.client import Client

    client = Client(dsn, operator=operator, **kwargs)
    if sql_jobs is not None:
        client.enable_sql_jobs(sql_jobs)
    if demo:
        from awa_tui.demo import setup

        setup(client)
    if app_ref:
        setup_app = load_app(app_ref)
        try:
            setup_app(client)
        except AwaError:
            raise
        except Exception as exc:  # the app's own bug: one line, like every other start-up error
            raise AwaError(f"--app {app_ref}: setup failed: {type(exc).__name__}: {exc}") from None
    return client
