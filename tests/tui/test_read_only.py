"""--read-only: every mutation is gone from the footer, the help and the palette (removed,
not greyed), its keys do nothing, and the engine refuses it anyway."""

from __future__ import annotations

import pytest
from helpers import drained
from tui_helpers import ready, row_of, select, settled, until

from awa_tui.engine.client import Client
from awa_tui.engine.core.errors import ReadOnly
from awa_tui.tui.actions import ACTS
from awa_tui.tui.commands import palette_names
from awa_tui.tui.screens.confirm import ConfirmScreen
from awa_tui.tui.screens.detail import DetailScreen
from awa_tui.tui.screens.help import HelpScreen

MUTATION_LABELS = {a.label for a in ACTS if a.mutation}


def footer_actions(app) -> set[str]:
    """(action, label) of what the footer shows now: the screen's active bindings."""
    return {binding.description for _, binding, enabled, _ in app.screen.active_bindings.values() if binding.show}


async def test_footer_help_and_palette_have_no_mutation(console_factory):
    app = console_factory(read_only=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        for key in ("1", "2", "5"):
            await pilot.press(key)
            await settled(pilot, app)
            assert footer_actions(app) & MUTATION_LABELS == set(), key
        assert not [name for name in palette_names(app.palette_allowed)
                    if any(a.palette == name and a.mutation for a in ACTS)]
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        shown = [a for a in ACTS if app.screen.allowed(a)]
        assert shown and not [a for a in shown if a.mutation]
        assert app.freshness.read_only


async def test_writable_console_shows_the_mutations(console_factory):
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        assert {"pause/resume", "trigger"} <= footer_actions(app)
        # The control of the read-only test below: the same kind of key, in a writable console,
        # has its dialog open once the console is drained, even one that waits for a read first
        # (a resume previews what it would fire).
        select(app, "cleanup.tmp-files")
        await pilot.press("s")
        await drained(pilot, app)
        assert isinstance(app.screen, ConfirmScreen) and app.screen.heading == "Resume schedule?"


async def test_mutation_keys_do_nothing(console_factory, conn):
    app = console_factory(read_only=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        select(app, "metrics.rollup")
        await pilot.press("s", "t", "a", "ctrl+d", "u")
        await drained(pilot, app)
        assert not isinstance(app.screen, ConfirmScreen)
        select(app, "legacy.export")
        await pilot.press("u")
        await pilot.press("5", "s")
        await drained(pilot, app)
        assert not isinstance(app.screen, ConfirmScreen)
        await pilot.press("1", "enter")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen), what="detail (reading is allowed)")
        await pilot.press("s", "t")
        await drained(pilot, app)
        assert isinstance(app.screen, DetailScreen)
    assert row_of(conn, "metrics.rollup")["paused_at"] is None
    assert row_of(conn, "legacy.export")["retired_at"] is not None


def test_the_engine_refuses_mutations_of_a_read_only_client(seeded):
    client = Client(seeded, read_only=True)
    try:
        for call in (lambda: client.actions.pause("metrics.rollup"), lambda: client.actions.trigger("metrics.rollup"),
                     lambda: client.actions.retire("metrics.rollup"), lambda: client.actions.queue_pause("default")):
            with pytest.raises(ReadOnly):
                call()
    finally:
        client.close()
