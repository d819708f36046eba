"""Issue 37 in the console: the schedule form (n new, e edit on a schedule made at run time)
checks as the operator types and previews the next fires, one confirmation writes it
(audited), D deletes one; a code-declared schedule is changed by an override; bad input
is said under its field and writes nothing. Real database, Textual pilot, a snapshot.

The clock is the seed's (NOW, Saturday 2025-03-08 12:00:30Z). The expected fires are
worked out by hand from the calendar: Paris is UTC+1 until the last Sunday of March
(2025-03-30, when 02:00-03:00 local does not exist), UTC+2 after."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest
from textual.widgets import Input, Static
from tui_helpers import audit_actions, burst, notes, ready, row_of, select, settled, until
from tui_seed import OPERATOR

from awa_tui import Client
from awa_tui.tui.panels.schedules import COLUMNS, cells
from awa_tui.tui.screens.confirm import ConfirmScreen
from awa_tui.tui.screens.detail import DetailScreen
from awa_tui.tui.screens.override import OverrideScreen
from awa_tui.tui.screens.schedule_form import ScheduleFormScreen
from awa_tui.tui.widgets.suggest import ListItemSuggester

NAME = "reports.tenant-42"
# Mondays 08:00 Paris from NOW: three in winter time (07:00Z), then two in summer time (06:00Z).
MONDAYS_UTC = ["2025-03-10 07:00:00Z", "2025-03-17 07:00:00Z", "2025-03-24 07:00:00Z", "2025-03-31 06:00:00Z",
               "2025-04-07 06:00:00Z"]


def _fill(form: ScheduleFormScreen, **values: str) -> None:
    for key, value in values.items():
        form.query_one(f"#form-{key}", Input).value = value


def _text(form: ScheduleFormScreen, selector: str) -> str:
    widget = form.query_one(selector, Static)
    return str(widget.render()) if widget.display else ""


def _preview(form: ScheduleFormScreen) -> str:
    from test_navigation import rendered

    return rendered(form.query_one("#form-preview", Static).content)


async def _checked(pilot: Any, form: ScheduleFormScreen) -> None:
    """The check of what is typed now has answered (passed or not)."""
    await until(pilot, lambda: form.timer is None and form.checked == tuple(form.typed().items()),
                what="the form's check")


async def _new_form(pilot: Any, app: Any) -> ScheduleFormScreen:
    await pilot.press("n")
    return await until(pilot, lambda: isinstance(app.screen, ScheduleFormScreen) and app.screen, what="the form")


def _count(conn: Any, sql: str) -> int:
    return conn.execute(sql).fetchone()["n"]


def _made(seeded: str, name: str = NAME) -> None:
    with Client(seeded, operator="bob@ops") as client:
        client.create_schedule(name, "0 8 * * 1", "report", {"tenant": 42}, timezone="Europe/Paris", owner="web")


async def test_create_through_the_form_then_edit_then_delete(console: Any, conn: Any) -> None:
    app, pilot = console
    form = await _new_form(pilot, app)
    assert form.query_one("#form-name", Input).has_focus
    _fill(form, name=NAME, cron="0 8 * * 1", timezone="Europe/Paris", kind="report", args='{"tenant": 42}')
    await _checked(pilot, form)
    assert form.passed
    preview = _preview(form)
    assert [line.split()[0] + " " + line.split()[1] for line in preview.splitlines()[2:]] == MONDAYS_UTC
    assert preview.splitlines()[0] == "Next fires (Mondays at 08:00)"
    await pilot.press("enter")
    dialog = await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, what="confirm")
    assert dialog.heading == "Create schedule?"
    assert dict(dialog.details)["Consequence"] == (
        'Makes it at run time, owned by app: cron 0 8 * * 1, kind report, zone Europe/Paris, queue default, '
        'args {"tenant": 42}, priority 2, max attempts 25, missed fires coalesce, overlap allow. '
        "Code sync never changes it; e edits it, D deletes it.")
    await pilot.press("y")
    await until(pilot, lambda: row_of(conn, NAME) is not None, what="the row")
    row = row_of(conn, NAME)
    assert (row["origin"], row["owner"], row["cron_expr"], row["timezone"], row["kind"], row["args"], row["queue"]) \
        == ("api", "app", "0 8 * * 1", "Europe/Paris", "report", {"tenant": 42}, "default")
    assert audit_actions(conn)[-1] == (OPERATOR, "create", NAME)
    await settled(pilot, app)
    panel = app.main.panel("schedules")
    assert NAME in panel.rows
    select(app, NAME)
    await settled(pilot, app)
    assert " · made at run time" in str(panel.query_one("#schedules-summary", Static).render())
    made = [c.key for c in COLUMNS].index("made")
    assert (cells(panel.rows[NAME], panel.clock)[made].plain,
            cells(panel.rows["metrics.rollup"], panel.clock)[made].plain) == ("run time", "code")

    # e: the same form, filled with what is stored; only the changed values are written.
    await pilot.press("e")
    form = await until(pilot, lambda: isinstance(app.screen, ScheduleFormScreen) and app.screen.stored is not None
                       and app.screen, what="the edit form")
    assert form.typed() == {"cron": "0 8 * * 1", "timezone": "Europe/Paris", "kind": "report", "queue": "default",
                            "args": '{"tenant": 42}', "priority": "2", "max_attempts": "25",
                            "missed_fire_policy": "coalesce", "overlap": "allow", "tags": "", "start_at": "",
                            "end_at": "", "max_fires": "", "jitter": "", "exclude": "", "calendar": ""}
    _fill(form, cron="30 9 * * *", queue="urgent", args='{ "tenant" : 42 }')  # the same args, spaced
    await _checked(pilot, form)
    assert form.passed
    assert _preview(form).splitlines()[2].split()[:2] == ["2025-03-09", "08:30:00Z"]  # Sunday 09:30 Paris
    await pilot.press("enter")
    dialog = await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, what="confirm edit")
    assert dialog.heading == "Edit schedule?"
    assert dict(dialog.details)["Consequence"] == (
        "Sets cron 30 9 * * *, queue urgent. Every other setting stays as it is; code sync never changes it.")
    await pilot.press("y")
    await until(pilot, lambda: row_of(conn, NAME)["queue"] == "urgent", what="the edit")
    row = row_of(conn, NAME)
    assert (row["cron_expr"], row["timezone"], row["queue"], row["args"], row["overridden"]) == (
        "30 9 * * *", "Europe/Paris", "urgent", {"tenant": 42}, None)
    assert audit_actions(conn)[-1] == (OPERATOR, "redefine", NAME)  # the database's word for a new definition

    # D: type the name; the row goes, its audit entry stays.
    await settled(pilot, app)
    select(app, NAME)
    await pilot.press("D")
    dialog = await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, what="confirm delete")
    assert dialog.heading == "Delete schedule?"
    assert dialog.type_to_confirm == NAME
    await pilot.press(*NAME, "enter")
    await until(pilot, lambda: row_of(conn, NAME) is None, what="the delete")
    assert audit_actions(conn)[-1] == (OPERATOR, "remove", NAME)  # the database's word for a row deleted
    await settled(pilot, app)
    assert NAME not in app.main.panel("schedules").rows


async def test_bad_input_is_said_under_its_field_and_writes_nothing(console: Any, conn: Any) -> None:
    app, pilot = console
    before = (_count(conn, "SELECT count(*) AS n FROM awa.cron_jobs"),
              _count(conn, "SELECT count(*) AS n FROM awa.audit_log"))
    form = await _new_form(pilot, app)
    _fill(form, name=NAME, cron="61 * * * *", kind="report")
    await _checked(pilot, form)
    assert not form.passed
    assert _text(form, "#form-cron-error") == " invalid expression '61 * * * *': 61 is out of range"
    assert _text(form, "#form-name-error") == ""
    await pilot.press("enter")
    await _checked(pilot, form)
    assert app.screen is form  # still open: nothing was asked, nothing sent
    assert _text(form, "#dialog-error") == "fix the values marked above first (esc: cancel)"

    _fill(form, name="metrics.rollup", cron="*/5 * * * *")  # a name code declares
    await _checked(pilot, form)
    assert _text(form, "#form-cron-error") == ""
    assert _text(form, "#form-name-error") == " 'metrics.rollup' is taken by a schedule declared in code"
    _fill(form, name=NAME, args="{nope", priority="high")
    await _checked(pilot, form)
    assert _text(form, "#form-args-error") == (
        " not valid JSON (Expecting property name enclosed in double quotes): '{nope'")
    assert _text(form, "#form-priority-error") == " a whole number, got 'high'"
    _fill(form, args="", priority="2", timezone="Mars/Olympus")
    await pilot.press("enter")  # enter before the check: it checks, and stays on a refusal
    await _checked(pilot, form)
    assert _text(form, "#form-timezone-error") == " unknown time zone 'Mars/Olympus'"
    assert app.screen is form
    await pilot.press("escape")
    await until(pilot, lambda: not isinstance(app.screen, ScheduleFormScreen), what="the form closed")
    assert (_count(conn, "SELECT count(*) AS n FROM awa.cron_jobs"),
            _count(conn, "SELECT count(*) AS n FROM awa.audit_log")) == before


async def test_a_new_schedule_needs_a_name_an_expression_and_a_kind(console: Any, conn: Any) -> None:
    app, pilot = console
    form = await _new_form(pilot, app)
    await pilot.press("enter")
    await until(pilot, lambda: _text(form, "#dialog-error"), what="the refusal")
    assert _text(form, "#dialog-error") == "name, cron, kind: required to create a schedule"
    assert [_text(form, f"#form-{k}-error") for k in ("name", "cron", "kind")] == [" required"] * 3
    assert app.screen is form
    # An emptied field of a new schedule has its default (its placeholder says which).
    _fill(form, name=NAME, cron="0 8 * * 1", kind="report", timezone="", queue="")
    await _checked(pilot, form)
    assert form.passed
    assert _text(form, "#form-name-error") == ""
    assert "LOCAL (UTC)" in _preview(form).splitlines()[1]
    await pilot.press("enter")
    dialog = await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, what="confirm")
    assert dict(dialog.details)["Consequence"].startswith(
        "Makes it at run time, owned by app: cron 0 8 * * 1, kind report, priority 2, max attempts 25, ")
    await pilot.press("n")
    assert row_of(conn, NAME) is None


async def test_code_declared_schedules_are_overridden_and_cannot_be_deleted(console: Any, conn: Any) -> None:
    app, pilot = console
    select(app, "metrics.rollup")
    await pilot.press("D")
    await until(pilot, lambda: notes(app), what="the notice")
    assert notes(app) == ["metrics.rollup is declared in code (its next deploy would bring it back): retire it "
                          "(ctrl+d) instead"]
    await pilot.press("e")
    form = await until(pilot, lambda: isinstance(app.screen, OverrideScreen) and app.screen, what="override form")
    from test_navigation import rendered

    facts = rendered(form.query_one("#dialog-facts", Static).content)
    assert "Declared in code: changed by an override (this form), not the schedule form" in " ".join(facts.split())


async def test_the_detail_says_which_kind(console_factory: Any, seeded: str) -> None:
    from test_navigation import rendered

    _made(seeded)
    app = console_factory()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot, app)
        for name, words in ((NAME, "made at run time (e edits it, D deletes it; code sync never touches it)"),
                            ("metrics.rollup", "made in code (e overrides it; a deploy changes it)")):
            select(app, name)
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.data is not None,
                        what="the detail")
            body = rendered(app.screen.query_one("#detail-body", Static).content)
            assert words in " ".join(body.split())
            await pilot.press("escape")
            await until(pilot, lambda: not isinstance(app.screen, DetailScreen), what="back")


def test_schedule_form_snapshot(snap_compare: Any, console_factory: Any, seeded: str) -> None:
    async def run_before(pilot: Any) -> None:
        app = pilot.app
        await ready(pilot, app)
        form = await _new_form(pilot, app)
        # Sundays 02:30 Paris: the fourth (2025-03-30) falls in the spring-forward gap.
        _fill(form, name=NAME, cron="30 2 * * 0", timezone="Europe/Paris", kind="report", args='{"tenant": 42}',
              tags="reports, tenant")
        await _checked(pilot, form)
        for box in form.query(Input):
            box.cursor_blink = False  # the cursor shown steadily: the picture does not depend on the instant
        app.clear_notifications()
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=(100, 40), run_before=run_before)


async def test_keys_typed_right_after_tab_go_to_the_next_field(console: Any) -> None:
    """Tab then more keys at once (a paste, a fast typist over SSH): every key after a tab
    is the next field's, none lands in the field tab was leaving. Pilot.press waits until
    the app is idle after each key, which hides the race (the same keys through it first);
    `burst` queues them all before the first is handled, as a terminal delivers them."""
    app, pilot = console
    form = await _new_form(pilot, app)
    fields = ("name", "cron", "timezone", "kind")

    def values() -> tuple[str, ...]:
        return tuple(form.query_one(f"#form-{key}", Input).value for key in fields)

    await pilot.press("a", "b", "tab", "0", "space", "8", "tab", "r", "e", "p", "shift+tab", "shift+tab", "c")
    assert values() == ("c", "0 8", "rep", "")  # a field tabbed into has its text selected: typing replaces it
    await pilot.press("escape")
    form = await _new_form(pilot, app)
    burst(app, "ab\t0 8\trep\tx")
    typed = ("ab", "0 8", "rep", "x")
    # Each field's keys are handled in its own queue: wait for them all, or for the last key
    # in the first field (the old tab: every key of the burst there, the others untouched).
    await until(pilot, lambda: values() == typed or "x" in values()[0], what="the burst")
    assert values() == typed


def _holidays(seeded: str) -> None:
    from datetime import date

    with Client(seeded, operator="bob@ops") as client:
        client.actions.set_calendar("holidays", [(date(2025, 3, 31), date(2025, 3, 31))])


async def test_start_end_max_fires_jitter_exclusions_and_calendars(console: Any, conn: Any, seeded: str) -> None:
    """The settings `cron create` takes beyond the common ones, read as the CLI reads them,
    shown where they change the next fires, written as given; `e` fills them, an emptied
    one is taken away (`cron edit --clear`)."""
    _holidays(seeded)
    app, pilot = console
    form = await _new_form(pilot, app)
    _fill(form, name=NAME, cron="0 8 * * 1", timezone="Europe/Paris", kind="report",
          start_at="2025-03-11T00:00:00Z", end_at="2025-04-30T00:00:00+02:00", max_fires="10", jitter="5m",
          exclude="2025-03-24", calendar="holidays")
    await _checked(pilot, form)
    assert form.passed
    lines = _preview(form).splitlines()
    assert lines[1] == ("None before 2025-03-11 00:00:00Z; none after 2025-04-29 22:00:00Z; at most 10 fires; "
                        "each job waits up to 5m after its fire (jitter).")
    # From Tuesday 11th: the 24th excluded by date, the 31st by the calendar; none after April 29th.
    assert [" ".join(line.split()[:2]) for line in lines[3:]] == [
        "2025-03-17 07:00:00Z", "2025-03-24 07:00:00Z", "2025-03-31 06:00:00Z", "2025-04-07 06:00:00Z",
        "2025-04-14 06:00:00Z", "2025-04-21 06:00:00Z", "2025-04-28 06:00:00Z"]
    assert [line.split("excluded: ")[1].strip() for line in lines[3:] if "excluded: " in line] == [
        "2025-03-24", "calendar holidays"]
    await pilot.press("enter")
    dialog = await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, what="confirm")
    assert dict(dialog.details)["Consequence"] == (
        "Makes it at run time, owned by app: cron 0 8 * * 1, kind report, zone Europe/Paris, queue default, "
        "priority 2, max attempts 25, missed fires coalesce, overlap allow, start at 2025-03-11 00:00:00Z, "
        "end at 2025-04-29 22:00:00Z, max fires 10, jitter 5m, excluded days 2025-03-24, calendars holidays. "
        "Code sync never changes it; e edits it, D deletes it.")
    await pilot.press("y")
    await until(pilot, lambda: row_of(conn, NAME) is not None, what="the row")
    row = row_of(conn, NAME)
    assert (row["start_at"].isoformat(), row["end_at"].isoformat(), row["max_fires"], row["jitter_ms"],
            row["exclude_dates"], row["exclude_calendars"]) == (
        "2025-03-11T00:00:00+00:00", "2025-04-29T22:00:00+00:00", 10, 300_000, [["2025-03-24", "2025-03-24"]],
        ["holidays"])
    assert audit_actions(conn)[-1] == (OPERATOR, "create", NAME)

    await settled(pilot, app)
    select(app, NAME)
    await pilot.press("e")
    form = await until(pilot, lambda: isinstance(app.screen, ScheduleFormScreen) and app.screen.stored is not None
                       and app.screen, what="the edit form")
    assert {key: form.typed()[key] for key in ("start_at", "end_at", "max_fires", "jitter", "exclude", "calendar")} \
        == {"start_at": "2025-03-11 00:00:00Z", "end_at": "2025-04-29 22:00:00Z", "max_fires": "10",
            "jitter": "5m", "exclude": "2025-03-24", "calendar": "holidays"}
    _fill(form, start_at="", calendar="", exclude="2025-03-17..2025-03-24, 2025-04-14", jitter="1h30m")
    await _checked(pilot, form)
    assert form.passed
    lines = _preview(form).splitlines()
    assert lines[1] == ("None after 2025-04-29 22:00:00Z; at most 10 fires; "
                        "each job waits up to 1h30m after its fire (jitter).")
    assert [" ".join(line.split()[:2]) + (" x" if "excluded" in line else "") for line in lines[3:]] == [
        "2025-03-10 07:00:00Z", "2025-03-17 07:00:00Z x", "2025-03-24 07:00:00Z x", "2025-03-31 06:00:00Z",
        "2025-04-07 06:00:00Z", "2025-04-14 06:00:00Z x", "2025-04-21 06:00:00Z", "2025-04-28 06:00:00Z"]
    await pilot.press("enter")
    dialog = await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, what="confirm edit")
    assert dict(dialog.details)["Consequence"] == (
        "Sets jitter 1h30m, excluded days 2025-03-17..2025-03-24, 2025-04-14, no start at, no calendars. "
        "Every other setting stays as it is; code sync never changes it.")
    await pilot.press("y")
    await until(pilot, lambda: row_of(conn, NAME)["start_at"] is None, what="the edit")
    row = row_of(conn, NAME)
    assert (row["start_at"], row["end_at"].isoformat(), row["max_fires"], row["jitter_ms"], row["exclude_dates"],
            row["exclude_calendars"]) == (
        None, "2025-04-29T22:00:00+00:00", 10, 5_400_000, [["2025-03-17", "2025-03-24"], ["2025-04-14", "2025-04-14"]],
        None)
    assert audit_actions(conn)[-1] == (OPERATOR, "redefine", NAME)


async def test_the_calendars_field_suggests_the_calendars_names(console: Any, seeded: str) -> None:
    """Typed letters complete to a calendar's name (right accepts it); after a comma the
    next name, never one already listed."""
    _holidays(seeded)
    with Client(seeded, operator="bob@ops") as client:
        client.actions.set_calendar("holiday-closures", [(date(2025, 12, 24), date(2025, 12, 26))])
    app, pilot = console
    form = await _new_form(pilot, app)
    box = form.query_one("#form-calendar", Input)
    suggester = box.suggester
    assert isinstance(suggester, ListItemSuggester)
    await until(pilot, lambda: suggester.names == ["holiday-closures", "holidays"], what="the names")
    box.focus()
    await pilot.press("h", "o", "l", "i", "d", "a", "y", "s")
    await pilot.press("right")
    assert box.value == "holidays"  # already whole: nothing to complete
    await pilot.press("comma", "space", "h", "o")
    # The suggestion is drawn after the typed text (dimmed) once computed.
    await until(pilot, lambda: "holidays, holiday-closures" in box.render_line(0).text, what="the suggestion")
    await pilot.press("right")
    assert box.value == "holidays, holiday-closures"


async def test_the_suggester_completes_only_the_last_item() -> None:
    names = ListItemSuggester(["holidays", "holiday-closures", "ops"])
    assert [await names.get_suggestion(v) for v in ("hol", "holiday-closures, hol", "ops,", "ops, ", "x", "ops")] \
        == ["holiday-closures", "holiday-closures, holidays", None, None, None, None]


async def test_a_jitter_in_milliseconds_reads_back_as_itself(console_factory: Any, conn: Any, seeded: str) -> None:
    """The API stores jitter in milliseconds; the edit form shows 1500ms and reads it back
    unchanged, so editing another field leaves it alone, and a new one in ms is taken."""
    with Client(seeded, operator="bob@ops") as client:
        client.create_schedule(NAME, "0 8 * * 1", "report", owner="web", jitter=timedelta(milliseconds=1500))
    app = console_factory()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot, app)
        select(app, NAME)
        await pilot.press("e")
        form = await until(pilot, lambda: isinstance(app.screen, ScheduleFormScreen)
                           and app.screen.stored is not None and app.screen, what="the edit form")
        assert form.typed()["jitter"] == "1500ms"
        _fill(form, queue="urgent")
        await _checked(pilot, form)
        assert form.passed
        await pilot.press("enter")
        dialog = await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, what="confirm")
        assert dict(dialog.details)["Consequence"] == (
            "Sets queue urgent. Every other setting stays as it is; code sync never changes it.")
        await pilot.press("y")
        await until(pilot, lambda: row_of(conn, NAME)["queue"] == "urgent", what="the edit")
        assert row_of(conn, NAME)["jitter_ms"] == 1500

        await settled(pilot, app)
        select(app, NAME)
        await pilot.press("e")
        form = await until(pilot, lambda: isinstance(app.screen, ScheduleFormScreen)
                           and app.screen.stored is not None and app.screen, what="the edit form again")
        _fill(form, jitter="250ms")
        await _checked(pilot, form)
        assert form.passed
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm again")
        await pilot.press("y")
        await until(pilot, lambda: row_of(conn, NAME)["jitter_ms"] == 250, what="the new jitter")


async def test_the_new_fields_refuse_under_themselves(console: Any, conn: Any) -> None:
    app, pilot = console
    before = _count(conn, "SELECT count(*) AS n FROM awa.cron_jobs")
    form = await _new_form(pilot, app)
    _fill(form, name=NAME, cron="0 8 * * 1", kind="report", start_at="next tuesday", jitter="5 minutes",
          exclude="2025-02-30", max_fires="many")
    await _checked(pilot, form)
    assert not form.passed
    assert [_text(form, f"#form-{key}-error") for key in ("start_at", "jitter", "exclude", "max_fires")] == [
        " expected an ISO-8601 instant such as 2025-03-08T00:00:00Z, got 'next tuesday'",
        " expected a duration such as 90s, 15m, 1h30m, 14d, got '5 minutes'",
        " expected a date (2026-12-25) or a range (2026-12-20..2027-01-03), got '2025-02-30'",
        " a whole number, got 'many'"]
    # What the engine refuses, as `cron create` would: said under the field it is about.
    _fill(form, start_at="2025-05-01T00:00:00Z", end_at="2025-04-01T00:00:00Z", jitter="", exclude="", max_fires="")
    await _checked(pilot, form)
    assert _text(form, "#form-start_at-error") == (
        " 2025-05-01T00:00:00+00:00 is after end_at 2025-04-01T00:00:00+00:00")
    _fill(form, start_at="", end_at="", max_fires="0")
    await _checked(pilot, form)
    assert _text(form, "#form-max_fires-error").startswith(" must be an integer 1..")
    _fill(form, max_fires="", calendar="no-such-days")
    await _checked(pilot, form)
    assert _text(form, "#form-calendar-error") == (
        " schedule 'reports.tenant-42' names unknown calendar 'no-such-days'; create it first (awa-tui calendar set)")
    assert not form.passed
    assert _count(conn, "SELECT count(*) AS n FROM awa.cron_jobs") == before


@pytest.mark.console(size=(80, 24))
async def test_the_form_is_usable_on_80x24(console: Any, conn: Any) -> None:
    """Every field can be reached by tab on a small terminal: the form scrolls to it."""
    app, pilot = console
    form = await _new_form(pilot, app)
    await pilot.press("r", "tab", "*", "space", "*", "space", "*", "space", "*", "space", "*", "tab", "tab", "k")
    for _ in range(13):
        await pilot.press("tab")
    box = form.query_one("#form-calendar", Input)
    assert box.has_focus
    await until(pilot, lambda: box.region.height == 1 and form.query_one("#form-body").region.contains_region(
        box.region), what="the calendars field in view")
    await pilot.press("tab", "o", "p", "s")
    assert form.query_one("#form-owner", Input).value == "ops"


def test_schedule_form_snapshot_80x24(snap_compare: Any, console_factory: Any, seeded: str) -> None:
    """The smallest terminal: the fields scroll; the new settings filled, the focus on the
    last of them (scrolled into view), the buttons below."""
    _holidays(seeded)

    async def run_before(pilot: Any) -> None:
        app = pilot.app
        await ready(pilot, app)
        form = await _new_form(pilot, app)
        _fill(form, name=NAME, cron="0 8 * * 1", timezone="Europe/Paris", kind="report",
              start_at="2025-03-11T00:00:00Z", end_at="2025-04-30T00:00:00Z", max_fires="10", jitter="5m",
              exclude="2025-03-24", calendar="holidays")
        # Focused (and scrolled to) before the check answers: the preview then grows below
        # the view and moves nothing, however late it lands on a loaded machine.
        form.query_one("#form-calendar", Input).focus()
        await _checked(pilot, form)
        for box in form.query(Input):
            box.cursor_blink = False
        app.clear_notifications()
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=(80, 24), run_before=run_before)
