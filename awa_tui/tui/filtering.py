"""The filter grammar (awa_tui/filters.py) applied in the console to the small lists that
are read whole every refresh (owners, runtimes, queues, the audit log). Schedules are
filtered by the engine in SQL instead (they can be 100k). Pure: rows in, rows out."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from awa_tui.filters import GRAMMARS, Filter, Term, value_pattern

T = TypeVar("T")
Fields = Callable[[Any], dict[str, Any]]  # row -> {field: value}; "" is the free-text field
Flags = Callable[[Any], set[str]]  # row -> the flags that hold


def _owner_state(row: Any) -> str:
    if row.blockers:
        return "blocked"
    return "synced" if row.certified else "unsynced"


FIELDS: dict[str, Fields] = {
    "owners": lambda r: {"name": r.owner, "state": _owner_state(r), "": [r.owner]},
    "runtimes": lambda r: {"host": r.hostname, "role": r.role, "owner": r.owner,
                           "": [r.hostname]},
    "queues": lambda r: {"name": r.queue, "state": "paused" if r.paused else "active",
                         "": [r.queue]},
    "audit": lambda r: {"operator": r.operator, "action": r.action, "target": r.target,
                        "": [r.target]},
}
FLAGS: dict[str, Flags] = {
    "owners": lambda r: set(),
    "runtimes": lambda r: ({"leader"} if r.role == "leader" else set())
    | ({"stale"} if not r.fresh and r.stopped_at is None else set()),
    "queues": lambda r: {"paused"} if r.paused else set(),
    "audit": lambda r: set(),
}


def _holds(term: Term, fields: dict[str, Any], flags: set[str], panel: str) -> bool:
    if term.kind == "flag":
        return term.name in flags
    if term.kind == "text":
        pattern = value_pattern(term.value, substring=True)
        return any(v is not None and pattern.fullmatch(str(v)) is not None for v in fields[""])
    value = fields.get(term.name)
    if value is None:
        return False
    substring = term.name in GRAMMARS[panel].substring_fields
    return value_pattern(term.value, substring).fullmatch(str(value)) is not None


def matches(flt: Filter | None, row: Any) -> bool:
    if not flt:
        return True
    fields, flags = FIELDS[flt.panel](row), FLAGS[flt.panel](row)
    return all(_holds(t, fields, flags, flt.panel) != t.negated for t in flt.terms)


def apply(flt: Filter | None, rows: Iterable[T]) -> list[T]:
    return [row for row in rows if matches(flt, row)]
