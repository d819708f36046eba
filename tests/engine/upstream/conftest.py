"""Fixtures of the upstream-mode tests: databases migrated by upstream Awa itself (awa-pg in
its own venv), and its runtime (leader + worker) in a subprocess."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from awa_pg_env import AwaPgUnavailable, UpstreamProcess, ensure_awa_pg, migrate
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row


def with_db(dsn: str, dbname: str) -> str:
    return make_conninfo(dsn, dbname=dbname)


def create_database(admin_dsn: str, name: str, template: str | None = None) -> None:
    query = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template:
        # Only upstream's migrator ever connected to the template, and it has exited.
        query = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template))
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(query)


def drop_database(admin_dsn: str, name: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def as_url(dsn: str) -> str:
    """A postgres:// URL for upstream's Rust driver, which takes no key=value DSN; a socket
    directory goes in the `host` query parameter."""
    params = conninfo_to_dict(dsn)
    user = quote(str(params.get("user", "postgres")), safe="")
    password = params.get("password")
    auth = f"{user}:{quote(str(password), safe='')}@" if password else f"{user}@"
    host = str(params.get("host", "127.0.0.1"))
    port = params.get("port", 5432)
    db = quote(str(params["dbname"]), safe="")
    if host.startswith("/"):
        return f"postgres://{auth}localhost:{port}/{db}?host={quote(host, safe='')}"
    return f"postgres://{auth}{host}:{port}/{db}"


@pytest.fixture(scope="session")
def awa_pg_python() -> Path:
    """awa-pg's interpreter; installing it failed = these tests FAIL with the reason."""
    try:
        return ensure_awa_pg()
    except AwaPgUnavailable as exc:
        reason = str(exc)
    pytest.fail(reason, pytrace=False)


@pytest.fixture(scope="session")
def awa_pg_schema_version(awa_pg_python: Path) -> int:
    """The schema version this awa-pg migrates to, asked of awa-pg itself (the oracle)."""
    out = subprocess.run([str(awa_pg_python), "-c", "import awa; print(awa.current_migration_version())"],
                         capture_output=True, text=True, timeout=60, check=True)
    return int(out.stdout.strip())


@pytest.fixture(scope="session")
def upstream_template(pg_admin_dsn: str, awa_pg_python: Path) -> Iterator[str]:
    """A database migrated once by upstream's own migrator; tests get clones of it."""
    name = f"awa_up_tpl_{uuid.uuid4().hex[:8]}"
    create_database(pg_admin_dsn, name)
    try:
        migrate(awa_pg_python, as_url(with_db(pg_admin_dsn, name)))
    except AwaPgUnavailable as exc:
        drop_database(pg_admin_dsn, name)
        pytest.fail(str(exc), pytrace=False)  # no chained traceback: the one line says it all
    yield name
    drop_database(pg_admin_dsn, name)


@pytest.fixture
def upstream_dsn(pg_admin_dsn: str, upstream_template: str) -> Iterator[str]:
    name = f"awa_up_{uuid.uuid4().hex[:12]}"
    create_database(pg_admin_dsn, name, template=upstream_template)
    yield with_db(pg_admin_dsn, name)
    drop_database(pg_admin_dsn, name)


@pytest.fixture
def upstream_conn(upstream_dsn: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(upstream_dsn, autocommit=True, row_factory=dict_row) as c:  # type: ignore[arg-type]
        yield c


@pytest.fixture
def start_upstream(upstream_dsn: str, awa_pg_python: Path) -> Iterator[Callable[..., UpstreamProcess]]:
    """Start upstream's runtime on the test database: schedules, queues served, leader."""
    started: list[UpstreamProcess] = []

    def _start(schedules: list[dict[str, Any]], queues: list[tuple[str, int]]) -> UpstreamProcess:
        proc = UpstreamProcess(awa_pg_python, as_url(upstream_dsn),
                               {"schedules": schedules, "queues": queues, "leader_ms": 200})
        started.append(proc)
        try:
            proc.wait_started()
        except AwaPgUnavailable as exc:
            pytest.fail(str(exc), pytrace=False)
        return proc

    yield _start
    for proc in started:
        proc.stop()
