"""`e` on a runtime: its recent events, newest first (k9s's drill-down). First with real
runtimes, one of them deposed (its lock session terminated); then the screen over events
written into a seeded row by hand (the oracle; times are the seed's), as snapshots."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from helpers import wait_for
from rich.console import Console as RichConsole
from tui_helpers import ready, screen_text, select, settled, until, write_runtime_json
from tui_seed import NOW

from awa_tui.engine.client import Client
from awa_tui.tui.config import ConsoleConfig
from awa_tui.tui.launch import console_client, create_app
from awa_tui.tui.screens.runtime_events import RuntimeEventsScreen

LEADER = "6f1c2a9e-0000-4000-8000-000000000001"


def _runtime(dsn: str, label: str) -> Client:
    client = Client(dsn, operator=f"{label}@test", application_name=f"awa-tui {label}")
    client.periodic("tick", "* * * * * *", "test.tick")
    return client


def _first_kind(conn: Any, client: Client) -> str | None:
    row = conn.execute("SELECT recent_events -> 0 ->> 'kind' AS kind FROM awa.runtime_instances "
                       "WHERE instance_id = %s", (client.identity.instance_id,)).fetchone()
    return row["kind"] if row else None


async def test_a_deposed_leader_reads_became_leader_then_lost_the_lead(dsn: str, conn: Any) -> None:
    first, second = _runtime(dsn, "first"), _runtime(dsn, "second")
    app = create_app(ConsoleConfig(client=console_client(dsn, "op@test", True), db_label="test", refresh=2.0))
    try:
        first.start(run_worker=False)
        wait_for(lambda: first.is_leader, timeout=5, what="the first runtime to lead")
        second.start(run_worker=False)
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE application_name = 'awa-tui first leader'")
        wait_for(lambda: second.is_leader and _first_kind(conn, first) == "lost the lead", timeout=15,
                 what="the deposition in the first's row")
        term = conn.execute("SELECT term FROM awa.leader_lease").fetchone()["term"] - 1
        async with app.run_test(size=(160, 48)) as pilot:
            await ready(pilot, app)
            await pilot.press("3")
            await settled(pilot, app)
            select(app, str(first.identity.instance_id), "runtimes")
            await pilot.press("e")
            await until(pilot, lambda: isinstance(app.screen, RuntimeEventsScreen) and app.screen.data is not None,
                        what="its events")
            await pilot.pause()
            shown = " ".join(screen_text(app).split())
            data = app.screen.data
            assert [(e.kind, e.detail) for e in data.events] == [
                ("lost the lead", data.events[0].detail), ("became leader", f"term {term}, lease 5s"), ("started", "")]
            # On the screen in that order, each with its database time.
            places = [shown.index(f"{e.at:%Y-%m-%d %H:%M:%S}Z") for e in data.events]
            assert places == sorted(places) and data.events[0].at >= data.events[1].at >= data.events[2].at
            assert shown.index("lost the lead") < shown.index("became leader") < shown.index("started")
            assert app.screen.data.events[0].detail in {
                f"term {term}: its lock connection failed: terminating connection due to administrator command",
                f"term {term}: stepped down: its lease expired or was taken over"}
            await pilot.press("escape")
            await until(pilot, lambda: not isinstance(app.screen, RuntimeEventsScreen), what="back")
            assert app.active_panel == "runtimes"
    finally:
        first.close()
        second.close()
        app.client.close()


def plain(renderable: Any) -> str:
    console = RichConsole(width=400, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def at(seconds: int) -> str:
    return (NOW - timedelta(seconds=seconds)).isoformat()


EVENTS = [  # newest first, as a runtime writes them
    {"at": at(3), "kind": "became leader", "detail": "term 8, lease 5s"},
    {"at": at(9), "kind": "deposed a stalled leader", "detail": "backend pid 9120, lease expired "
     "2025-03-08T12:00:19+00:00: terminated its lock session"},
    {"at": at(40), "kind": "lost the lead", "detail": "term 7: its lock connection was silent for 3s"},
    {"at": at(95), "kind": "pass timed out", "detail": "gave up: canceling statement due to lock timeout after "
     "2.0 s; blocked by session 4243 (user alice\x1b]0;owned\x07, psql, idle in transaction) holding table "
     "awa.cron_jobs: LOCK TABLE awa.cron_jobs"},
    {"at": at(600), "kind": "became leader", "detail": "term 7, lease 5s"},
    {"at": at(605), "kind": "started", "detail": ""},
]


def with_events(conn: Any) -> None:
    """Written as the seed writes (a restored dump: triggers off)."""
    write_runtime_json(conn, LEADER, "recent_events", EVENTS)


async def open_events(pilot: Any) -> None:
    app = pilot.app
    await ready(pilot, app)
    await pilot.press("3")
    await settled(pilot, app)
    select(app, LEADER, "runtimes")
    await pilot.press("e")
    await until(pilot, lambda: isinstance(app.screen, RuntimeEventsScreen) and app.screen.data is not None,
                what="the runtime's events")
    await pilot.pause()


async def test_the_events_newest_first_at_database_time_escaped(console_factory: Any, seeded: str,
                                                               conn: Any) -> None:
    with_events(conn)
    app = console_factory()
    async with app.run_test(size=(160, 48)) as pilot:
        await open_events(pilot)
        lines = [" ".join(line.split()) for line in plain(app.screen.query_one("#runtime-events-body").content)
                 .splitlines()]
    start = lines.index("Recent events, newest first")
    # NOW is 2025-03-08 12:00:30Z; the row's start (08:00:00) is older than any event kept.
    assert lines[start + 1:] == [
        "AT (UTC) AGO EVENT DETAIL",
        "2025-03-08 12:00:27Z 3s ago became leader term 8, lease 5s",
        "2025-03-08 12:00:21Z 9s ago deposed a stalled leader backend pid 9120, lease expired "
        "2025-03-08T12:00:19+00:00: terminated its lock session",
        "2025-03-08 11:59:50Z 40s ago lost the lead term 7: its lock connection was silent for 3s",
        "2025-03-08 11:58:55Z 1m ago pass timed out gave up: canceling statement due to lock timeout after 2.0 s; "
        "blocked by session 4243 (user alice\\x1b]0;owned\\x07, psql, idle in transaction) holding table "
        "awa.cron_jobs: LOCK TABLE awa.cron_jobs",
        "2025-03-08 11:50:30Z 10m ago became leader term 7, lease 5s",
        "2025-03-08 11:50:25Z 10m ago started -",
    ]


def test_narrow_each_event_has_its_detail_on_its_own_line() -> None:
    """Under 110 columns a detail beside its event would wrap a few words a line: each goes
    on its own indented line under its event, wrapped at the full width."""
    from awa_tui.engine.read.fleet import RuntimeEvent, RuntimeEvents
    from awa_tui.tui.screens.runtime_events import EventsView

    now = datetime.fromisoformat("2025-03-08T12:00:30+00:00")
    events = [RuntimeEvent(datetime.fromisoformat(e["at"]), e["kind"], e["detail"]) for e in EVENTS[1:3]]
    data = RuntimeEvents(instance_id=uuid.UUID(LEADER), hostname="app-1", pid=4242, now=now, events=tuple(events))
    console = RichConsole(width=80, record=True, color_system=None)
    console.print(EventsView(data))
    assert [line.rstrip() for line in console.export_text().splitlines()] == [
        "AT (UTC)              AGO       EVENT / DETAIL",
        "2025-03-08 12:00:21Z  9s ago    deposed a stalled leader",
        "    backend pid 9120, lease expired 2025-03-08T12:00:19+00:00: terminated its",
        "    lock session",
        "2025-03-08 11:59:50Z  40s ago   lost the lead",
        "    term 7: its lock connection was silent for 3s",
    ]
    wide = RichConsole(width=160, record=True, color_system=None)  # wide: the table, as before
    wide.print(EventsView(data))
    assert wide.export_text().splitlines()[0].split() == ["AT", "(UTC)", "AGO", "EVENT", "DETAIL"]


async def test_a_runtime_without_events_says_so(console_factory: Any) -> None:
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await open_events(pilot)
        assert app.screen.data.events[0].kind == "started"  # the row's own start, 08:00:00
        assert len(app.screen.data.events) == 1


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_snapshot_runtime_events(snap_compare: Any, console_factory: Any, seeded: str, conn: Any,
                                 size: tuple[int, int]) -> None:
    with_events(conn)
    assert snap_compare(console_factory(), terminal_size=size, run_before=open_events)
