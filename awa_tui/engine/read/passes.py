"""A runtime's last evaluator passes, kept in memory and carried by its snapshot row
(awa.runtime_instances.recent_passes, v011) so the runtimes page can show them.

The JSON is written by awa-tui, but the row can be edited by hand: reading it skips what
is not a pass (S15) instead of failing the runtimes page.
"""

from __future__ import annotations

from collections import deque
from datetime import datetime
from typing import Any

from awa_tui.engine.read.fleet import Blocker, PassSummary

PASSES_KEPT = 10


class RecentPasses:
    """The last PASSES_KEPT passes of this process, newest first (thread-safe enough: a
    deque's append and copy are atomic under the GIL; the evaluator appends, the reporter copies)."""

    def __init__(self, kept: int = PASSES_KEPT) -> None:
        self._passes: deque[PassSummary] = deque(maxlen=kept)

    def record(self, at: datetime, duration_s: float, due: int, fired: int, errors: int, *,
               timed_out: bool = False, blockers: tuple[Blocker, ...] = ()) -> PassSummary:
        summary = PassSummary(at=at, duration_ms=round(duration_s * 1000, 1), due=due, fired=fired, errors=errors,
                              timed_out=timed_out, blockers=blockers)
        self._passes.appendleft(summary)
        return summary

    def latest(self) -> tuple[PassSummary, ...]:
        return tuple(self._passes)


BLOCKER_KEYS = ("pid", "user", "application", "state", "kind", "waited_for")
LEGACY_OPTIONAL = ("user", "kind")  # absent from entries written before; their "query" text is never read


def to_json(passes: tuple[PassSummary, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in passes:
        item: dict[str, Any] = {"at": p.at.isoformat(), "duration_ms": p.duration_ms, "due": p.due,
                                "fired": p.fired, "errors": p.errors}
        if p.timed_out or p.blockers:  # a healthy pass's entry stays as small as before (S59)
            item["timed_out"] = p.timed_out
            item["blockers"] = [{k: getattr(b, k) for k in BLOCKER_KEYS} for b in p.blockers]
        out.append(item)
    return out


def _blockers(value: Any) -> tuple[Blocker, ...]:
    """The blockers of an entry; one that is not a blocker is left out."""
    if not isinstance(value, list):
        return ()
    out = []
    for item in value:
        if not isinstance(item, dict):
            continue
        # Checked below, key by key: a stored entry is anyone's JSON.
        found: dict[str, Any] = {k: item.get(k, "" if k in LEGACY_OPTIONAL else None) for k in BLOCKER_KEYS}
        if _count(found["pid"]) is not None and all(isinstance(found[k], str) for k in BLOCKER_KEYS[1:]):
            out.append(Blocker(**found))
    return tuple(out)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def from_json(value: Any) -> tuple[PassSummary, ...]:
    """The passes a snapshot row carries; an entry that is not one is left out."""
    if not isinstance(value, list):
        return ()
    out: list[PassSummary] = []
    for item in value:
        if not isinstance(item, dict):
            continue
        try:
            at = datetime.fromisoformat(item["at"])
            duration = float(item["duration_ms"])
        except (KeyError, TypeError, ValueError):
            continue
        counts = [_count(item.get(k)) for k in ("due", "fired", "errors")]
        if at.tzinfo is None or duration < 0 or any(c is None for c in counts):
            continue
        due, fired, errors = counts
        assert due is not None and fired is not None and errors is not None
        out.append(PassSummary(at=at, duration_ms=duration, due=due, fired=fired, errors=errors,
                               timed_out=item.get("timed_out") is True, blockers=_blockers(item.get("blockers"))))
    return tuple(out)
