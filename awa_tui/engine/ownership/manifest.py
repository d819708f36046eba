"""Canonical manifests (S22, S24): the complete desired set of one owner, and its hash.

The manifest is stored as a jsonb object keyed by schedule name (full definitions); the
hash is computed over a canonical JSON text of the definitions in name order, so two
runtimes registering the same schedules publish the same hash whatever their
registration order. An empty manifest is valid and has its own hash.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.core.guards import refuse_format_characters

if TYPE_CHECKING:
    from awa_tui.engine.schedules.definition import Schedule

# The ownership protocol this code speaks (S24); a fresh runtime below it blocks retirement.
PROTOCOL_VERSION = 1
HASH_PREFIX = "awa-manifest-v1\n"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Manifest:
    owner: str
    definitions: dict[str, dict[str, Any]]  # name -> definition (name included)
    hash: str

    @property
    def names(self) -> list[str]:
        return sorted(self.definitions)


def canonical_text(definitions: Iterable[dict[str, Any]]) -> str:
    ordered = sorted(definitions, key=lambda d: d["name"])
    return json.dumps(ordered, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def manifest_hash(definitions: Iterable[dict[str, Any]]) -> str:
    text = HASH_PREFIX + canonical_text(definitions)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def build_manifest(owner: str, schedules: Iterable[Schedule]) -> Manifest:
    definitions = [s.definition() for s in schedules]
    return Manifest(owner, {d["name"]: d for d in definitions}, manifest_hash(definitions))


def check_owner(owner: object) -> str:
    """Owner names are stable labels: 1..200 characters, no control characters."""
    if not isinstance(owner, str) or not 1 <= len(owner) <= 200 or _CONTROL.search(owner):
        raise ValidationError(f"owner: must be 1..200 characters without control characters, got {owner!r}")
    return owner


def check_new_owner(owner: object) -> str:
    """An owner name given to schedules (a runtime's --owner, adopt, transfer): a stable
    label that looks like no other, so no invisible format characters either. Names
    already in the database are still accepted where an owner is only referred to."""
    return refuse_format_characters("owner", check_owner(owner))


def short_hash(value: str | None) -> str:
    return value[:12] if value else "-"


def declared_manifest(owner: str | None, schedules: Iterable[Schedule]) -> Manifest | None:
    """The manifest of an authoritative runtime of `owner`; None for any other runtime."""
    return build_manifest(owner, schedules) if owner else None
