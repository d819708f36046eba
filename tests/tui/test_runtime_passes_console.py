"""The runtimes page shows a runtime's last evaluator passes (issue 12): enter on a runtime
opens its snapshot in full, then its passes, newest first, as its snapshot row carries them.
The passes are written into the seeded row by hand (the oracle); times are the seed's."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from psycopg.types.json import Jsonb
from rich.console import Console as RichConsole
from tui_helpers import ready, select, settled, until, write_runtime_json
from tui_seed import NOW

from awa_tui.tui.screens.info import InfoScreen

LEADER = "6f1c2a9e-0000-4000-8000-000000000001"
PASSES = [  # newest first, as a runtime writes them
    {"at": (NOW - timedelta(seconds=1)).isoformat(), "duration_ms": 3.2, "due": 2, "fired": 2, "errors": 0},
    {"at": (NOW - timedelta(seconds=2)).isoformat(), "duration_ms": 41.5, "due": 7, "fired": 5, "errors": 1},
]


def plain(renderable: Any) -> str:
    console = RichConsole(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def with_passes(conn: Any) -> None:
    """Written as the seed writes (a restored dump: triggers off)."""
    write_runtime_json(conn, LEADER, "recent_passes", PASSES)


async def open_leader(pilot: Any) -> None:
    app = pilot.app
    await ready(pilot, app)
    await pilot.press("3")
    await settled(pilot, app)
    select(app, LEADER, "runtimes")
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, InfoScreen), what="the runtime page")
    await pilot.pause()


async def test_runtime_page_lists_its_last_passes(console_factory: Any, seeded: str, conn: Any) -> None:
    with_passes(conn)
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await open_leader(pilot)
        lines = [" ".join(line.split()) for line in plain(app.screen.query_one("#info-body").content).splitlines()]
    start = lines.index("Last passes")
    # NOW is 2025-03-08 12:00:30Z: the passes at :29 and :28.
    assert lines[start + 1: start + 4] == [
        "AT (UTC) AGO TOOK DUE FIRED ERRORS",
        "2025-03-08 12:00:29Z 1s ago 3.2 ms 2 2 0",
        "2025-03-08 12:00:28Z 2s ago 41.5 ms 7 5 1",
    ]


async def test_a_runtime_without_passes_says_why(console_factory: Any) -> None:
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await open_leader(pilot)
        text = " ".join(plain(app.screen.query_one("#info-body").content).split())
    assert ("Last passes none reported: only the leader evaluates, and it reports its passes with each snapshot"
            in text)


def test_snapshot_runtime_page_with_passes(snap_compare: Any, console_factory: Any, seeded: str, conn: Any) -> None:
    with_passes(conn)
    assert snap_compare(console_factory(), terminal_size=(80, 24), run_before=open_leader)


BLOCKED = [  # the leader's newest pass gave up on a lock another session held (S59)
    {"at": (NOW - timedelta(seconds=1)).isoformat(), "duration_ms": 2004.0, "due": 0, "fired": 0, "errors": 0,
     "timed_out": True,
     "blockers": [{"pid": 4242, "user": "alice\x1b]0;owned\x07", "application": "psql",
                   "state": "idle in transaction", "kind": "LOCK TABLE awa.jobs", "waited_for": "table awa.jobs"}]},
    PASSES[1],
]
SHOWN_BLOCKER = ("blocked by session 4242 (user alice\\x1b]0;owned\\x07, psql, idle in transaction) holding "
                 "table awa.jobs: LOCK TABLE awa.jobs")


async def test_the_runtimes_panel_names_what_blocks_the_leaders_pass(console_factory: Any, seeded: str,
                                                                      conn: Any) -> None:
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute("UPDATE awa.runtime_instances SET recent_passes = %s WHERE instance_id = %s",
                     (Jsonb(BLOCKED), LEADER))
    app = console_factory()
    async with app.run_test(size=(240, 36)) as pilot:
        await ready(pilot, app)
        await pilot.press("3")
        await settled(pilot, app)
        panel = app.main.panel("runtimes")
        await until(pilot, lambda: "TIMED OUT" in str(panel.query_one(".panel-title").content),
                    what="the blocked pass in the title")
        title = " ".join(str(panel.query_one(".panel-title").content).split())
        await open_leader(pilot)
        lines = [" ".join(line.split()) for line in plain(app.screen.query_one("#info-body").content).splitlines()]
    # The first line of the panel: the timed-out pass and its blocker, its SQL escaped.
    assert "· last pass TIMED OUT at 2025-03-08 12:00:29Z after 2.0 s; " + SHOWN_BLOCKER in title
    assert "\x1b" not in title
    start = lines.index("Last passes")
    assert lines[start + 1: start + 4] == [
        "AT (UTC) AGO TOOK DUE FIRED ERRORS",
        "2025-03-08 12:00:29Z 1s ago 2004 ms 0 0 timed out",
        "2025-03-08 12:00:28Z 2s ago 41.5 ms 7 5 1",
    ]
    assert " ".join(lines[start + 4:]).startswith("last pass TIMED OUT at 2025-03-08 12:00:29Z after 2.0 s; "
                                                  + SHOWN_BLOCKER)
