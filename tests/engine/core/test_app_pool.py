"""The app hands the Client its own psycopg_pool.ConnectionPool: every call of the runtime
borrows one of its connections (set up as the engine needs, put back as it came); only the
sessions that must stay open (the leader lock, the alert deliverer) are the engine's own."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from helpers import wait_for
from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from awa_tui import Client
from awa_tui.engine.core.errors import ValidationError

# The runtime's connections by name: its own calls under the name, its standing sessions as
# "<name> leader" and "<name> alerts".
OWN_SQL = """
SELECT coalesce(array_agg(application_name ORDER BY application_name), '{}') AS names FROM pg_stat_activity
WHERE datname = current_database() AND (application_name = %(name)s OR application_name LIKE %(name)s || ' %%')
"""


def _completed(conn: psycopg.Connection[Any]) -> int:
    return conn.execute("SELECT count(*) AS n FROM awa.jobs WHERE kind = 'pooled' AND state = 'completed'"
                        ).fetchone()["n"]  # type: ignore[index]


def _run(dsn: str, conn: psycopg.Connection[Any], pool: ConnectionPool | None, name: str) -> list[str]:
    """A runtime leading and working an every-second schedule until three jobs completed;
    the most connections it had open under its own names meanwhile."""
    client = Client(dsn, operator="pool@test", application_name=name, pool=pool)
    client.register_handler("pooled", lambda job: None)
    client.periodic(f"{name}-tick", "* * * * * *", "pooled")
    own: list[str] = []
    try:
        client.start()

        def three_done() -> bool:
            nonlocal own
            names = conn.execute(OWN_SQL, {"name": name}).fetchone()["names"]  # type: ignore[index]
            own = max(own, names, key=len)
            return _completed(conn) >= 3

        wait_for(three_done, 30, interval=0.05, what="three jobs of the every-second schedule to complete")
    finally:
        client.close()
    conn.execute("DELETE FROM awa.jobs WHERE kind = 'pooled'")
    return own


def test_the_runtime_borrows_the_apps_pool_and_gives_its_connections_back_as_they_came(
    dsn: str, conn: psycopg.Connection[Any]
) -> None:
    alone = _run(dsn, conn, None, "awa-alone")
    pool = ConnectionPool(dsn, min_size=2, max_size=6, kwargs={"application_name": "the-app"}, open=True)
    try:
        pooled = _run(dsn, conn, pool, "awa-pooled")
        stats = pool.get_stats()
        # The calls went through the app's pool, and the engine opened only its standing sessions.
        assert stats["requests_num"] >= 10 and stats.get("requests_errors", 0) == 0
        # Alone: its pool of calls beside the standing sessions; pooled: the standing ones only.
        # (the alert deliverer's session opens when it first looks for deliveries)
        assert "awa-pooled leader" in pooled and set(pooled) <= {"awa-pooled alerts", "awa-pooled leader"}, pooled
        assert len(alone) > len(pooled) and "awa-alone" in alone, alone
        with pool.connection() as lent:  # as the app configured it: its transactions, its rows
            assert (lent.autocommit, lent.row_factory, lent.execute("SELECT 1").fetchone()) == (
                False, tuple_row, (1,))
        assert stats["pool_size"] <= 6
    finally:
        pool.close()


def test_a_pool_that_cannot_lend_to_threads_is_refused_in_one_line(dsn: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Client(dsn, pool=object())
    assert str(caught.value) == "pool: expected a psycopg_pool.ConnectionPool (getconn and putconn), got object"
    pool = AsyncConnectionPool(dsn, open=False)
    with pytest.raises(ValidationError) as refused:
        Client(dsn, pool=pool)
    assert str(refused.value) == ("pool: an AsyncConnectionPool cannot lend to the engine's threads; "
                                  "pass a psycopg_pool.ConnectionPool")
