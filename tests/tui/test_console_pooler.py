"""The console through Debian's real PgBouncer in transaction mode (S57): every page loads
(no prepared statement is left on a pooled server session), a mutation goes through, and a
read-only console stays read-only although the pooler refuses the session's read-only
startup setting."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import wait_for as until_sync
from psycopg.conninfo import conninfo_to_dict
from reliability.pgbouncer import PgBouncer, pgbouncer
from tui_helpers import audit_actions, notes, ready, row_of, select, settled, until

from awa_tui.engine.db import LEADER_LOCK_KEY
from awa_tui.engine.errors import ReadOnly
from awa_tui.tui.launch import build_config
from awa_tui.tui.screens.confirm import ConfirmScreen


@pytest.fixture
def bouncer(pg_admin_dsn: str, tmp_path: Path) -> Iterator[PgBouncer]:
    with pgbouncer(pg_admin_dsn, "transaction", tmp_path) as b:
        yield b


def through(bouncer: PgBouncer, dsn: str) -> str:
    return bouncer.dsn(str(conninfo_to_dict(dsn)["dbname"]))


async def test_the_console_works_through_a_transaction_pooler(console_factory, seeded, bouncer, conn):
    app = console_factory(dsn=through(bouncer, seeded))
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        for _ in range(3):  # past psycopg's threshold for preparing a statement
            for key in ("1", "2", "3", "4", "5", "1"):
                await pilot.press(key)
                await settled(pilot, app)
        assert notes(app) == []
        assert "awa-tui console" in bouncer.clients()
        select(app, "metrics.rollup")
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm dialog")
        await pilot.press("y")
        await until(pilot, lambda: row_of(conn, "metrics.rollup")["paused_at"] is not None, what="pause")
        assert audit_actions(conn)[-1][1:] == ("pause", "metrics.rollup")


async def test_a_read_only_console_through_a_pooler_reads_and_cannot_write(console_factory, seeded, bouncer, conn):
    app = console_factory(dsn=through(bouncer, seeded), read_only=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        for key in ("1", "2", "5", "1"):
            await pilot.press(key)
            await settled(pilot, app)
        assert notes(app) == []
        assert "awa-tui console" in bouncer.clients()
    # The engine refuses a write itself (not only the console's keys): the server does.
    with pytest.raises(ReadOnly), app.client.db.connection() as c:
        c.execute("UPDATE awa.cron_jobs SET paused_at = now() WHERE name = 'metrics.rollup'")
    assert row_of(conn, "metrics.rollup")["paused_at"] is None


def test_a_leading_console_through_a_transaction_pooler_leads_on_its_leader_dsn(dsn, conn, bouncer):
    """`awa-tui --lead --dsn POOLER --leader-dsn SERVER`: the in-process engine takes the
    leader lock on the direct connection, and the console reads through the pooler."""
    config = build_config(dsn=through(bouncer, dsn), lead=True, app_ref=None, demo=True, read_only=False,
                          operator="op@test", refresh=2.0, say=print, leader_dsn=dsn)
    try:
        assert config.engine is not None and config.engine.leader_dsn == dsn
        holder = until_sync(lambda: conn.execute(
            "SELECT a.application_name AS app FROM pg_stat_activity a WHERE a.pid = awa.leader_lock_pid(%s)",
            (LEADER_LOCK_KEY,)).fetchone(), 15, what="the engine leading")
        assert holder == {"app": "awa-tui console leader leader"}
        config.client.check_schema()  # the console's client: through the pooler
        assert "awa-tui console" in bouncer.clients()
        assert "awa-tui console leader leader" not in bouncer.clients()
    finally:
        config.engine.close()
        config.client.close()
