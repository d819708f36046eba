"""A runtime killed -9 or frozen stops its heartbeat long before its row stops being fresh
(3 snapshot intervals, at least 30 s): the console says SILENT and for how long as soon as
1.5 intervals (plus 2 s) passed, by the database clock of the refresh."""

from __future__ import annotations

from datetime import timedelta

from tui_helpers import ready, settled, until
from tui_seed import NOW, RUNTIMES


def state_of(app, instance: str) -> str:
    return str(app.main.panel("runtimes").table.get_row(instance)[2])


def title(app) -> str:
    return str(app.main.panel("runtimes").query_one(".panel-title").content)


async def test_a_runtime_whose_heartbeat_stopped_reads_silent(console_factory):
    # app-1 last reported at 12:00:25 and app-2 at 12:00:21 (10 s heartbeats): at 12:00:43
    # app-2 has said nothing for 22 s (past 17 s), app-1 for 18 s; both rows are still fresh.
    app = console_factory(clock=lambda: NOW + timedelta(seconds=13))
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot, app)
        await pilot.press("3")
        await settled(pilot, app)
        first, second = (str(r["instance_id"]) for r in RUNTIMES[:2])
        await until(pilot, lambda: second in app.main.panel("runtimes").rows, what="the runtimes")
        assert state_of(app, second) == "SILENT 22s"
        assert state_of(app, first) == "SILENT 18s"
        assert " · 2 SILENT" in title(app)


async def test_a_runtime_heard_from_in_time_reads_fresh(console_factory):
    app = console_factory()  # 12:00:30: app-1 5 s, app-2 9 s since their last snapshot
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot, app)
        await pilot.press("3")
        await settled(pilot, app)
        first, second = (str(r["instance_id"]) for r in RUNTIMES[:2])
        assert state_of(app, first) == "fresh" and state_of(app, second) == "fresh"
        assert "SILENT" not in title(app)
