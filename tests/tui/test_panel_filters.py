"""`/` with the grammar on the owners, runtimes and queues panels (the small lists, filtered
in the console): the filter is shown in the title, a bad one is one line, esc clears."""

from __future__ import annotations

from datetime import UTC, datetime

from tui_helpers import settled, table_keys, until

from awa_tui.engine.read.models import AuditEntry, QueueRow
from awa_tui.filters import parse
from awa_tui.tui import filtering

RT1, RT2, RT3 = ("6f1c2a9e-0000-4000-8000-000000000001", "0b7d4e21-0000-4000-8000-000000000002",
                 "c3a0ffee-0000-4000-8000-000000000003")


NOW = datetime(2026, 3, 8, 12, 0, tzinfo=UTC)


def title(app, panel: str) -> str:
    return str(app.main.panel(panel).query_one(".panel-title").content)


async def test_runtimes_filter_by_role_flag_and_host(console):
    app, pilot = console
    await pilot.press("3")
    await settled(pilot, app)
    assert table_keys(app, "runtimes") == [RT1, RT2, RT3]
    await pilot.press("slash", *"stale")
    await until(pilot, lambda: table_keys(app, "runtimes") == [RT3], what="the stale one")
    assert "filter: stale" in title(app, "runtimes")
    bar = app.main.panel("runtimes").filter_bar
    bar.value = "host:app-*"
    await until(pilot, lambda: table_keys(app, "runtimes") == [RT1, RT2], what="app-* hosts")
    bar.value = "colour:red"
    await until(pilot, lambda: "unknown field 'colour'" in title(app, "runtimes"), what="the error")
    assert "filter: unknown field 'colour' on runtimes; fields are host, role, owner" in title(app, "runtimes")
    await settled(pilot, app)
    assert table_keys(app, "runtimes") == [RT1, RT2]  # the last good filter stays
    await pilot.press("escape")
    await until(pilot, lambda: table_keys(app, "runtimes") == [RT1, RT2, RT3], what="cleared")
    assert "filter" not in title(app, "runtimes")


async def test_owners_and_queues_filters(console):
    app, pilot = console
    await pilot.press("2")
    await settled(pilot, app)
    assert table_keys(app, "owners") == ["billing", "platform"]
    await pilot.press("slash", *"-plat*", "enter")
    await until(pilot, lambda: table_keys(app, "owners") == ["billing"], what="not platform")
    assert app.focused is app.main.panel("owners").table
    await pilot.press("escape")
    await until(pilot, lambda: table_keys(app, "owners") == ["billing", "platform"], what="cleared")
    await pilot.press("5")
    await settled(pilot, app)
    # Every queue shown before filtering (a refresh may still be filling the panel).
    await until(pilot, lambda: len(table_keys(app, "queues")) > 1, what="the queues shown")
    await pilot.press("slash", *"paused", "enter")
    # Waited for by its exact value: a refresh in between may show another list for a moment.
    await until(pilot, lambda: table_keys(app, "queues") == ["integrations"], what="the seeded paused queue")


def test_the_console_matcher_follows_the_grammar():
    rows = [QueueRow(queue, paused, None, None, 0, 0, 0)
            for queue, paused in (("reports", True), ("default", False), ("Report-EU", False))]
    names = lambda text: [r.queue for r in filtering.apply(parse(text, "queues"), rows)]  # noqa: E731
    assert names("paused") == ["reports"]
    assert names("-paused") == ["default", "Report-EU"]
    assert names("name:report") == ["reports", "Report-EU"]  # name: a substring, case-insensitive
    assert names("name:r*t") == ["reports", "Report-EU"]  # * any run
    assert names("state:paused") == ["reports"]
    assert names("state:active rep") == ["Report-EU"]  # free text is a substring
    audit = [AuditEntry(n, NOW, who, "pause", target, None, None, {}, None)
             for n, who, target in ((1, "a", None), (2, "b", "x1"))]
    assert [r.operator for r in filtering.apply(parse("-target:x*", "audit"), audit)] == ["a"]  # no value: negation


async def test_audit_log_filter(console):
    app, pilot = console
    from awa_tui.tui.screens.audit import AuditScreen
    await pilot.press("l")
    await until(pilot, lambda: isinstance(app.screen, AuditScreen), what="audit log")
    table = app.screen.query_one("#audit-table")
    await until(pilot, lambda: table.row_count > 1, what="audit rows")
    everything = table.row_count
    await pilot.press("slash", *"action:retire", "enter")
    await until(pilot, lambda: table.row_count == 1, what="the one retire")
    assert "filter: action:retire" in str(app.screen.query_one("#audit-title").content)
    assert table.get_row_at(0)[3].plain == "retire"
    await pilot.press("escape")
    await until(pilot, lambda: table.row_count == everything, what="cleared")
    assert isinstance(app.screen, AuditScreen)
    await pilot.press("escape")
    await until(pilot, lambda: not isinstance(app.screen, AuditScreen), what="back")
