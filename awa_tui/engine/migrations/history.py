"""Migrations as this project's own history recorded them.

While the project was young, four migrations were renumbered after some databases had
applied them (branches landed in another order than they were numbered). Their text was the
same apart from comments (git history of awa_tui/engine/migrations says so), so a database
that recorded one under its old number has applied the migration that now has the new one.
The runner recognises them and records them under today's number before anything else; any
other (version, name) it does not know is refused, never guessed at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# (old version, name) -> today's version, for every renumbering in main's history.
RENUMBERED: dict[tuple[int, str], int] = {
    (13, "sync_changes"): 12,
    (15, "unhinted_groups"): 13,
    (17, "health_candidates"): 14,
    # Landed as v019 on a main after 1.0.0, then as v021 once release_policy and job_runner
    # landed beneath it; a database of the first finds them filled in beneath it, then v029.
    (19, "fence_by_role"): 21,
}


@dataclass(frozen=True)
class Renumbering:
    """A migration recorded under an old number, and the number it has today."""

    name: str
    recorded: int
    current: int

    def describe(self) -> str:
        return f"v{self.recorded:03d} {self.name} is today's v{self.current:03d}"


def renumbering_of(version: int, name: str) -> Renumbering | None:
    current = RENUMBERED.get((version, name))
    return None if current is None else Renumbering(name, version, current)


# A migration filled in beneath later ones (a database made while branches landed in another
# order: v004 under v005, v008 and v009 under v010) may redefine what a later one had already
# redefined (a trigger's column list, a function's body). So every later migration the
# database had is replayed after it, made re-runnable: what it adds is added only if missing,
# what it drops only if present, and its functions and triggers are defined again as today's
# text has them. Only a later migration that redefines a function or trigger the filled-in
# one defines needs it; its data statements would run again, so one with any is refused.
_RERUNNABLE = [
    (re.compile(r"\bADD\s+COLUMN\s+(?!IF\s+NOT\s+EXISTS)", re.IGNORECASE), "ADD COLUMN IF NOT EXISTS "),
    (re.compile(r"\bCREATE\s+TABLE\s+(?!IF\s+NOT\s+EXISTS)", re.IGNORECASE), "CREATE TABLE IF NOT EXISTS "),
    (re.compile(r"\bCREATE\s+(UNIQUE\s+)?INDEX\s+(?!IF\s+NOT\s+EXISTS)", re.IGNORECASE),
     r"CREATE \1INDEX IF NOT EXISTS "),
    (re.compile(r"\bDROP\s+(TRIGGER|INDEX|FUNCTION|TABLE)\s+(?!IF\s+EXISTS)", re.IGNORECASE), r"DROP \1 IF EXISTS "),
]
_BODIES_RE = re.compile(r"\$(\w*)\$.*?\$\1\$", re.DOTALL)
_DATA_RE = re.compile(r"^\s*(INSERT|UPDATE|DELETE)\b", re.IGNORECASE | re.MULTILINE)


_DEFINES_RE = re.compile(r"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|TRIGGER)\s+(?:awa\.)?(\w+)", re.IGNORECASE)


def defines(text: str) -> set[str]:
    """The functions and triggers a migration (re)defines, by name."""
    return {name.lower() for name in _DEFINES_RE.findall(_BODIES_RE.sub("", text))}


def replayable(text: str) -> str | None:
    """`text` made safe to run again on a database that already ran it, or None when it
    cannot be (it writes data)."""
    if _DATA_RE.search(_BODIES_RE.sub("", text)):  # a function's body writes when called, not now
        return None
    for pattern, replacement in _RERUNNABLE:
        text = pattern.sub(replacement, text)
    return text


# Migrations whose text changed after a build of main had applied them, with the probe (one
# boolean query) that is true on a database that ran the earlier text. Such a migration is
# replayed, made re-runnable, where it stands in the order. v010 first went out without the
# four expectation columns in its audit and fence triggers (they were added to it when v008
# landed beside it).
EDITED: dict[tuple[int, str], str] = {
    (10, "spread_and_overrides"): (
        "SELECT coalesce(bool_or(pg_get_triggerdef(oid) NOT LIKE '%%max_lateness%%'), false) AS stale "
        "FROM pg_trigger WHERE tgrelid = 'awa.cron_jobs'::regclass AND tgname IN ('cron_jobs_audit', 'cron_jobs_fence')"
    ),
}
