"""What keeps the console trustworthy: STALE when the database stops answering and
automatic reconnection, no re-render under a dialog, the cursor kept on its row across
refreshes, paging, a too-small terminal, NO_COLOR."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from tui_helpers import notes, ready, select, settled, table_keys, until

import awa_tui
from awa_tui.engine import migrations
from awa_tui.tui.screens.confirm import ConfirmScreen


@contextmanager
def database_down(admin_dsn: str, dsn: str) -> Iterator[None]:
    """Refuse new connections to the test database and cut the console's (a real outage
    as the console sees it); restored on exit."""
    name = conninfo_to_dict(dsn)["dbname"]
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(sql.Identifier(name)))
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND application_name LIKE 'awa-tui console%%'",
            (name,),
        )
        try:
            yield
        finally:
            admin.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS true").format(sql.Identifier(name)))


async def test_stale_badge_then_reconnect(console_factory, seeded, pg_admin_dsn, conn):
    app = console_factory(refresh=0.5)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        with database_down(pg_admin_dsn, seeded):
            await until(pilot, lambda: app.freshness.stale, what="STALE")
            assert any(n.startswith("database not answering") for n in notes(app))
            assert len(table_keys(app)) == 8  # the last good data stays on screen
            assert app.freshness.updated == "12:00:30Z"
        conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind) VALUES ('zz.after-outage', '@daily', 'x')")
        await until(pilot, lambda: not app.freshness.stale and "zz.after-outage" in table_keys(app),
                    timeout=20, what="reconnected")


async def test_no_rerender_under_a_dialog(console_factory, conn):
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        select(app, "metrics.rollup")
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="dialog")
        conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind) VALUES ('aa.new', '@daily', 'x')")
        count = len(app.apply_times)
        app.refresh_now()
        await until(pilot, lambda: app._pending is not None, what="a refresh kept for later")
        assert len(app.apply_times) == count and "aa.new" not in table_keys(app)
        await pilot.press("n")
        await until(pilot, lambda: "aa.new" in table_keys(app), what="applied after the dialog")


async def test_cursor_stays_on_its_schedule_when_rows_appear_above(console_factory, conn):
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        select(app, "reports.hourly")
        table = app.main.panel("schedules").table
        before = table.cursor_row
        conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind) VALUES ('aa.first', '@daily', 'x'), "
                     "('ab.second', '@daily', 'x')")
        conn.execute("DELETE FROM awa.cron_jobs WHERE name = 'weekly.digest'")
        await settled(pilot, app)
        assert table_keys(app)[:2] == ["aa.first", "ab.second"] and "weekly.digest" not in table_keys(app)
        assert table.selected_key == "reports.hourly" and table.cursor_row == before + 2
        stats = table.last_sync_stats
        assert stats["added"] == 2 and stats["removed"] == 1


async def test_unchanged_refresh_touches_no_cell(console_factory):
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        await settled(pilot, app)
        assert app.main.panel("schedules").table.last_sync_stats == {"rows": 8, "added": 0, "removed": 0, "updated": 0}


async def test_the_end_of_the_list_loads_the_next_page(console_factory):
    app = console_factory(page_size=3)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        assert len(table_keys(app)) == 3
        assert "end of list loads more" in str(app.main.panel("schedules").query_one(".panel-title").render())
        await pilot.press("down", "down")
        await until(pilot, lambda: len(table_keys(app)) == 6, what="second page")
        assert app.main.panel("schedules").table.selected_key == table_keys(app)[2]


async def test_the_first_page_shows_before_its_counts_which_follow_at_once(console_factory, monkeypatch):
    from awa_tui.tui.panels.schedules import SchedulesPanel

    titles: list[str] = []  # every title the panel shows, in order (observed, not replaced)
    title_line = SchedulesPanel.title_line

    def recorded(panel: SchedulesPanel, text: object, *narrower: object) -> None:
        title_line(panel, text, *narrower)
        titles.append(str(text))  # the widest form

    monkeypatch.setattr(SchedulesPanel, "title_line", recorded)
    app = console_factory(refresh=30.0)  # the counts come from the refresh the page asks for, not the timer
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: len(app.apply_times) >= 2, what="the counted page")
        shown = [t for t in titles if not t.endswith("loading…")]
        assert shown[0].startswith("Schedules 8 · counting…") and "PAUSED" not in shown[0]
        assert shown[1].startswith("Schedules 8 of 8 · 1 PAUSED · 1 RETIRED")


async def test_select_all_on_a_partial_page_says_how_many_are_loaded(console_factory):
    app = console_factory(page_size=3)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        await pilot.press("asterisk")
        assert len(app.main.panel("schedules").selected) == 3
        assert notes(app) == ["selected the 3 loaded of 8 matching; go to the end of the list to load more"]


async def test_too_small_terminal_says_so(console_factory):
    app = console_factory()
    async with app.run_test(size=(50, 12)) as pilot:
        await ready(pilot, app)
        message = app.main.query_one("#too-small")
        assert message.display and "Terminal too small: 50x12" in str(message.render())
        assert not app.main.query_one("#panels").display or app.main.has_class("-too-small")


async def test_no_color_is_respected_and_states_are_words(console_factory, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        assert app.no_color
        table = app.main.panel("schedules").table
        states = {key: table.get_cell(key, "state").plain for key in table_keys(app)}
        assert states["cleanup.tmp-files"] == "PAUSED"
        assert states["legacy.export"] == "RETIRED"
        assert states["crm.contact-sync"] == "active, Q PAUSED"


async def test_a_dsn_password_is_never_displayed(console_factory):
    # Nothing listens there: the console starts, cannot connect, and says so, without the password.
    app = console_factory(dsn="postgresql://ops:s3cret-pw@127.0.0.1:1/awa", db_label=None)
    assert "s3cret" not in app.database and "127.0.0.1:1/awa" in app.database
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.freshness.stale, what="STALE")
        shown = " ".join(notes(app)) + app.sub_title + str(app.main.query_one("#status-bar").render())
        assert "cannot connect" in shown and "s3cret" not in shown


async def test_engine_warnings_become_notifications_once(console_factory, seeded):
    import logging

    from awa_tui.engine.client import Client

    engine = Client(seeded)  # not started: the console only reads its leadership and identity
    app = console_factory(engine=engine)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        assert app.freshness.leader == "FOLLOWER"
        for _ in range(3):
            logging.getLogger("awa_tui.leader").warning("lost leadership")
        logging.getLogger("awa_tui.worker").warning("job 7 (demo.flaky) failed: boom")
        # The warnings reach the console as messages, in order: once this last one is shown,
        # every one before it has been handled.
        logging.getLogger("awa_tui.leader").warning("became leader")
        await until(pilot, lambda: "engine: became leader" in notes(app), what="the last engine warning")
        assert notes(app).count("engine: lost leadership") == 1
        assert not [n for n in notes(app) if "demo.flaky" in n]
    engine.close()
    assert not [h for h in logging.getLogger("awa_tui").handlers if type(h).__name__ == "EngineLog"]


async def test_heap_frozen_after_the_first_paint(console_factory):
    # A full collection must not walk the widgets and modules on every few refreshes: what is
    # alive at the first paint is frozen (gc.freeze), once per process.
    gc.unfreeze()  # an earlier console in this process froze the heap: start from none
    assert gc.get_freeze_count() == 0
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        frozen = gc.get_freeze_count()
        assert frozen > 0  # this app's first paint froze it
        await settled(pilot, app)
        # Frozen objects that die leave the count (it may fall); a second freeze would add
        # every refresh's heap on top of it.
        assert gc.get_freeze_count() <= frozen


async def test_a_schema_behind_is_said_in_one_line_not_as_a_dead_database(console_factory, seeded):
    # The package upgraded, the database not: v018's column gone and its record with it.
    with psycopg.connect(seeded, autocommit=True) as c:
        c.execute("ALTER TABLE awa.cron_jobs DROP COLUMN exclude_dates CASCADE")
        c.execute("DELETE FROM awa.schema_migrations WHERE version >= 18")
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.freshness.stale, what="STALE")
        line = (f"this database is at schema 17; this awa-tui {awa_tui.__version__} needs "
                f"{migrations.code_version()}: run `awa-tui migrate`")
        assert line in notes(app)
        assert app.freshness.stale_reason == line
        assert not any("not answering" in n or "exclude_dates" in n for n in notes(app))
