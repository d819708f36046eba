"""The console's leadership is the leader lock's holder (pg_locks and the lease), never the
snapshots' is_leader flags: it names the holder, says STALLED when the holder's lease
expired, and does not report two leaders after a leader was killed with -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from textual.widgets import Static
from tui_helpers import ready, settled, until
from tui_seed import DB_LABEL, NOW, OPERATOR

from awa_tui.engine.client import Client
from awa_tui.tui.config import ConsoleConfig
from awa_tui.tui.launch import console_client, create_app

ENGINE_TESTS = Path(__file__).resolve().parents[1] / "engine" / "runtime"
APP_1 = "6f1c2a9e-0000-4000-8000-000000000001"


def title(app: Any) -> str:
    return str(app.main.panel("runtimes").query_one(".panel-title", Static).content)


def roles(app: Any) -> dict[str, str]:
    table = app.main.panel("runtimes").table
    return {row.key.value: str(table.get_row(row.key)[1]) for row in table.ordered_rows}


async def test_the_holder_is_named_with_host_pid_and_instance(console_factory: Any) -> None:
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        await pilot.press("3")
        await settled(pilot, app)
        assert title(app) == "Runtimes 3 (2 fresh) · leader app-1 pid 4242 (instance 6f1c2a9e), lease 5s"
        assert app.freshness.attention is None
        assert roles(app) == {
            APP_1: "LEADER", "0b7d4e21-0000-4000-8000-000000000002": "follower",
            "c3a0ffee-0000-4000-8000-000000000003": "follower",
        }


async def test_a_holder_whose_lease_expired_is_stalled(console_factory: Any) -> None:
    """The seeded lease expires at NOW + 5 s; the console's clock reads NOW + 12 s."""
    app = console_factory(clock=lambda: NOW + timedelta(seconds=12))
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        assert app.freshness.attention == (
            "leader STALLED: app-1 pid 4242 (instance 6f1c2a9e) holds the lock but its lease expired 7s ago; "
            "nothing fires until a standby deposes it"
        )
        await pilot.press("3")
        await settled(pilot, app)
        # app-2, last seen at 12:00:21, has said nothing for 21 s: its heartbeat stopped.
        assert title(app) == "Runtimes 3 (2 fresh) · leader STALLED app-1 pid 4242 (instance 6f1c2a9e) · 1 SILENT"
        assert roles(app)[APP_1] == "STALLED"


async def test_control_characters_of_the_holders_host_never_reach_the_screen(
    console_factory: Any, conn: Any
) -> None:
    conn.execute("UPDATE awa.runtime_instances SET hostname = %s WHERE instance_id = %s",
                 ("app\x1b]0;owned\x07-1", APP_1))
    app = console_factory(clock=lambda: NOW + timedelta(seconds=12))
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        await pilot.press("3")
        await settled(pilot, app)
        assert title(app) == (
            "Runtimes 3 (2 fresh) · leader STALLED app\\x1b]0;owned\\x07-1 pid 4242 (instance 6f1c2a9e) · 1 SILENT")
        assert app.freshness.attention is not None and "\x1b" not in app.freshness.attention


async def test_no_lock_holder_is_no_live_leader(console_factory: Any, conn: Any) -> None:
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        # The seeded holder's session ends: the lock is free whatever the snapshots say.
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'seeded leader'")
        await until(pilot, lambda: app.freshness.attention is not None and app.apply_times, what="attention")
        await settled(pilot, app)
        assert app.freshness.attention == "no live leader: nothing fires until a runtime takes the leader lock"
        await pilot.press("3")
        await settled(pilot, app)
        assert roles(app)[APP_1] == "follower"  # its snapshot still says is_leader
        assert title(app) == "Runtimes 3 (2 fresh) · no leader"


def _lock_app(conn: Any) -> str | None:
    row = conn.execute(
        "SELECT a.application_name FROM awa.leader_lease l JOIN pg_stat_activity a ON a.pid = l.backend_pid "
        "WHERE l.backend_pid = awa.leader_lock_pid(%s)", (0x617761_0001,),
    ).fetchone()
    return row["application_name"] if row else None


async def test_after_kill_9_of_the_leader_the_console_shows_one_leader_not_two(dsn: str, conn: Any) -> None:
    """A leader killed with -9 keeps is_leader = true in its fresh snapshot row for the whole
    freshness window; the console must show the new lock holder as the only leader."""
    env = {**os.environ, "PYTHONPATH": f"{ENGINE_TESTS}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.pop("AWA_DATABASE_URL", None)
    victim = subprocess.Popen(
        [sys.executable, "-m", "awa_tui", "run", "--app", "leader_app:setup", "--dsn", dsn],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    follower = Client(dsn, operator="follower@test", application_name="awa-tui follower")
    console = console_client(dsn, OPERATOR, True)
    try:
        app = create_app(ConsoleConfig(client=console, db_label=DB_LABEL, refresh=0.5))
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: _lock_app(conn) == "awa-tui run leader", timeout=20, what="the subprocess leads")
            follower.start(run_worker=False)
            await until(pilot, lambda: conn.execute(
                "SELECT count(*) AS n FROM awa.runtime_instances WHERE is_leader").fetchone()["n"] == 1,
                timeout=10, what="the leader's snapshot row")
            os.kill(victim.pid, signal.SIGKILL)
            assert victim.wait(10) == -signal.SIGKILL
            await until(pilot, lambda: follower.is_leader, timeout=5, what="the follower to take over")
            await until(pilot, lambda: conn.execute(
                "SELECT count(*) AS n FROM awa.runtime_instances WHERE is_leader").fetchone()["n"] == 2,
                timeout=10, what="the new leader's snapshot row")
            # Two fresh rows say is_leader; the lock says one.
            rows = {r["pid"]: r for r in conn.execute("SELECT pid, is_leader FROM awa.runtime_instances")}
            assert rows[victim.pid]["is_leader"] and rows[os.getpid()]["is_leader"]
            await ready(pilot, app)
            await pilot.press("3")
            await settled(pilot, app)
            assert app.freshness.attention is None
            shown = roles(app)
            assert sorted(shown.values()) == ["LEADER", "follower"]
            assert shown[str(follower.identity.instance_id)] == "LEADER"
            assert f"pid {os.getpid()} (instance {str(follower.identity.instance_id)[:8]})" in title(app)
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait(10)
        follower.close()
        console.close()
