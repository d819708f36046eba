"""A real Postgres for every test (never a mock).

`AWA_TEST_DATABASE_URL` points at an external server; otherwise one embedded server is
started per test session (per xdist worker) with durability off for speed. A template
database is migrated once; each test gets a fresh clone of it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

from awa_tui import embedded
from awa_tui.engine.migrations import migrate

# The reliability suite's --soak options and summary table (tests/reliability/plugin.py).
pytest_plugins = ["reliability.plugin"]

# No test may reach this machine's own embedded Postgres (a developer's `make run` leaves it
# running, and commands fall back to it): each test process gets an empty embedded home of
# its own, inherited by every command it spawns; tests that need one name their own.
os.environ["AWA_EMBEDDED_HOME"] = tempfile.mkdtemp(prefix="awa-test-embedded-home-")

TEST_FLAGS = ("-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off", "-c max_connections=300")


def with_db(dsn: str, dbname: str) -> str:
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


def _worker_id() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


@pytest.fixture(scope="session")
def pg_admin_dsn() -> Iterator[str]:
    """DSN of a maintenance database on the test server."""
    external = os.environ.get("AWA_TEST_DATABASE_URL")
    if external:
        yield external
        return
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK) else None
    home = Path(tempfile.mkdtemp(prefix=f"awa-test-{_worker_id()}-", dir=base))
    server = embedded.ensure_running(home, server_flags=TEST_FLAGS, dbname="postgres")
    yield server.dsn("postgres")
    embedded.stop(home)
    shutil.rmtree(home, ignore_errors=True)  # 39 MB per session, in RAM when under /dev/shm


@pytest.fixture(scope="session")
def template_db(pg_admin_dsn: str) -> str:
    name = f"awa_tpl_{uuid.uuid4().hex[:8]}_{_worker_id()}"
    with psycopg.connect(pg_admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    migrate(with_db(pg_admin_dsn, name))
    yield name
    with psycopg.connect(pg_admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def clone_database(admin_dsn: str, template: str) -> str:
    name = f"awa_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                sql.Identifier(name), sql.Identifier(template)
            )
        )
    return name


def drop_database(admin_dsn: str, name: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def dsn(pg_admin_dsn: str, template_db: str) -> Iterator[str]:
    """A fresh, migrated database for this test."""
    name = clone_database(pg_admin_dsn, template_db)
    yield with_db(pg_admin_dsn, name)
    drop_database(pg_admin_dsn, name)


@pytest.fixture
def empty_dsn(pg_admin_dsn: str) -> Iterator[str]:
    """A fresh database with no awa schema at all."""
    name = f"awa_e_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield with_db(pg_admin_dsn, name)
    drop_database(pg_admin_dsn, name)


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as c:
        yield c


@pytest.fixture
def client(dsn: str) -> Iterator[Any]:
    from awa_tui import Client

    c = Client(dsn, operator="tester@test")
    yield c
    c.close()


@pytest.fixture(scope="session")
def standby_pair() -> Iterator[Any]:
    """A migrated primary and its hot standby (tests/reliability/replication.py), shared by
    the tests that read a standby; each writes its own names on the primary and waits for
    the standby to replay them. The failover test makes its own pair (it kills the primary)."""
    from reliability.replication import ReplicaPair

    pair = ReplicaPair(dbname="awa_standby").start()
    try:
        migrate(pair.dsn(pair.primary))
        yield pair
    finally:
        pair.close()


@pytest.fixture(scope="session")
def pg_cron_server() -> Iterator[Any]:
    """A server of our own with the real pg_cron loaded (tests/reliability/replication.py),
    shared by the pg_cron import tests; each clears `cron.job` and uses its own awa database."""
    from reliability.replication import PgCronServer

    server = PgCronServer().start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def pg_cron(pg_cron_server: Any) -> Iterator[tuple[str, str]]:
    """(pg_cron's DSN, a fresh migrated awa database's DSN on the same server); no pg_cron jobs."""
    source = pg_cron_server.dsn()
    with psycopg.connect(source, autocommit=True) as conn:
        conn.execute("DELETE FROM cron.job")
        conn.execute("DELETE FROM cron.job_run_details")
    admin = pg_cron_server.primary.dsn("postgres")
    name = f"awa_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    awa_dsn = pg_cron_server.primary.dsn(name)
    migrate(awa_dsn)
    yield source, awa_dsn
    drop_database(admin, name)
