"""The key map is one table: docs/keys.md carries it verbatim, and `?` lists every key of
it (the audit log, dialogs, palette and mouse too)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from tui_helpers import until

from awa_tui.tui.keymap import ACTS, SCOPES, markdown
from awa_tui.tui.screens.audit import AuditScreen
from awa_tui.tui.screens.help import HelpScreen, help_table

DOC = Path(__file__).resolve().parents[2] / "docs" / "keys.md"


def rendered(renderable) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_docs_keys_md_carries_the_key_map_verbatim():
    text = DOC.read_text()
    start, end = "<!-- keymap:start -->\n", "<!-- keymap:end -->"
    assert start in text and end in text, "docs/keys.md lost its keymap markers"
    documented = text.split(start, 1)[1].split(end, 1)[0]
    assert documented == markdown(), "docs/keys.md is stale: paste `python -m awa_tui.tui.keymap` between the markers"


def test_the_doc_table_has_a_row_per_key():
    lines = markdown().splitlines()
    assert lines[:2] == ["| where | keys | does | name |", "|---|---|---|---|"]
    assert "| Everywhere | `1-6` | panels: schedules, owners, runtimes, plan, queues, jobs |  |" in lines
    assert "| Every list | `g, home` | first row | `table.first_row` |" in lines
    assert ("| Schedules panel | `s` | pause (optionally until a time, with a reason: tab in the dialog) or resume "
            "the selected schedule (not in read-only mode) | `schedules.toggle_pause` |") in lines
    # The mouse and the palette's own keys are Textual's: no name to move them by.
    assert "| Mouse | `click` | a row: select it; the selected row again: open it (as enter) |  |" in lines
    assert "| Command palette | `ctrl+p` | command palette: every action by name (noun: verb) |  |" in lines
    # One row per key, the six panel keys folded into `1-6`.
    assert len(lines) == 2 + len(ACTS) - 5


def test_every_scope_has_a_title_and_every_act_a_known_scope():
    titles = dict(SCOPES)
    assert {a.scope for a in ACTS} == set(titles)


async def test_help_over_the_audit_screen_lists_audit_palette_and_mouse_keys(console):
    app, pilot = console
    await pilot.press("l")
    await until(pilot, lambda: isinstance(app.screen, AuditScreen), what="audit log")
    await pilot.press("question_mark")
    await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help over the audit log")
    text = rendered(help_table(app.screen.allowed))
    for line in ("Audit log        /", "r              reload the audit log",
                 "Command palette  ctrl+p", "Mouse            click", "Every list       j, down",
                 "Plan panel       enter", "Dialogs          y"):
        assert line in text, line
    for act in ACTS:
        if act.scope != "app" or not act.action.startswith("show_panel"):
            assert act.help in text, act.help
