"""Every key typed after `/` belongs to the filter, however fast it comes: a burst (a paste,
SSH lag) sent in one go never reaches the table's action keys. The control sends the same
burst to a console whose `/` is checked the old way (after the table already had the keys)
and shows that the burst does race there: dialogs open and the text is lost."""

from __future__ import annotations

from dataclasses import replace

from tui_helpers import burst, settled, table_keys, until

from awa_tui.tui.panels import schedules


def box(app, panel: str = "schedules"):
    return app.main.panel(panel).query_one("#filter")


async def test_a_burst_after_slash_is_all_filter_text(console):
    app, pilot = console
    burst(app, "/state:paused\r")
    await until(pilot, lambda: table_keys(app) == ["cleanup.tmp-files"], what="the paused filter")
    await settled(pilot, app)
    assert len(app.screen_stack) == 1  # no dialog opened
    assert box(app).value == "state:paused"
    assert app.focused is app.main.panel("schedules").table  # enter submitted the filter


async def test_slash_then_an_action_key_types_it(console):
    app, pilot = console
    burst(app, "/a")
    await until(pilot, lambda: box(app).value == "a", what="the typed a")
    await settled(pilot, app)
    assert len(app.screen_stack) == 1  # not "Transfer schedule?"
    assert app.focused is box(app)


async def test_a_slash_typed_in_the_filter_is_text(console):
    app, pilot = console
    burst(app, "/a/b")
    await until(pilot, lambda: box(app).value == "a/b", what=f"the typed text, not {box(app).value!r}")
    assert len(app.screen_stack) == 1


async def test_the_jobs_filter_takes_a_burst_too(console):
    app, pilot = console
    await pilot.press("6")
    await settled(pilot, app)
    bar = app.main.panel("jobs").query_one("FilterBar")
    burst(app, "/state:paused")  # its t is the jobs panel's retry key
    await until(pilot, lambda: bar.value == "state:paused", what="the typed text")
    assert len(app.screen_stack) == 1


async def test_the_audit_filter_takes_a_burst_too(console):
    app, pilot = console
    await pilot.press("l")
    await until(pilot, lambda: app.screen.query("FilterBar"), what="the audit log")
    burst(app, "/operator:carol\r")
    bar = app.screen.query_one("FilterBar")
    await until(pilot, lambda: bar.value == "operator:carol", what="the typed text")
    assert str(bar.where) == "operator:carol" and len(app.screen_stack) == 2  # its r (reload) was text


def old_take_keys(box) -> None:
    """The code before the fix: show the box, focus it once the queue drains."""
    box.display = True
    box.focus()


async def test_control_the_old_binding_loses_the_burst(console, monkeypatch):
    """Negative control: the old code (`/` a binding checked after the table had the keys,
    focus deferred) under the same burst: the action key opens its dialog, the text is lost."""
    app, pilot = console
    panel = app.main.panel("schedules")
    slash = panel._bindings.key_to_bindings["slash"]
    assert slash and all(b.priority for b in slash)
    monkeypatch.setitem(panel._bindings.key_to_bindings, "slash", [replace(b, priority=False) for b in slash])
    monkeypatch.setattr(schedules, "take_keys", old_take_keys)
    burst(app, "/a")
    await until(pilot, lambda: len(app.screen_stack) > 1 and app.screen.query("#dialog-title"), what="the stray dialog")
    assert "Transfer schedule?" in str(app.screen.query_one("#dialog-title").content)
    assert box(app).value == ""
