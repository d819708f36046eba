"""Helpers for an application's own tests: a throwaway database per test, made fast by a
migrated template, and one step of the scheduler and the worker at an instant you choose.

    import os, pytest
    from awa_tui.testing import Template, run_due

    @pytest.fixture(scope="session")
    def awa_template():
        with Template(os.environ["TEST_DATABASE_URL"]) as template:   # migrated once
            yield template

    @pytest.fixture
    def awa_dsn(awa_template):
        with awa_template.database() as dsn:                         # a copy per test
            yield dsn

docs/running-jobs.md ("Testing") has a whole test.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

if TYPE_CHECKING:
    from awa_tui.engine.client import Client
    from awa_tui.engine.jobs.context import Job


def _on(dsn: str, dbname: str) -> str:
    return make_conninfo("", **{**conninfo_to_dict(dsn), "dbname": dbname})


class Template:
    """A database migrated once on the server `admin_dsn` names (a role that may create
    databases); `database()` copies it for one test (a file copy: milliseconds, not a
    migration) and drops the copy after."""

    def __init__(self, admin_dsn: str) -> None:
        self.admin_dsn = admin_dsn
        self.name = f"awa_app_tpl_{uuid.uuid4().hex[:10]}"

    def __enter__(self) -> Template:
        from awa_tui.engine.client import Client

        self._execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.name)))
        client = Client(_on(self.admin_dsn, self.name), operator="tests")
        try:
            client.migrate()
        finally:
            client.close()
        return self

    def __exit__(self, *exc: object) -> None:
        self._execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.name)))

    @contextmanager
    def database(self) -> Iterator[str]:
        """A fresh migrated database for one test; yields its DSN."""
        name = f"awa_app_t_{uuid.uuid4().hex[:12]}"
        self._execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
            sql.Identifier(name), sql.Identifier(self.name)))
        try:
            yield _on(self.admin_dsn, name)
        finally:
            self._execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    def _execute(self, statement: sql.Composed) -> None:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(statement)


def run_due(client: Client, now: datetime | None = None, *, limit: int = 100) -> list[tuple[Job, str]]:
    """Sync, fire what is due at `now` (database time when omitted), then run every due job
    until none is left; returns each job with its end state. A fake clock for a test:
    `run_due(client, datetime(2026, 1, 1, 2, 30, tzinfo=UTC))`."""
    client.sync()
    client.evaluate(now=now)
    done: list[tuple[Any, str]] = []
    while batch := client.work_once(limit):
        done += batch
    return done
