"""The config file's `[panels.NAME]` sections: a panel's columns (which show, in which
order) and the column it is sorted by when the console starts. Columns and sorts are
named by their headers, as the table and the sort menu (`o`) show them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from awa_tui.printable import printable
from awa_tui.tui.config import ConfigProblem
from awa_tui.tui.keymap import ALL_PANELS

PANEL_SETTINGS = ("sort", "descending", "columns")


class Header(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def label(self) -> str: ...


@dataclass(frozen=True)
class PanelDefaults:
    """One panel's section, checked: column keys (widgets/keyed_table.Column.key). None:
    not set (the panel's own)."""

    sort: str | None = None
    descending: bool = False
    columns: tuple[str, ...] | None = None  # the first column (the row's name) always first


def panel_columns(panel: str) -> tuple[Sequence[Header], tuple[str, ...]]:
    """The panel's columns and the keys of those it can be sorted by (the schedules panel
    sorts in the database, by some; the others by any column). Imported when a config file
    is read: the panels import the console's config."""
    from awa_tui.tui.panels import calendars, jobs, owners, plan, queues, runtimes, schedules

    columns: Sequence[Header] = {
        "schedules": schedules.COLUMNS, "owners": owners.COLUMNS, "runtimes": runtimes.COLUMNS, "plan": plan.COLUMNS,
        "queues": queues.COLUMNS, "jobs": jobs.COLUMNS, "calendars": calendars.COLUMNS}[panel]
    return columns, schedules.SORTS if panel == "schedules" else tuple(c.key for c in columns)


def _word(text: str) -> str:
    return " ".join(text.split()).casefold()


def _column(where: str, name: object, among: Sequence[Header], what: tuple[str, str]) -> str:
    """The key of the column whose header is `name` (any case) among `among`; `what`: the
    setting and what the value must be, for the line that refuses it."""
    found = next((c.key for c in among if isinstance(name, str) and _word(c.label) == _word(name)), None)
    if found is None:
        known = ", ".join(c.label for c in among)
        raise ConfigProblem(f"{where}: {what[0]}: '{printable(str(name))}' is not {what[1]} (one of {known})")
    return found


def checked_panels(table: object) -> dict[str, PanelDefaults]:
    """`[panels]`: a section per panel, each with `sort` (a column's header), `descending`
    (true or false) and `columns` (headers, in the order shown; the first column, the row's
    name, always shows first and may be left out)."""
    if not isinstance(table, dict):
        raise ConfigProblem("panels: a section per panel, such as [panels.schedules]")
    checked: dict[str, PanelDefaults] = {}
    for panel, section in table.items():
        if panel not in ALL_PANELS:
            raise ConfigProblem(f"panels: '{printable(panel)}' is not a panel (one of {', '.join(ALL_PANELS)})")
        checked[panel] = _section(f"panels.{panel}", section, *panel_columns(panel))
    return checked


def _section(where: str, section: object, columns: Sequence[Header], sorts: tuple[str, ...]) -> PanelDefaults:
    if not isinstance(section, dict):
        raise ConfigProblem(f"{where}: a section of {', '.join(PANEL_SETTINGS)}")
    unknown = sorted(set(section) - set(PANEL_SETTINGS))
    if unknown:
        raise ConfigProblem(f"{where}: unknown setting '{printable(unknown[0])}' (known: {', '.join(PANEL_SETTINGS)})")
    chosen = _columns(where, section.get("columns"), columns)
    sort = section.get("sort")
    if sort is not None:
        shown = [c for c in columns if c.key in sorts and (chosen is None or c.key in chosen)]
        sort = _column(where, sort, shown, ("sort", "a column to sort by"))
    descending = section.get("descending", False)
    if not isinstance(descending, bool):
        raise ConfigProblem(f"{where}: descending: true or false")
    return PanelDefaults(sort=sort, descending=descending, columns=chosen)


def _columns(where: str, given: Any, columns: Sequence[Header]) -> tuple[str, ...] | None:
    if given is None:
        return None
    first = columns[0]
    if not isinstance(given, list):
        raise ConfigProblem(f'{where}: columns: a list of headers, such as ["{first.label}", "{columns[1].label}"]')
    keys = [_column(where, name, columns, ("columns", "a column")) for name in given]
    twice = next((name for name, key in zip(given, keys, strict=True) if keys.count(key) > 1), None)
    if twice is not None:
        raise ConfigProblem(f"{where}: columns: '{printable(twice)}' is given twice")
    if first.key in keys[1:]:
        raise ConfigProblem(f"{where}: columns: {first.label} is always the first column")
    return tuple(keys) if keys[:1] == [first.key] else (first.key, *keys)


def chosen_indexes(columns: Sequence[Header], defaults: PanelDefaults,
                   among: Sequence[int] | None = None) -> tuple[int, ...]:
    """Indexes of `columns` (those of `among`, all without it) a panel shows, in the order
    the config file gives (all in their own order when it names none)."""
    among = range(len(columns)) if among is None else among
    if defaults.columns is None:
        return tuple(among)
    index = {columns[i].key: i for i in among}
    return tuple(index[key] for key in defaults.columns if key in index)
