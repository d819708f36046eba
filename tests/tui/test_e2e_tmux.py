"""The real thing: `awa-tui --lead --demo` in a real terminal (tmux), driven by keys.

Pauses a schedule through the confirm dialog and checks the database, quits through the
quit dialog and checks the leader lock was released with a clean final snapshot; and
checks that losing the terminal (SIGHUP) releases it too.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import wait_for

AWA = str(Path(sys.executable).with_name("awa-tui"))



@pytest.fixture(autouse=True)
def _tmux_installed() -> None:
    """Never a silent skip: without tmux this fails, saying how to get it (`make test`
    installs it as root on Debian)."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed: run `make test-tools` (root) or apt-get install -y tmux", pytrace=False)


class Terminal:
    """One tmux session on a private server socket, 120x36."""

    def __init__(self) -> None:
        self.socket = f"awa-e2e-{uuid.uuid4().hex[:8]}"
        self.session = "console"

    def tmux(self, *args: str) -> str:
        out = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10)
        return out.stdout

    def start(self, command: list[str]) -> None:
        self.tmux("new-session", "-d", "-s", self.session, "-x", "120", "-y", "36", *command)
        self.tmux("set-option", "-t", self.session, "remain-on-exit", "on")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.session, *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.session)

    def history(self) -> str:
        """The screen and its scrollback: what a process printed as it exited may have
        scrolled off (tmux adds its 'Pane is dead' line below it)."""
        return self.tmux("capture-pane", "-p", "-S", "-", "-t", self.session)

    def wait_screen(self, text: str, timeout: float = 30.0) -> str:
        return wait_for(lambda: text in (s := self.screen()) and s, timeout=timeout, what=f"{text!r} on screen")

    def dead(self) -> bool:
        return self.tmux("display-message", "-p", "-t", self.session, "#{pane_dead}").strip() == "1"

    def kill(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal()
    yield term
    term.kill()


def leader_locks(conn: Any) -> int:
    return conn.execute(
        "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    ).fetchone()["n"]


def console(dsn: str) -> list[str]:
    return [AWA, "--lead", "--demo", "--dsn", dsn, "--operator", "e2e@tmux"]


def test_pause_through_the_dialog_then_quit_releases_leadership(terminal, dsn, conn):
    terminal.start(console(dsn))
    terminal.wait_screen("LEADER")
    terminal.wait_screen("demo.heartbeat")
    wait_for(lambda: leader_locks(conn) == 1, what="leader lock held")

    terminal.keys("s")  # the cursor starts on the first schedule: demo.heartbeat
    dialog = terminal.wait_screen("Pause schedule?")
    assert "schedule demo.heartbeat" in dialog and "e2e@tmux" in dialog and "Consequence" in dialog
    terminal.keys("y")
    wait_for(lambda: conn.execute("SELECT paused_by FROM awa.cron_jobs WHERE name = 'demo.heartbeat'")
             .fetchone()["paused_by"] == "e2e@tmux", what="paused in the database")
    audit = conn.execute("SELECT operator, action, target FROM awa.audit_log ORDER BY id DESC LIMIT 1").fetchone()
    assert audit == {"operator": "e2e@tmux", "action": "pause", "target": "demo.heartbeat"}
    terminal.wait_screen("PAUSED")

    terminal.keys("q")
    terminal.wait_screen("Quit the console?")
    terminal.keys("y")
    wait_for(terminal.dead, what="the console to exit")
    assert leader_locks(conn) == 0
    stopped = conn.execute("SELECT stopped_at FROM awa.runtime_instances").fetchone()
    assert stopped["stopped_at"] is not None  # a clean stop wrote its final snapshot
    assert "leader lock released" in terminal.history()


@pytest.mark.parametrize("how", ["terminal lost (SIGHUP)", "SIGTERM"])
def test_losing_the_terminal_or_sigterm_releases_leadership(terminal, dsn, conn, how):
    terminal.start(console(dsn))
    terminal.wait_screen("LEADER")
    wait_for(lambda: leader_locks(conn) == 1, what="leader lock held")
    if how == "SIGTERM":
        os.kill(int(terminal.tmux("display-message", "-p", "-t", terminal.session, "#{pane_pid}")), signal.SIGTERM)
    else:
        terminal.kill()  # the terminal goes away: the console gets SIGHUP
    wait_for(lambda: leader_locks(conn) == 0, what="leader lock released")
    wait_for(lambda: conn.execute("SELECT stopped_at FROM awa.runtime_instances").fetchone()["stopped_at"],
             what="final snapshot of a clean stop")


def test_zero_config_uses_the_embedded_postgres_and_says_so(terminal):
    from awa_tui import embedded

    # Short: the server's socket path must stay under 108 bytes (pytest's tmp_path is long).
    home = Path(tempfile.mkdtemp(prefix="awa-e2e-", dir="/tmp"))
    unset = [f"-u{name}" for name in ("AWA_DATABASE_URL", "DATABASE_URL", "PGHOST", "PGHOSTADDR", "PGPORT",
                                      "PGDATABASE", "PGUSER", "PGSERVICE")]
    terminal.start(["env", *unset, f"AWA_EMBEDDED_HOME={home}", AWA])
    try:
        screen = terminal.wait_screen("embedded Postgres at", timeout=60)
        assert str(home) in screen
        terminal.wait_screen("Schedules 0 of 0")  # migrated, empty, answering
        terminal.keys("q")
        wait_for(terminal.dead, what="the console to exit")
    finally:
        embedded.stop(home)
        shutil.rmtree(home, ignore_errors=True)
