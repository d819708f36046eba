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
from tui_helpers import audit_actions, notes, ready, row_of, screen_text, select, settled, until

from awa_tui.engine.core.db import LEADER_LOCK_KEY
from awa_tui.engine.core.errors import ReadOnly
from awa_tui.tui.config import ConsoleConfig
from awa_tui.tui.launch import build_config, console_client, create_app
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
        config.client.reads.check_schema()  # the console's client: through the pooler
        assert "awa-tui console" in bouncer.clients()
        assert "awa-tui console leader leader" not in bouncer.clients()
    finally:
        config.engine.close()
        config.client.close()


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
async def test_a_leading_console_behind_a_transaction_pooler_says_it_does_not_lead(dsn, bouncer, size, tmp_path):
    """`awa-tui --lead` through a transaction pooler: its engine refuses the leader lock (one
    log line, written before the console shows any log). The console says so for as long as
    it runs: the badge, its own runtime's row and page, the quit dialog."""
    config = build_config(dsn=through(bouncer, dsn), lead=True, app_ref=None, demo=True, read_only=False,
                          operator="op@test", refresh=2.0, say=print)
    assert config.engine is not None
    app = create_app(config)
    try:
        async with app.run_test(size=size) as pilot:
            await ready(pilot, app)
            await until(pilot, lambda: app.freshness.leader == "NOT LEADING: pooler in transaction mode",
                        what="the badge")
            own = str(config.engine.identity.instance_id)
            await pilot.press("3")
            await until(pilot, lambda: own in app.main.panel("runtimes").rows, what="its own runtime's row")
            panel = app.main.panel("runtimes")
            role = panel.table.get_row(own)[1]
            assert str(role) == "refused: pooler in transaction mode (this)"
            assert "this console refuses to lead: pooler in transaction mode" in str(
                panel.query_one(".panel-title").content)
            app.save_screenshot(str(tmp_path / f"pooler-runtimes-{size[0]}x{size[1]}.svg"))
            select(app, own, "runtimes")
            await pilot.press("enter")
            await until(pilot, lambda: len(app.screen_stack) == 2, what="the runtime's page")
            app.save_screenshot(str(tmp_path / f"pooler-page-{size[0]}x{size[1]}.svg"))
            await pilot.pause()
            page = screen_text(app)
            assert "refused: pooler in transaction mode" in page
            await pilot.press("escape")
            await pilot.press("q")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the quit dialog")
            await pilot.pause()
            said = dict(app.screen.details)
            assert said["This process"] == "running the engine, NOT LEADING (pooler in transaction mode)"
            assert said["Consequence"].startswith("The in-process engine stops. It holds no leader lock")
            app.save_screenshot(str(tmp_path / f"pooler-quit-{size[0]}x{size[1]}.svg"))
            print("SHOTS", tmp_path)
    finally:
        config.engine.close()
        config.client.close()


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
async def test_another_console_sees_a_runtime_that_refuses_to_lead_behind_a_pooler(dsn, conn, bouncer, size,
                                                                                   tmp_path):
    """Item 2's other half: a runtime behind a transaction pooler refuses the leader lock; a
    console elsewhere (straight to the server, not leading) reads the refusal from that
    runtime's snapshot row: its ROLE, the panel's first line, its events. The control, a
    runtime on a direct connection, refuses nothing and leads."""
    from awa_tui.engine.client import Client

    refusing = Client(through(bouncer, dsn), operator="pooled@test", application_name="awa-tui pooled")
    direct = Client(dsn, operator="direct@test", application_name="awa-tui direct")
    app = create_app(ConsoleConfig(client=console_client(dsn, "op@test", True), db_label="test", refresh=2.0))
    try:
        refusing.start(run_worker=False)
        direct.start(run_worker=False)
        pooled_id, direct_id = str(refusing.identity.instance_id), str(direct.identity.instance_id)
        until_sync(lambda: conn.execute("SELECT lead_refusal FROM awa.runtime_instances WHERE instance_id = %s",
                                        (pooled_id,)).fetchone() == {"lead_refusal": "pooler in transaction mode"},
                   15, what="the refusal in the refusing runtime's row")
        until_sync(lambda: direct.is_leader, 15, what="the direct runtime leading")
        async with app.run_test(size=size) as pilot:
            await ready(pilot, app)
            await pilot.press("3")
            await until(pilot, lambda: {pooled_id, direct_id} <= set(app.main.panel("runtimes").rows),
                        what="both runtimes' rows")
            await settled(pilot, app)
            panel = app.main.panel("runtimes")
            assert str(panel.table.get_row(pooled_id)[1]) == "refused: pooler in transaction mode"
            assert str(panel.table.get_row(direct_id)[1]) == "LEADER"  # the control
            assert "· 1 refuses to lead" in str(panel.query_one(".panel-title").content)
            app.save_screenshot(str(tmp_path / f"refusing-runtimes-{size[0]}x{size[1]}.svg"))
            select(app, pooled_id, "runtimes")
            await pilot.press("e")
            await until(pilot, lambda: getattr(app.screen, "data", None) is not None, what="its events")
            await pilot.pause()
            assert [(e.kind, e.detail) for e in app.screen.data.events] == [
                ("refused to lead", "pooler in transaction mode"), ("started", "")]
            text = screen_text(app)
            assert "refused: pooler in transaction mode; it never competes for the leader lock" in text
            assert "refused to lead" in text
            app.save_screenshot(str(tmp_path / f"refusing-events-{size[0]}x{size[1]}.svg"))
            await pilot.press("escape")
            select(app, direct_id, "runtimes")
            await pilot.press("e")
            await until(pilot, lambda: getattr(app.screen, "data", None) is not None, what="the control's events")
            assert app.screen.data.refusal is None
            assert [e.kind for e in app.screen.data.events] == ["became leader", "started"]
            print("SHOTS", tmp_path)
    finally:
        refusing.close()
        direct.close()
        app.client.close()
