"""The user's config file (awa-tui/config.toml in the XDG config directory): refresh,
default_panel, extra `:` aliases and moved keys; a file that cannot be used is one line and
ignored."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_keymap import rendered
from textual.widgets import Static
from tui_helpers import notes, ready, select, settled, table_keys, until

from awa_tui.tui.config import UserConfig, read_user_config, user_config_path, user_settings
from awa_tui.tui.panel_defaults import PanelDefaults
from awa_tui.tui.screens.confirm import ConfirmScreen
from awa_tui.tui.screens.help import HelpScreen, help_table
from awa_tui.tui.screens.jump import JumpScreen


def test_the_path_is_xdg_config_home_else_home_dot_config():
    assert user_config_path({"XDG_CONFIG_HOME": "/etc/xdg-alice", "HOME": "/home/alice"}) == Path(
        "/etc/xdg-alice/awa-tui/config.toml")
    assert user_config_path({"HOME": "/home/alice"}) == Path("/home/alice/.config/awa-tui/config.toml")
    assert user_config_path({"XDG_CONFIG_HOME": "relative", "HOME": "/home/alice"}) == Path(
        "/home/alice/.config/awa-tui/config.toml")
    assert user_config_path({"XDG_CONFIG_HOME": "", "HOME": "/home/alice"}) == Path(
        "/home/alice/.config/awa-tui/config.toml")


def test_a_good_file_is_read(tmp_path: Path):
    path = tmp_path / "config.toml"
    path.write_text('refresh = 5\ndefault_panel = "runtimes"\n[aliases]\nboxes = "runtimes"\nhist = "audit"\n')
    assert read_user_config(path) == (UserConfig(refresh=5.0, default_panel="runtimes",
                                                 aliases={"boxes": "runtimes", "hist": "audit"}), None)


def test_highlight_changes_is_read(tmp_path: Path):
    path = tmp_path / "config.toml"
    path.write_text("highlight_changes = false\n")
    assert read_user_config(path) == (UserConfig(highlight_changes=False), None)
    path.write_text("highlight_changes = true\n")
    assert read_user_config(path) == (UserConfig(highlight_changes=True), None)


def test_moved_keys_are_read_and_may_swap_or_reuse_another_places_key(tmp_path: Path):
    path = tmp_path / "config.toml"
    path.write_text('[keys]\n"schedules.toggle_pause" = "t"\n"schedules.trigger" = "s"\n'
                    '"app.refresh_now" = "f5,ctrl+r"\n"jobs.retry" = "n"\n')
    assert read_user_config(path) == (UserConfig(keys={
        "schedules.toggle_pause": "t", "schedules.trigger": "s", "app.refresh_now": "f5,ctrl+r",
        "jobs.retry": "n"}), None)  # n is the schedules panel's (new schedule): never live with the jobs panel


def test_no_file_is_the_defaults_silently(tmp_path: Path):
    assert read_user_config(tmp_path / "absent.toml") == (UserConfig(), None)


@pytest.mark.parametrize("text,why", [
    ("refresh = ", "not valid TOML: Invalid value (at end of document)"),
    ("refresh = 5\nrefresh = 6", "not valid TOML: Cannot overwrite a value (at end of document)"),
    ("refresh = 0.01", "refresh: a number of seconds from 0.1 to 600"),
    ("refresh = 601", "refresh: a number of seconds from 0.1 to 600"),
    ("refresh = nan", "refresh: a number of seconds from 0.1 to 600"),
    ('refresh = "fast"', "refresh: a number of seconds from 0.1 to 600"),
    ("refresh = true", "refresh: a number of seconds from 0.1 to 600"),
    ('default_panel = "audit"', "default_panel: one of schedules, owners, runtimes, plan, queues, jobs, calendars"),
    ('colour = "red"', "unknown setting 'colour' (known: refresh, default_panel, aliases, keys, panels, "
                       "highlight_changes)"),
    ('panels = "schedules"', "panels: a section per panel, such as [panels.schedules]"),
    ('[panels.audit]\nsort = "AT"', "panels: 'audit' is not a panel (one of schedules, owners, runtimes, plan, "
                                    "queues, jobs, calendars)"),
    ('[panels.queues]\nwidth = 3', "panels.queues: unknown setting 'width' (known: sort, descending, columns)"),
    ('[panels.queues]\nsort = "SIZE"', "panels.queues: sort: 'SIZE' is not a column to sort by (one of QUEUE, STATE, "
                                       "WAITING, RUNNING, SCHEDULES, PAUSED BY, SINCE (UTC))"),
    # The schedules panel sorts in the database, by some of its columns; and only by one shown.
    ('[panels.schedules]\nsort = "CRON"', "panels.schedules: sort: 'CRON' is not a column to sort by (one of NAME, "
                                          "STATE, NEXT FIRE, HEALTH, LAST RESULT, FAILS 24h, LAST FIRE, OWNER, QUEUE)"),
    ('[panels.queues]\nsort = "WAITING"\ncolumns = ["QUEUE", "STATE"]', "panels.queues: sort: 'WAITING' is not a "
                                                                        "column to sort by (one of QUEUE, STATE)"),
    ('[panels.queues]\ndescending = "yes"', "panels.queues: descending: true or false"),
    ('[panels.queues]\ncolumns = "QUEUE"', 'panels.queues: columns: a list of headers, such as ["QUEUE", "STATE"]'),
    ('[panels.queues]\ncolumns = ["QUEUE", "SIZE"]', "panels.queues: columns: 'SIZE' is not a column (one of QUEUE, "
                                                     "STATE, WAITING, RUNNING, SCHEDULES, PAUSED BY, SINCE (UTC))"),
    ('[panels.queues]\ncolumns = ["STATE", "state"]', "panels.queues: columns: 'STATE' is given twice"),
    ('[panels.queues]\ncolumns = ["STATE", "QUEUE"]', "panels.queues: columns: QUEUE is always the first column"),
    ('[panels.queues]\ncolumns = ["\\u001b[2J"]', "panels.queues: columns: '\\x1b[2J' is not a column (one of QUEUE, "
                                                  "STATE, WAITING, RUNNING, SCHEDULES, PAUSED BY, SINCE (UTC))"),
    ('highlight_changes = "no"', "highlight_changes: true or false"),
    ("highlight_changes = 0", "highlight_changes: true or false"),
    ('keys = "P"', 'keys: a table of name = "key"'),
    ('[keys]\n"schedules.pause" = "P"', "keys: 'schedules.pause' is not a key's name (where.action, as docs/keys.md "
                                        "lists them)"),
    ('[keys]\n"schedules.toggle_pause" = "shift p"', "keys: schedules.toggle_pause: 'shift p' is not a key (a letter, "
                                                     "a digit, or a name such as ctrl+p, f5; several separated by "
                                                     "commas)"),
    ('[keys]\n"schedules.toggle_pause" = 5', "keys: schedules.toggle_pause: '5' is not a key (a letter, a digit, or a "
                                             "name such as ctrl+p, f5; several separated by commas)"),
    # Taken in the same place, by every list's keys, by a key that works everywhere.
    ('[keys]\n"schedules.toggle_pause" = "t"', "keys: schedules.toggle_pause: 't' is already schedules.trigger's key"),
    ('[keys]\n"schedules.toggle_pause" = "j"', "keys: schedules.toggle_pause: 'j' is already table.cursor_down's key"),
    ('[keys]\n"jobs.retry" = "q"', "keys: jobs.retry: 'q' is already app.quit's key"),
    ('aliases = "sc"', 'aliases: a table of name = "panel"'),
    ('[aliases]\nbox = "boxes"', "aliases: box names 'boxes', not one of schedules, owners, runtimes, plan, "
                                 "queues, jobs, calendars, audit"),
    ('[aliases]\njobs = "runtimes"', "aliases: 'jobs' is already a panel's name"),
    ('[aliases]\n"a b" = "jobs"', "aliases: 'a b' is not a name (lower-case letters and digits)"),
    ('[aliases]\n"7" = "jobs"', "aliases: '7' is not a name (lower-case letters and digits)"),
    ('[aliases]\nx = "\\u001b[2J"', "aliases: x names '\\x1b[2J', not one of schedules, owners, runtimes, plan, "
                                    "queues, jobs, calendars, audit"),
])
def test_a_bad_file_is_one_line_and_ignored(tmp_path: Path, text: str, why: str):
    path = tmp_path / "config.toml"
    path.write_text(text)
    settings, problem = read_user_config(path)
    assert settings == UserConfig()
    assert problem == f"{path}: {why}; ignored"


def test_a_file_that_is_not_utf8_or_a_directory_is_one_line(tmp_path: Path):
    path = tmp_path / "config.toml"
    path.write_bytes(b"refresh = 5 # \xff\n")
    assert read_user_config(path) == (UserConfig(), f"{path}: not UTF-8 text; ignored")
    assert read_user_config(tmp_path) == (UserConfig(), f"{tmp_path}: cannot be read (Is a directory); ignored")


async def test_the_console_starts_on_the_default_panel_with_the_aliases_and_says_a_problem(console_factory):
    app = console_factory(default_panel="runtimes", aliases={"boxes": "queues"},
                          config_problem="/home/alice/.config/awa-tui/config.toml: refresh: ...; ignored")
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.active_panel == "runtimes", what="the default panel")
        assert notes(app) == ["/home/alice/.config/awa-tui/config.toml: refresh: ...; ignored"]
        await pilot.press("colon")
        await until(pilot, lambda: isinstance(app.screen, JumpScreen), what="jump prompt")
        assert str(app.screen.query_one("#jump-targets", Static).content).endswith(
            "queues (q, queue, boxes)  jobs (job)  calendars (cal, calendar)  audit (log, logs)")
        await pilot.press(*"boxes", "enter")
        await until(pilot, lambda: app.active_panel == "queues", what="the alias's panel")


async def test_a_moved_key_acts_and_its_old_key_does_nothing(console_factory):
    app = console_factory(keys={"schedules.toggle_pause": "P"})
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        select(app, "metrics.rollup")
        await pilot.press("s")
        await settled(pilot, app)
        assert not isinstance(app.screen, ConfirmScreen)  # s is no longer the pause key
        await pilot.press("P")
        dialog = await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, what="the dialog")
        assert dialog.heading == "Pause schedule?"
        assert len(app.screen_stack) == 2  # one dialog: the old key opened none
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the dialog closed")
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        lines = rendered(help_table(app.screen.allowed, app.screen.keys)).splitlines()
        assert [" ".join(line.split()) for line in lines if "pause (optionally until" in line] == [
            "P pause (optionally until a time, with a reason: tab in the dialog) or resume the selected schedule",
            "s pause (optionally until a time, with a reason) or resume this schedule"]  # the detail's: not moved


# --- [panels.NAME]: columns and sort at start ----------------------------------------------

PANELS_FILE = """
[panels.schedules]
sort = "next fire"
descending = true
columns = ["HEALTH", "NEXT FIRE", "state", "OWNER"]

[panels.queues]
sort = "SCHEDULES"
descending = true
columns = ["QUEUE", "SCHEDULES", "STATE"]
"""


def labels(app, panel: str) -> list[str]:
    """The column headers the panel's table shows, left to right (the sorted one marked)."""
    return [str(column.label) for column in app.main.panel(panel).table.ordered_columns]


def test_a_panels_section_is_read_by_headers_in_any_case(tmp_path: Path):
    path = tmp_path / "config.toml"
    path.write_text(PANELS_FILE + '[panels.jobs]\ncolumns = ["JOB", "last  error"]\n')
    assert read_user_config(path) == (UserConfig(panels={
        "schedules": PanelDefaults(sort="next", descending=True, columns=("name", "health", "next", "state", "owner")),
        "queues": PanelDefaults(sort="schedules", descending=True, columns=("queue", "schedules", "state")),
        "jobs": PanelDefaults(columns=("id", "error"))}), None)


async def test_the_columns_and_sort_of_the_file_apply_at_start_and_the_sort_keys_still_work(
        console_factory, tmp_path: Path):
    path = tmp_path / "config.toml"
    path.write_text(PANELS_FILE)
    app = console_factory(**user_settings(*read_user_config(path)))
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        assert labels(app, "schedules") == ["NAME", "HEALTH", "NEXT FIRE ↓", "STATE", "OWNER"]
        # The seed's next fires, latest first: 03-09 07:00, 03-09 06:00, 03-08 13:00, 12:05,
        # 12:00:40, 11:30 (paused); then the two with none (a retired one, a finished one).
        latest_first = ["billing.nightly-invoice", "payments.settlement-reconciliation-eu-west", "reports.hourly",
                        "metrics.rollup", "crm.contact-sync", "cleanup.tmp-files"]
        assert table_keys(app) == [*latest_first, "weekly.digest", "legacy.export"]
        await pilot.press("O")  # the sort keys work as ever
        await until(pilot, lambda: table_keys(app)[:6] == latest_first[::-1], what="soonest first")
        assert labels(app, "schedules")[2] == "NEXT FIRE ↑"
        await pilot.press("5")
        await until(pilot, lambda: table_keys(app, "queues"), what="the queues")
        assert labels(app, "queues") == ["QUEUE", "SCHEDULES ↓", "STATE"]
        # Most schedules first (3, 2, then the queues of one in their own order).
        assert table_keys(app, "queues") == ["default", "billing", "integrations", "mail", "reports"]
        table = app.main.panel("queues").table
        assert [table.get_row(key)[1].plain for key in table_keys(app, "queues")] == ["3", "2", "1", "1", "1"]


async def test_a_bad_panels_value_is_the_one_warning_and_the_whole_file_is_ignored(console_factory, tmp_path: Path):
    path = tmp_path / "config.toml"
    path.write_text('default_panel = "runtimes"\n[panels.schedules]\ncolumns = ["NAME", "COLOUR"]\n')
    app = console_factory(**user_settings(*read_user_config(path)))
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.apply_times, what="first paint")
        assert notes(app) == [
            f"{path}: panels.schedules: columns: 'COLOUR' is not a column (one of NAME, STATE, NEXT FIRE, HEALTH, "
            "LAST RESULT, FAILS 24h, LAST 20 INSTANTS, NEXT (UTC), LAST FIRE, LATE, CRON, MEANING, ZONE, POLICY, "
            "OWNER, QUEUE, PAUSED/RETIRED BY, MADE); ignored"]
        assert app.active_panel == "schedules"  # the file's default_panel is ignored with it
        await until(pilot, lambda: labels(app, "schedules")[:3] == ["NAME ↑", "STATE", "NEXT FIRE"],
                    what="its own columns, sorted by name")
