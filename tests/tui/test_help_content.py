"""The help screen carries what a bastion without docs/ needs: every list's filter fields
and flags (from the grammar itself), and what each HEALTH word means."""

from __future__ import annotations

import io

from rich.console import Console
from textual.widgets import Static
from tui_helpers import until

from awa_tui.filters import GRAMMARS
from awa_tui.tui.screens.help import HelpScreen, filters_table, health_table


def as_text(renderable) -> list[str]:
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text().splitlines()


async def test_help_lists_filter_fields_and_health_words(console):
    app, pilot = console
    await pilot.press("question_mark")
    await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
    titles = [str(s.render()) for s in app.screen.query(Static)]
    assert "Filters (/)" in titles and "\nHEALTH" in titles
    lines = as_text(filters_table())
    for panel, grammar in GRAMMARS.items():
        line = next(line for line in lines if line.startswith(panel + " "))
        assert all(f"{field}:" in line for field in grammar.fields), (panel, line)
        assert all(flag in line for flag in grammar.flags), (panel, line)
    words = [line.split("  ")[0].strip() for line in as_text(health_table())]
    assert words == ["ok", "LATE", "FAILING", "MISSED", "BROKEN", "paused", "retired", "finished", "-"]
