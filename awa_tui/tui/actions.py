"""Bindings derived from the key map (awa_tui/tui/keymap.py, Harlequin's pattern): the
footer, the help screen and the command palette all come from that one table, so a
mutation removed in read-only mode disappears from all of them together."""

from __future__ import annotations

from textual.binding import Binding, BindingType

from awa_tui.tui.keymap import ACTS, ALL_PANELS, PANELS, Act

__all__ = ["ACTS", "ALL_PANELS", "PANELS", "Act", "acts", "bindings", "is_mutation", "needs"]

MUTATIONS = frozenset((a.scope, a.action) for a in ACTS if a.mutation)
NEEDS = {(a.scope, a.action): a.needs for a in ACTS if a.needs}


def acts(scope: str) -> list[Act]:
    return [a for a in ACTS if a.scope == scope]


def bindings(scope: str) -> list[BindingType]:
    return [
        Binding(a.key, a.action, a.label, show=a.footer, id=a.id, key_display=a.key_label, priority=a.priority)
        for a in acts(scope) if a.bound
    ]


def is_mutation(scope: str, action: str) -> bool:
    return (scope, action) in MUTATIONS


def needs(scope: str, action: str) -> str | None:
    """The backend feature (engine/read/backend.FEATURES) the key needs, if any."""
    return NEEDS.get((scope, action))
