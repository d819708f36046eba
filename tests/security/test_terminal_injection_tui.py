"""Terminal escape injection through the console: the real `awa-tui` in a real terminal
(tmux), over rows whose every displayed field holds control bytes (raw SQL). Every byte
the app wrote to the terminal is recorded (pipe-pane); the panels, the row summary, the
confirm dialog, a toast, the detail and the audit screens are opened; none of the data's
sequences reaches the terminal, the window title stays, and the escapes show as text."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import wait_for
from terminal_payload import SHOWN, seed

AWA = str(Path(sys.executable).with_name("awa-tui"))
TMUX = "/usr/bin/tmux"


class Terminal:
    """One tmux session on a private server socket, 160x45, its output recorded."""

    def __init__(self, record: Path) -> None:
        self.socket = f"awa-sec-{uuid.uuid4().hex[:8]}"
        self.session = "console"
        self.record = record

    def tmux(self, *args: str) -> str:
        out = subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True, timeout=10)
        assert out.returncode == 0, (args, out.stderr)
        return out.stdout

    def start(self, command: list[str]) -> None:
        # The shell waits for a line (echo off) so that recording starts before the app
        # writes its first byte. COLUMNS/LINES (set under pytest) would override the pane size.
        script = f"stty -echo; read _; unset COLUMNS LINES; exec {shlex.join(command)}"
        self.tmux("new-session", "-d", "-s", self.session, "-x", "160", "-y", "45", "sh", "-c", script)
        self.tmux("set-option", "-t", self.session, "remain-on-exit", "on")
        self.tmux("resize-window", "-t", self.session, "-x", "160", "-y", "45")  # detached: -x/-y alone may not hold
        self.tmux("pipe-pane", "-O", "-t", self.session, f"cat > {shlex.quote(str(self.record))}")
        self.initial_title = self.title()  # tmux's own (the host name), before the app runs
        self.keys("Enter")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.session, *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.session)

    def wait_screen(self, *texts: str, timeout: float = 30.0) -> str:
        try:
            return wait_for(lambda: all(t in (s := self.screen()) for t in texts) and s, timeout=timeout,
                            what=f"{texts!r} on screen")
        except AssertionError as exc:  # say what was on screen instead
            raise AssertionError(f"{exc}; the screen:\n{self.screen()}") from exc

    def title(self) -> str:
        return self.tmux("display-message", "-p", "-t", self.session, "#{pane_title}")

    def dead(self) -> bool:
        return self.tmux("display-message", "-p", "-t", self.session, "#{pane_dead}").strip() == "1"

    def kill(self) -> None:
        subprocess.run([TMUX, "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(tmp_path / "pane.bytes")
    yield term
    term.kill()


def no_forged_line(screen: str) -> str:
    assert [line for line in screen.splitlines() if line.lstrip(" │┃|▏▕").startswith("FORGED")] == []
    return screen


def test_console_shows_hostile_database_strings_as_text_and_obeys_none(terminal: Terminal, dsn: str,
                                                                       conn: Any) -> None:
    s = seed(conn)
    tag = s.paused[1:7]
    terminal.start([AWA, "--dsn", dsn, "--operator", "sec@tmux"])
    seen: list[str] = []

    def look(*texts: str) -> str:
        seen.append(no_forged_line(terminal.wait_screen(*texts)))
        return seen[-1]

    # Narrow cells cut values with an ellipsis: the checks look at what fits, and at the
    # summary line, the dialog, the detail and the audit screen where values are whole.
    look(f"p{tag}\\x1b[2J", f"r{tag}\\x1b[2J", f"by{tag}\\x1b[2J\\x1b]0;PWNED\\x07\\x1b]52;c")
    terminal.keys("s")  # the row under the cursor (the paused one): the resume dialog
    dialog = look("Resume schedule?", "Clears the pause", f"by{tag}\\x1b[2J")
    assert "[bold]b[/bold]" in dialog  # markup in a name is text
    terminal.keys("n")  # cancelled: a toast naming the target
    toast = look("cancelled: resume schedule")
    assert "[bold]b[/bold]" in toast.split("cancelled: resume schedule", 1)[1]
    terminal.keys("Enter")  # details
    detail = look("Definition", f"k{tag}\\x1b[2J", f"o{tag}\\x1b[2J", f"t{tag}\\x1b[2J", f"q{tag}\\x1b[2J",
                  f"op{tag}\\x1b[2J", f"act{tag}\\x1b[2J", "fires continue, dispatch waits")
    assert "[bold]b[/bold]" in detail and ":fire:" in detail  # markup and emoji codes are text
    terminal.keys("Escape")
    look("Schedules ")
    terminal.keys("l")
    look("Audit log", f"op{tag}\\x1b[2J", f"act{tag}", f"p{tag}\\x1b[2J")
    terminal.keys("Escape")
    look("Schedules ")
    terminal.keys("3")
    look("Runtimes ", f"host{tag}\\")
    terminal.keys("5")
    look("Queues ", f"q{tag}\\x1b", f"qb{tag}\\x1b[2J\\x1b]0;PWNED")
    terminal.keys("2")
    look("Owners ", f"o{tag}\\x1b")
    terminal.keys("4")
    look("Plan ", f"o{tag}\\x1b")
    assert terminal.title() == terminal.initial_title  # no OSC 0 reached the terminal
    terminal.keys("q")
    wait_for(terminal.dead, what="the console to exit")

    # Textual's own OSC 22 (pointer shape) ends with a BEL: set aside, any other BEL is data.
    raw = re.sub(rb"\x1b\]22;[a-z-]+\x07", b"", terminal.record.read_bytes())
    # The data's own sequences, byte for byte, never reached the terminal (the app's own
    # escape sequences do, of course: ESC alone proves nothing here; Textual writes no
    # other OSC, no ESC [2J and no 16-colour SGR).
    for sequence in (b"\x1b]0;PWNED", b"\x1b]52;c;cHduZWQ=", b"\x1b]", b"\x1b[2J", b"\x1b[31m", b"\x07", b"\x7f",
                     "\u202e".encode(), "\x9b".encode()):
        at = raw.find(sequence)
        assert at < 0, (sequence, raw[max(0, at - 80):at + 80])
    text = raw.decode("utf-8")
    assert [c for c in text if 0x80 <= ord(c) <= 0x9F] == []
    assert SHOWN[:40] in "\n".join(seen)  # drawn as text instead
