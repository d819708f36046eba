"""The non-mutating keys: panels, jump, help, filter, sort, refresh, detail, audit, quit."""

from __future__ import annotations

from rich.console import Console
from textual.widgets import ContentSwitcher
from tui_helpers import notes, ready, select, settled, table_keys, until

from awa_tui.tui.screens.audit import AuditScreen
from awa_tui.tui.screens.confirm import ConfirmScreen
from awa_tui.tui.screens.detail import DetailScreen
from awa_tui.tui.screens.help import HelpScreen
from awa_tui.tui.screens.jump import JumpScreen, resolve


def current(app) -> str:
    return app.main.query_one(ContentSwitcher).current.removeprefix("panel-")


def rendered(renderable) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


async def test_number_keys_switch_panels_in_order(console_factory):
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        for key, panel in zip("23451", ("owners", "runtimes", "plan", "queues", "schedules"), strict=True):
            await pilot.press(key)
            assert current(app) == panel and app.active_panel == panel
            await settled(pilot, app)
        assert table_keys(app, "runtimes")[0] == "6f1c2a9e-0000-4000-8000-000000000001"


async def test_colon_jumps_by_prefix(console_factory):
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        await pilot.press("colon")
        await until(pilot, lambda: isinstance(app.screen, JumpScreen), what="jump prompt")
        await pilot.press(*"run", "enter")
        await until(pilot, lambda: current(app) == "runtimes", what="runtimes")
        await pilot.press("colon")
        await until(pilot, lambda: isinstance(app.screen, JumpScreen), what="jump prompt")
        await pilot.press(*"audit", "enter")
        await until(pilot, lambda: isinstance(app.screen, AuditScreen), what="audit")
    assert resolve("q") == "queues" and resolve("p") == "plan" and resolve("x") is None and resolve("3") == "runtimes"


async def test_help_lists_every_key_and_closes(console_factory):
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        from awa_tui.tui.screens.help import help_table

        text = rendered(help_table(app.screen.allowed))
        for words in ("or resume the selected schedule", "retire the selected schedule",
                      "restore a retired", "adopt an unowned", "retire every schedule of the selected owner",
                      "pause or resume the selected queue", "jump to a panel", "audit log"):
            assert words in text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen), what="help closed")


async def test_filter_is_server_side_and_escape_clears_it(console_factory):
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        await pilot.press("slash")
        await pilot.press(*"bill")
        # `bill` matches names, kinds, queues (billing) and owners (billing).
        await until(pilot, lambda: table_keys(app) == [
            "billing.nightly-invoice", "legacy.export", "payments.settlement-reconciliation-eu-west"
        ], what="filtered rows")
        await pilot.press("enter")
        assert app.focused is app.main.panel("schedules").table
        title = app.main.panel("schedules").query_one(".panel-title")
        await until(pilot, lambda: "filter: bill" in str(title.render()), what="filter shown in title")
        await pilot.press("escape")
        await until(pilot, lambda: len(table_keys(app)) == 8, what="filter cleared")


async def test_o_picks_the_sort_and_shift_o_reverses_it(console_factory):
    from awa_tui.tui.screens.sort import SortScreen

    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        panel = app.main.panel("schedules")
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, SortScreen), what="the sort menu")
        await pilot.press("down", "enter")  # name (current), then next
        await until(pilot, lambda: panel.sort == "next" and table_keys(app)[0] == "cleanup.tmp-files",
                    what="sorted by next fire")
        select(app, "reports.hourly")
        await pilot.press("O")
        # Latest first; schedules with no planned fire (retired, never evaluated) stay last.
        await until(pilot, lambda: panel.descending and table_keys(app)[0] == "billing.nightly-invoice",
                    what="reversed")
        assert panel.table.selected_key == "reports.hourly"  # the cursor followed its row


async def test_refresh_keys(console_factory):
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        await pilot.press("plus")
        assert app.poller.interval == 1.0
        await pilot.press("minus", "minus")
        assert app.poller.interval == 5.0 and app.freshness.interval == 5.0
        count = len(app.apply_times)
        await pilot.press("r")
        await until(pilot, lambda: len(app.apply_times) > count, what="refresh on r")


async def test_enter_opens_detail_with_next_fires_and_dst_marks(console_factory):
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        select(app, "billing.nightly-invoice")
        await pilot.press("enter")
        screen = await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.data and app.screen,
                             what="detail")
        fires = screen.data.next
        assert len(fires) == 5
        assert fires[0].utc.isoformat() == "2025-03-09T07:00:00+00:00" and fires[0].dst == "gap"
        assert [j.state for j in screen.data.recent] == ["completed", "completed"]
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, DetailScreen), what="back")


async def test_l_shows_the_audit_log(console_factory):
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, AuditScreen), what="audit screen")
        await until(pilot, lambda: app.screen.query_one("#audit-table").row_count == 3, what="audit rows")
        await pilot.press("escape")


async def test_q_quits_at_once_without_an_engine(console_factory):
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, what="exit")


async def test_q_asks_first_while_leading_and_quitting_releases_the_lock(console_factory, seeded, conn):
    from awa_tui.engine.client import Client

    engine = Client(seeded, operator="engine@test")
    engine.start(run_worker=False)
    try:
        app = console_factory(engine=engine)
        async with app.run_test(size=(120, 36)) as pilot:
            await ready(pilot, app)
            await until(pilot, lambda: engine.is_leader, what="leadership")
            await until(pilot, lambda: app.freshness.leader == "LEADER", what="LEADER badge")
            await pilot.press("q")
            dialog = await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, what="dialog")
            assert "releases the leader lock" in " ".join(v for _, v in dialog.details)
            await pilot.press("n")
            assert app.is_running
            await pilot.press("q")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="quit dialog")
            await pilot.press("y")
            await until(pilot, lambda: not app.is_running, what="exit")
    finally:
        engine.close()  # what launch_console does after the app returns
    held = conn.execute(
        "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    ).fetchone()
    assert held["n"] == 0


async def test_palette_offers_console_commands(console_factory):
    from awa_tui.tui.commands import palette_names

    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        names = palette_names(app.palette_allowed)
        assert "schedule: pause / resume" in names and "queue: pause / resume" in names and "panel: plan" in names


async def test_notification_text_is_not_markup(console_factory, conn):
    # A name with markup-like brackets is shown as typed, not interpreted.
    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind) VALUES ('[bold]odd[/bold]', '@daily', 'x')")
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        select(app, "[bold]odd[/bold]")
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="dialog")
        await pilot.press("y")
        await until(pilot, lambda: any("paused [bold]odd[/bold]" in n for n in notes(app)), what="literal name")


async def test_closing_a_screen_before_its_data_arrives_is_harmless(console_factory):
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        for _ in range(3):
            await pilot.press("enter", "escape", "l", "escape")
        await settled(pilot, app)
        assert app.is_running and len(app.screen_stack) == 1
