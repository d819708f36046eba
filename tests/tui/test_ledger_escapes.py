"""Strings from the database reach the ledger's screens as text (issue 13's screens and
the rule of awa_tui/printable.py): a job whose schedule name, kind, queue, error and
traceback hold control sequences (tests/security/terminal_payload.py, written by raw SQL)
shows them escaped on the jobs panel, the job detail, the schedules panel's result line
and the schedule detail's ledger and Why; no ESC, BEL or C1 byte is in what is drawn."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from tui_helpers import ready, select, until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "security"))
from terminal_payload import PAYLOAD, seed

from awa_tui.printable import printable
from awa_tui.tui.screens.detail import DetailScreen
from awa_tui.tui.screens.job_detail import JobDetailScreen

ESCAPED = r"\x1b[2J\x1b]0;PWNED\x07"


def drawn(renderable: Any) -> str:
    console = Console(width=400, file=io.StringIO(), record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def clean(text: str) -> str:
    assert "\x1b" not in text and "\x07" not in text and "\x7f" not in text
    assert [c for c in text if 0x80 <= ord(c) <= 0x9F] == [] and "\u202e" not in text
    return text


async def test_hostile_job_strings_are_drawn_as_text(console_factory: Any, conn: Any) -> None:
    s = seed(conn)
    conn.execute("UPDATE awa.jobs SET errors = %s WHERE id = 11",
                 (json.dumps([{"attempt": 1, "error": PAYLOAD, "traceback": f"frame\n{PAYLOAD}",
                               "runtime": PAYLOAD}]),))
    app = console_factory()
    async with app.run_test(size=(160, 45)) as pilot:
        await ready(pilot, app)
        select(app, printable(s.paused))  # rows are keyed by the shown name
        await pilot.pause()
        summary = clean(str(app.main.panel("schedules").query_one("#schedules-summary").content))
        assert "last result waiting" in summary
        await pilot.press("6")
        await until(pilot, lambda: "11" in app.main.panel("jobs").rows, what="the hostile job")
        select(app, "11", "jobs")
        await pilot.pause()
        cells = [clean(str(c)) for c in app.main.panel("jobs").table.get_row("11")]
        assert cells[3].startswith(ESCAPED)  # LAST ERROR: its one line, escaped
        assert ESCAPED in clean(str(app.main.panel("jobs").query_one("#jobs-summary").content))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen.data, what="job detail")
        body = clean(drawn(app.screen.query_one("#job-body").content))
        assert f"error: {ESCAPED}" in body and f"runtime {ESCAPED}" in body
        assert "frame\n" + ESCAPED in body  # the traceback keeps its lines, each escaped
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.ledger, what="its schedule")
        ledger = clean(drawn(app.screen.query_one("#detail-ledger").content))
        assert "Why" in ledger and ESCAPED in ledger  # the Why names the schedule, escaped
