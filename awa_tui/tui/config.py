"""What a console is built from. The CLI (launch.py) and the tests build it the same way."""

from __future__ import annotations

import math
import os
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
from awa_tui.tui.keymap import ALL_PANELS

if TYPE_CHECKING:
    from awa_tui.engine.client import Client


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
    config_problem: str | None = None

    @property
    def database(self) -> str:
        """Where the console points, never with a password."""
        return self.db_label or describe_dsn(self.client.dsn)


# --- the user's config file ---------------------------------------------------------------

CONFIG_KEYS = ("refresh", "default_panel", "aliases")
JUMP_TARGETS = (*ALL_PANELS, "audit")  # what `:` reaches (screens/jump.TARGETS)
CONFIG_MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class UserConfig:
    """awa-tui/config.toml: `refresh` (seconds), `default_panel`, `aliases` (a table of
    extra `:` names, each naming a panel or `audit`). None / empty: not set."""

    refresh: float | None = None
    default_panel: str | None = None
    aliases: dict[str, str] = field(default_factory=dict)


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
    return UserConfig(refresh=refresh, default_panel=panel, aliases=dict(aliases))


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
