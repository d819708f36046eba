"""Read models of owners and reconciliation plans (S22-S34: the owners and plan panels,
`owner list`, `plan`); named from awa_tui/engine/read/models.py too."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class OwnerCounts:
    inserts: int
    updates: int
    retirements: int


@dataclass(frozen=True)
class OwnerSummary:
    """One owner as the owners panel and `owner list` show it."""

    owner: str
    fresh_runtimes: int
    manifest_hashes: list[str]
    certificate_hash: str | None
    certified_at: datetime | None
    certified: bool
    schedules_owned: int
    schedules_retired: int
    agreement_since: datetime | None
    grace_required_s: float
    grace_remaining_s: float | None
    pending: OwnerCounts
    blockers: list[dict[str, Any]]  # {code, message, blocks, ...}
    # The team roles that may act on this owner (S76, `db grants --owner-role`); the layout's
    # operators may act on every owner.
    roles: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Certificate:
    hash: str | None
    size: int | None
    certified_at: datetime | None
    current: bool


@dataclass(frozen=True)
class OwnedSchedules:
    active: int
    retired: int


@dataclass(frozen=True)
class Agreement:
    hash: str | None
    since: datetime | None
    recorded_since: datetime | None
    evidence_window_s: float
    grace_required_s: float
    grace_remaining_s: float | None


@dataclass(frozen=True)
class OwnerPlan:
    """What reconciliation would do now for one owner (S34); see reconcile.plan."""

    owner: str
    now: datetime
    fresh_declarations: int
    manifest_hash: str | None
    manifest_hashes: list[str]
    certificate: Certificate
    schedules: OwnedSchedules
    inserts: list[dict[str, Any]]  # {name, definition}
    updates: list[dict[str, Any]]  # {name, changes: {column: {from, to}}}
    retirements: list[str]
    conflicts: list[dict[str, Any]]  # {name, kind, owner, message}
    will_insert: bool
    will_update: bool
    will_retire: bool
    agreement: Agreement
    blockers: list[dict[str, Any]]

    def changes(self) -> list[tuple[str, bool, list[dict[str, Any]]]]:
        """The changes by kind, in the order reconciliation applies them: (kind, whether it
        applies now, its entries, each with a `name`). Kinds: insert ({name, definition}),
        update ({name, changes}), retire ({name})."""
        return [("insert", self.will_insert, self.inserts), ("update", self.will_update, self.updates),
                ("retire", self.will_retire, [{"name": name} for name in self.retirements])]


def owner_summary(row: dict[str, Any]) -> OwnerSummary:
    return OwnerSummary(**{**row, "pending": OwnerCounts(**row["pending"])})


def owner_plan(row: dict[str, Any]) -> OwnerPlan:
    return OwnerPlan(**{
        **row,
        "certificate": Certificate(**row["certificate"]),
        "schedules": OwnedSchedules(**row["schedules"]),
        "agreement": Agreement(**row["agreement"]),
    })
