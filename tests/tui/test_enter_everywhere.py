"""Enter goes somewhere useful on every panel: an owner or a queue to its schedules (the
filter set), a runtime to its full snapshot, a plan entry to its reason (test_console_defects)."""

from __future__ import annotations

from rich.console import Console as RichConsole
from textual.widgets import ContentSwitcher
from tui_helpers import notes, select, settled, table_keys, until

from awa_tui.tui.screens.info import InfoScreen


def plain(renderable) -> str:
    console = RichConsole(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def current(app) -> str:
    return app.main.query_one(ContentSwitcher).current.removeprefix("panel-")


async def test_enter_on_an_owner_shows_its_schedules(console):
    app, pilot = console
    await pilot.press("2")
    await settled(pilot, app)
    select(app, "billing", "owners")
    await pilot.press("enter")
    await until(pilot, lambda: current(app) == "schedules", what="the schedules panel")
    await until(pilot, lambda: table_keys(app) == ["billing.nightly-invoice", "legacy.export"], what="billing's")
    assert "filter: owner:billing" in str(app.main.panel("schedules").query_one(".panel-title").content)
    await pilot.press("escape")
    await until(pilot, lambda: len(table_keys(app)) == 8, what="filter cleared")


async def test_enter_on_a_queue_shows_its_schedules(console):
    app, pilot = console
    await pilot.press("5")
    await settled(pilot, app)
    select(app, "integrations", "queues")
    await pilot.press("enter")
    await until(pilot, lambda: table_keys(app) == ["crm.contact-sync"], what="the queue's schedules")
    assert current(app) == "schedules"


async def test_enter_on_a_runtime_opens_its_snapshot(console):
    app, pilot = console
    await pilot.press("3")
    await settled(pilot, app)
    select(app, "0b7d4e21-0000-4000-8000-000000000002", "runtimes")
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, InfoScreen), what="runtime page")
    assert app.screen.heading == "Runtime 0b7d4e21-0000-4000-8000-000000000002"
    text = plain(app.screen.query_one("#info-body").content)
    for line in ("instance  0b7d4e21-0000-4000-8000-000000000002", "role      follower",
                 "host      app-2 pid 5151", "version   0.1.0 (protocol 1)",
                 "owner     billing authoritative", "started   2025-03-08 08:00:05Z",
                 "state     fresh; last seen 2025-03-08 12:00:21Z (9s ago)", "health    healthy"):
        assert line in text, (line, text)
    await pilot.press("escape")
    await until(pilot, lambda: not isinstance(app.screen, InfoScreen), what="closed")


async def test_c_copies_the_selected_value_to_the_clipboard(console):
    app, pilot = console
    select(app, "metrics.rollup")
    await pilot.press("c")
    await until(pilot, lambda: app.clipboard == "metrics.rollup", what="copied name")
    assert notes(app)[-1] == "copied schedule: metrics.rollup"
    await pilot.press("3")
    await settled(pilot, app)
    select(app, "c3a0ffee-0000-4000-8000-000000000003", "runtimes")
    await pilot.press("c")
    await until(pilot, lambda: app.clipboard == "c3a0ffee-0000-4000-8000-000000000003", what="copied id")
    await pilot.press("1")
    await settled(pilot, app)
    select(app, "crm.contact-sync")
    await pilot.press("enter")
    await until(pilot, lambda: getattr(app.screen, "data", None), what="detail loaded")
    await pilot.press("J")
    latest = str(app.screen.data.recent[0].id)
    await until(pilot, lambda: app.clipboard == latest, what="copied job id")
    assert notes(app)[-1] == f"copied job id: {latest}"
