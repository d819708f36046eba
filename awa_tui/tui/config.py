"""What a console is built from. The CLI (launch.py) and the tests build it the same way."""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from awa_tui.config import REFRESH_MAX_S, REFRESH_MIN_S
from awa_tui.engine.backend.protocol import ConsoleBackend
from awa_tui.engine.core.db import describe_dsn
from awa_tui.printable import printable
from awa_tui.tui.keymap import ACTS, ALL_PANELS, Act

if TYPE_CHECKING:
    from awa_tui.engine.client import Client
    from awa_tui.tui.panel_defaults import PanelDefaults


# Schedules fetched per page (the end of the list asks for the next). Every refresh reads
# the page, its outcome strips and diffs its rows, and the first paint builds them all:
# 1,000 rows were ~0.25 s of the UI thread before anything showed (measured); 250 fill ten
# screens of a 25-row terminal.
PAGE_SIZE = 250


@dataclass
class ConsoleConfig:
    client: ConsoleBackend  # the console's reads and operator actions (read_only inside)
    engine: Client | None = None  # the in-process runtime's Client under --lead, else None
    db_label: str | None = None  # shown instead of describe_dsn() (tests pin it)
    embedded_at: str | None = None  # where the embedded Postgres lives, when used
    refresh: float = 2.0
    clock: Callable[[], datetime] | None = None  # None: DB time; tests inject a fixed clock
    page_size: int = PAGE_SIZE
    handle_signals: bool = False  # SIGHUP/SIGTERM exit cleanly (the real terminal only)
    schema_label: str | None = None  # the header's "upstream Awa schema v40" (launch.py detects it)
    # From the user's config file (UserConfig): the panel shown first, extra `:` names, and
    # why the file was ignored (one line, shown as a warning when the console starts).
    default_panel: str = "schedules"
    aliases: Mapping[str, str] = field(default_factory=dict)
    keys: Mapping[str, str] = field(default_factory=dict)  # a key's name -> the key(s) replacing its own
    panels: Mapping[str, PanelDefaults] = field(default_factory=dict)  # a panel's columns and sort at start
    config_problem: str | None = None
    highlight_changes: bool = True  # cells a refresh changed are lit until the next (widgets/lit.py)

    @property
    def database(self) -> str:
        """Where the console points, never with a password."""
        return self.db_label or describe_dsn(self.client.dsn)


# --- the user's config file ---------------------------------------------------------------

CONFIG_KEYS = ("refresh", "default_panel", "aliases", "keys", "panels", "highlight_changes")
JUMP_TARGETS = (*ALL_PANELS, "audit")  # what `:` reaches (screens/jump.TARGETS)
CONFIG_MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class UserConfig:
    """awa-tui/config.toml: `refresh` (seconds), `default_panel`, `aliases` (a table of
    extra `:` names, each naming a panel or `audit`), `keys` (a table of a key's name and the
    key(s) that replace its own), `panels` (a section per panel: its columns and sort,
    panel_defaults.py). None / empty: not set."""

    refresh: float | None = None
    default_panel: str | None = None
    aliases: dict[str, str] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)  # a key's name (where.action, docs/keys.md) -> its keys
    panels: dict[str, PanelDefaults] = field(default_factory=dict)
    highlight_changes: bool | None = None  # false: a refresh lights no changed cell


def user_config_path(env: Mapping[str, str] = os.environ) -> Path:
    """$XDG_CONFIG_HOME/awa-tui/config.toml, else ~/.config/awa-tui/config.toml (XDG: a
    relative $XDG_CONFIG_HOME is ignored)."""
    base = env.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path(env.get("HOME") or Path.home()) / ".config"
    return root / "awa-tui" / "config.toml"


class ConfigProblem(Exception):
    """Why the config file is ignored, in one line."""


def _checked(data: dict[str, Any]) -> UserConfig:
    unknown = sorted(set(data) - set(CONFIG_KEYS))
    if unknown:
        raise ConfigProblem(f"unknown setting '{printable(unknown[0])}' (known: {', '.join(CONFIG_KEYS)})")
    refresh = data.get("refresh")
    if refresh is not None:
        if isinstance(refresh, bool) or not isinstance(refresh, (int, float)) or math.isnan(refresh) \
                or not REFRESH_MIN_S <= refresh <= REFRESH_MAX_S:
            raise ConfigProblem(f"refresh: a number of seconds from {REFRESH_MIN_S:g} to {REFRESH_MAX_S:g}")
        refresh = float(refresh)
    panel = data.get("default_panel")
    if panel is not None and panel not in ALL_PANELS:
        raise ConfigProblem(f"default_panel: one of {', '.join(ALL_PANELS)}")
    aliases = data.get("aliases", {})
    if not isinstance(aliases, dict):
        raise ConfigProblem("aliases: a table of name = \"panel\"")
    for name, target in aliases.items():
        if not (name.isascii() and name.isalnum() and name.islower()) or name.isdigit():
            raise ConfigProblem(f"aliases: '{printable(name)}' is not a name (lower-case letters and digits)")
        if name in JUMP_TARGETS:
            raise ConfigProblem(f"aliases: '{name}' is already a panel's name")
        if target not in JUMP_TARGETS:
            raise ConfigProblem(f"aliases: {name} names '{printable(str(target))}', not one of "
                                f"{', '.join(JUMP_TARGETS)}")
    highlight = data.get("highlight_changes")
    if highlight is not None and not isinstance(highlight, bool):
        raise ConfigProblem("highlight_changes: true or false")
    from awa_tui.tui.panel_defaults import checked_panels  # it reads the panels' columns, which import this

    return UserConfig(refresh=refresh, default_panel=panel, aliases=dict(aliases), keys=_keys(data.get("keys", {})),
                      panels=checked_panels(data.get("panels", {})), highlight_changes=highlight)


# A key as Textual names it: a character, or a name such as ctrl+p, f5, question_mark.
_KEY = re.compile(r"[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*")
BOUND = {a.id: a for a in ACTS if a.bound}
# A name's own keys: some names hold two rows (escape and q both close a screen).
OWN_KEYS = {i: sorted({k for a in ACTS if a.bound and a.id == i for k in a.key.split(",")}) for i in BOUND}
PANEL_SCOPES = frozenset((*ALL_PANELS, "panel", "table"))  # a panel's own keys, every panel's, every list's


def _together(a: Act, b: Act) -> bool:
    """Whether the keys of `a` and `b` can be live at once: the same place, everywhere
    ("app"), or a panel with the keys of every panel and every list."""
    if a.scope == b.scope or "app" in (a.scope, b.scope):
        return True
    shared = {"panel", "table"}
    return (a.scope in shared and b.scope in PANEL_SCOPES) or (b.scope in shared and a.scope in PANEL_SCOPES)


def _keys(table: object) -> dict[str, str]:
    """`[keys]`: each name a bound key's (where.action), each value keys no other key of the
    same place holds once the table is applied, so a remapped key never reaches two actions."""
    if not isinstance(table, dict):
        raise ConfigProblem('keys: a table of name = "key"')
    for name, value in table.items():
        if name not in BOUND:
            raise ConfigProblem(f"keys: '{printable(name)}' is not a key's name (where.action, as docs/keys.md "
                                "lists them)")
        if not isinstance(value, str) or not all(_KEY.fullmatch(k) for k in value.split(",")):
            raise ConfigProblem(f"keys: {name}: '{printable(str(value))}' is not a key (a letter, a digit, or a "
                                "name such as ctrl+p, f5; several separated by commas)")
    live = {i: table[i].split(",") if i in table else OWN_KEYS[i] for i in BOUND}
    for name in table:
        for other, keys in live.items():
            clash = set(live[name]) & set(keys)
            if other != name and clash and _together(BOUND[name], BOUND[other]):
                raise ConfigProblem(f"keys: {name}: '{sorted(clash)[0]}' is already {other}'s key")
    return dict(table)


def user_settings(user: UserConfig, problem: str | None) -> dict[str, Any]:
    """What the file sets of a ConsoleConfig (`dataclasses.replace(config, **these)`);
    `refresh` is not here: a flag given wins over it."""
    return {"default_panel": user.default_panel or "schedules", "aliases": user.aliases, "keys": user.keys,
            "panels": user.panels, "config_problem": problem, "highlight_changes": user.highlight_changes is not False}


def read_user_config(path: Path) -> tuple[UserConfig, str | None]:
    """The settings of `path` and None; no file: the defaults and None; a file that cannot
    be used: the defaults and one line saying why (the whole file is then ignored)."""
    where = printable(str(path))
    try:
        with path.open("rb") as handle:
            raw = handle.read(CONFIG_MAX_BYTES + 1)
    except FileNotFoundError:
        return UserConfig(), None
    except OSError as exc:
        return UserConfig(), f"{where}: cannot be read ({exc.strerror}); ignored"
    try:
        if len(raw) > CONFIG_MAX_BYTES:
            raise ConfigProblem(f"larger than {CONFIG_MAX_BYTES // 1024} KiB")
        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise ConfigProblem("not UTF-8 text") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigProblem(f"not valid TOML: {printable(str(exc))}") from None
        return _checked(data), None
    except ConfigProblem as exc:
        return UserConfig(), f"{where}: {exc}; ignored"
