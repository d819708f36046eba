"""Console and CLI options that must be refused in one line, or behave safely: --read-only
with --lead, --refresh out of range, no Screenshot in a read-only palette, --app not
shadowing modules, and SIGTERM ending a real console whatever screen it shows."""

from __future__ import annotations

import fcntl
import os
import re
import signal
import struct
import subprocess
import termios
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import until, wait_for
from security_helpers import COMMAND, awa, cli_env, one_line_error

from awa_tui.tui.config import ConsoleConfig
from awa_tui.tui.launch import console_client, create_app

OFF_PORT_DSN = "postgresql://app@127.0.0.1:1/db"  # never reached: the options are refused first


def test_read_only_with_lead_is_refused() -> None:
    result = awa("--read-only", "--lead", "--demo", "--dsn", OFF_PORT_DSN)
    assert one_line_error(result) == (
        "error: --read-only and --lead: a read-only console cannot run the engine, which writes; drop one")


@pytest.mark.parametrize("value, shown", [
    ("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"), ("0", "0"), ("-2", "-2"), ("0.01", "0.01"),
    ("601", "601"), ("1e300", "1e+300"),
])
def test_refresh_out_of_range_is_refused(value: str, shown: str) -> None:
    result = awa("--refresh", value, "--dsn", OFF_PORT_DSN)
    assert one_line_error(result) == f"error: --refresh: must be between 0.1 and 600 seconds, got {shown}"


# --- the palette ---------------------------------------------------------------------------


async def palette_titles(app: Any, pilot: Any) -> list[str]:
    """What the command palette lists when opened with nothing typed."""
    from textual.command import CommandPalette

    await pilot.press("ctrl+p")
    await until(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
    await pilot.pause(0.3)  # discovery hits arrive asynchronously
    options = app.screen.query_one("CommandList")
    titles = [str(options.get_option_at_index(i).prompt).split("\n")[0] for i in range(options.option_count)]
    await pilot.press("escape")
    return titles


@pytest.mark.parametrize("read_only", [True, False])
async def test_screenshot_is_not_in_a_read_only_palette(dsn: str, read_only: bool) -> None:
    client = console_client(dsn, "op@test", read_only)
    try:
        app = create_app(ConsoleConfig(client=client, db_label="db"))
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: app.apply_times, what="the first poll")
            titles = await palette_titles(app, pilot)
            assert "Quit" in titles  # the palette did list the system commands
            assert ("Screenshot" in titles) is (not read_only)
    finally:
        client.close()


# --- --app ---------------------------------------------------------------------------------


def test_app_module_cannot_be_shadowed_by_a_local_file(tmp_path: Path, dsn: str) -> None:
    """A file in the current directory named like a standard module loses to the real one;
    the app module itself is still found there."""
    import tabnanny  # a standard module nothing else imports

    (tmp_path / "tabnanny.py").write_text("raise RuntimeError('the local tabnanny.py was imported')\n")
    (tmp_path / "localapp.py").write_text(
        "import tabnanny\n\n"
        "def setup(client):\n"
        "    raise RuntimeError('tabnanny from ' + tabnanny.__file__)\n"
    )
    result = awa("run", "--app", "localapp:setup", "--dsn", dsn, cwd=str(tmp_path))
    assert one_line_error(result) == (
        f"error: --app localapp:setup: setup failed: RuntimeError: tabnanny from {tabnanny.__file__}")


def test_app_help_says_the_current_directory_is_searched_last() -> None:
    for args in (("--help",), ("run", "--help")):
        flat = " ".join(awa(*args, env=cli_env(COLUMNS="400")).stdout.split())
        assert "The module is looked up on sys.path, then in the current directory (searched last, so a " \
               "local file cannot shadow a standard or installed module)." in flat, args


# --- SIGTERM -------------------------------------------------------------------------------

_ESCAPES = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[=>78]")


class PtyConsole:
    """`awa-tui` on a real pseudo-terminal (120x36), our own child: we can wait on it."""

    def __init__(self, args: list[str]) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
        env = cli_env(TERM="xterm-256color")
        self.proc = subprocess.Popen([*COMMAND, *args], stdin=slave, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True, close_fds=True)
        os.close(slave)
        self.master = master
        self._output = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: the console side is closed
                return
            if not data:
                return
            with self._lock:
                self._output += data

    def text(self) -> str:
        with self._lock:
            raw = self._output.decode("utf-8", errors="replace")
        return _ESCAPES.sub("", raw)

    def wait_text(self, text: str, timeout: float = 30) -> None:
        wait_for(lambda: text in self.text(), timeout=timeout, what=f"{text!r} on the terminal")

    def keys(self, data: bytes) -> None:
        os.write(self.master, data)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(10)
        os.close(self.master)


@pytest.fixture
def pty_console(dsn: str) -> Iterator[PtyConsole]:
    console = PtyConsole(["--lead", "--demo", "--dsn", dsn, "--operator", "sigterm@pty"])
    yield console
    console.close()


@pytest.mark.parametrize("state, keys, shown", [
    ("main screen", b"", None),
    ("confirm dialog", b"s", "Pause schedule?"),
    ("quit dialog", b"q", "Quit the console?"),
    ("help", b"?", "Keys"),
    ("command palette", b"\x10", "Search for commands"),  # ctrl+p
    ("filter input", b"/", "filter: owner:billing"),
])
def test_sigterm_ends_the_console_in_every_state(
    pty_console: PtyConsole, conn: Any, state: str, keys: bytes, shown: str | None
) -> None:
    pty_console.wait_text("LEADER")
    pty_console.wait_text("demo.heartbeat")
    if keys:
        before = len(pty_console.text())
        pty_console.keys(keys)
        wait_for(lambda: shown in pty_console.text()[before:], what=f"the {state}")
    pty_console.proc.send_signal(signal.SIGTERM)
    assert pty_console.proc.wait(timeout=15) == 0, state
    pty_console.wait_text("engine stopped (SIGTERM), leader lock released", timeout=5)
    held = conn.execute(
        "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())").fetchone()
    assert held["n"] == 0  # leadership released

