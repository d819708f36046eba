"""The user's config file (awa-tui/config.toml in the XDG config directory): refresh,
default_panel and extra `:` aliases; a file that cannot be used is one line and ignored."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static
from tui_helpers import notes, until

from awa_tui.tui.config import UserConfig, read_user_config, user_config_path
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
    ('colour = "red"', "unknown setting 'colour' (known: refresh, default_panel, aliases)"),
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
