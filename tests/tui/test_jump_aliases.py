"""`:` takes k9s-style short names and plurals besides the target names and their prefixes;
an unknown name keeps the one-line error."""

from __future__ import annotations

import pytest
from textual.widgets import Input, Static
from tui_helpers import until

from awa_tui.tui.screens.audit import AuditScreen
from awa_tui.tui.screens.jump import ALIASES, TARGETS, JumpScreen, resolve, target_list

EXPECTED = [
    ("sc", "schedules"), ("schedule", "schedules"), ("cron", "schedules"), ("crons", "schedules"),
    ("own", "owners"), ("owner", "owners"), ("rt", "runtimes"), ("runtime", "runtimes"), ("pl", "plan"),
    ("plans", "plan"), ("q", "queues"), ("queue", "queues"), ("job", "jobs"), ("cal", "calendars"),
    ("calendar", "calendars"), ("log", "audit"), ("logs", "audit"),
]


def test_the_aliases_are_these():
    assert list(ALIASES.items()) == EXPECTED


@pytest.mark.parametrize("alias,target", EXPECTED)
def test_each_alias_resolves_whole_with_or_without_colon_any_case(alias: str, target: str) -> None:
    assert resolve(alias) == target
    assert resolve(f":{alias.upper()} ") == target


def test_names_prefixes_and_numbers_still_resolve_and_the_rest_is_none():
    assert [resolve(t) for t in TARGETS] == list(TARGETS)
    assert [resolve(p) for p in ("s", "o", "r", "p", "qu", "j", "c", "a", "run", "aud")] == [
        "schedules", "owners", "runtimes", "plan", "queues", "jobs", "calendars", "audit", "runtimes", "audit"]
    assert resolve("3") == "runtimes" and resolve("7") is None and resolve("0") is None
    for unknown in ("x", "", ":", "cr", "logx", "schedulesx", "rts", "lo"):
        assert resolve(unknown) is None, unknown


def test_no_name_is_ambiguous_every_initial_names_one_target():
    """A prefix of two targets would name none (the unknown name's error); each target has
    its own initial, and no alias is a prefix of another target, so none is."""
    assert len({t[0] for t in TARGETS}) == len(TARGETS)
    assert [a for a, t in ALIASES.items() if any(o != t and o.startswith(a) for o in TARGETS)] == []


def test_the_list_names_every_alias_beside_its_target():
    assert target_list() == (
        "schedules (sc, schedule, cron, crons)  owners (own, owner)  runtimes (rt, runtime)  plan (pl, plans)  "
        "queues (q, queue)  jobs (job)  calendars (cal, calendar)  audit (log, logs)")


async def test_colon_with_an_alias_jumps_and_an_unknown_one_says_so_in_one_line(console):
    app, pilot = console
    await pilot.press("colon")
    await until(pilot, lambda: isinstance(app.screen, JumpScreen), what="jump prompt")
    assert str(app.screen.query_one("#jump-targets", Static).content) == "Jump to: " + target_list()
    await pilot.press(*"rt", "enter")
    await until(pilot, lambda: app.active_panel == "runtimes", what="runtimes")
    await pilot.press("colon")
    await until(pilot, lambda: isinstance(app.screen, JumpScreen), what="jump prompt")
    await pilot.press(*"nope", "enter")
    await until(pilot, lambda: str(app.screen.query_one("#jump-error", Static).content) == "no panel matches 'nope'",
                what="the error")
    assert isinstance(app.screen, JumpScreen)
    app.screen.query_one(Input).value = ""
    await pilot.press(*"log", "enter")
    await until(pilot, lambda: isinstance(app.screen, AuditScreen), what="the audit log")
