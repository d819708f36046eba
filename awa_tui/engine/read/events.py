"""A runtime's recent events (became leader, lost or released the lead, a pass that timed
out on a lock, refused to lead, started, stopped): kept in memory by the runtime, carried by
its snapshot row (awa.runtime_instances.recent_events, v034) with the snapshot it writes
anyway, and read back for the console's runtime events screen and `runtime events`.

An event's time is database time: one known when it happened (a pass's `now`) is kept; any
other is placed on the database's clock by the first snapshot after it, as that snapshot's
DB time minus the monotonic time elapsed since the event (the elector may have no working
connection when it loses the lead).

The JSON is written by awa-tui, but the row can be edited by hand: reading skips what is not
an event (S15) instead of failing the screen.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from awa_tui.engine.read.fleet import RuntimeEvent, RuntimeEvents

EVENTS_KEPT = 50
DETAIL_MAX = 500  # characters of an event's detail (a pass's blockers can be many)

# The kinds, in the operator's words (what the screen and `runtime events` print).
STARTED = "started"
STOPPED = "stopped"
BECAME_LEADER = "became leader"
LOST_LEAD = "lost the lead"
RELEASED_LEAD = "released the lead"
DEPOSED_OTHER = "deposed a stalled leader"
PASS_TIMED_OUT = "pass timed out"
REFUSED = "refused to lead"


class RecentEvents:
    """The last EVENTS_KEPT events of this process, newest first. Any thread records (the
    elector, the evaluator, the loops); the reporter pins their DB time and copies them.

    An event that repeats the newest one (`same`: a pass timing out on the same sessions
    every second while a lock is held) replaces it, counted, instead of pushing the older
    events out of the bound."""

    def __init__(self, kept: int = EVENTS_KEPT, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        # [monotonic instant, DB time once known, kind, detail, same, times in a row]
        self._events: deque[list[Any]] = deque(maxlen=kept)

    def record(self, kind: str, detail: str = "", *, at: datetime | None = None, same: str | None = None) -> None:
        """`at`: the event's DB time when the caller knows it; else pinned by the next snapshot.
        `same`: what makes it a repeat of the newest event of its kind (None: never one)."""
        with self._lock:
            newest = self._events[0] if self._events else None
            times = 1
            if same is not None and newest is not None and newest[2] == kind and newest[4] == same:
                times = newest[5] + 1
                self._events.popleft()
            self._events.appendleft([self._clock(), at, kind, detail[:DETAIL_MAX], same, times])

    def pinned(self, now: datetime) -> tuple[RuntimeEvent, ...]:
        """The events, newest first, each with its DB time: one not placed yet gets `now` (the
        snapshot's DB time) minus the monotonic time since it happened, once and for good,
        and never before the event recorded ahead of it: `now` was read a moment before this
        runs, a moment that differs from one snapshot to the next, so two events a few
        milliseconds apart, placed by different snapshots, could otherwise swap places."""
        with self._lock:
            mono = self._clock()
            floor: datetime | None = None
            for item in reversed(self._events):  # oldest first
                if item[1] is None:
                    placed = now - timedelta(seconds=max(0.0, mono - item[0]))
                    item[1] = placed if floor is None else max(placed, floor)
                floor = item[1]
            return tuple(RuntimeEvent(at=item[1], kind=item[2],
                                      detail=item[3] if item[5] == 1 else f"{item[3]} ({item[5]} in a row, the last "
                                                                           "at this time)")
                         for item in self._events)


def to_json(events: tuple[RuntimeEvent, ...]) -> list[dict[str, Any]]:
    return [{"at": e.at.isoformat(), "kind": e.kind, "detail": e.detail} for e in events]


def from_json(value: Any) -> tuple[RuntimeEvent, ...]:
    """The events a snapshot row carries, newest first; an entry that is not one is left out."""
    if not isinstance(value, list):
        return ()
    out: list[RuntimeEvent] = []
    for item in value:
        if not isinstance(item, dict):
            continue
        kind, detail = item.get("kind"), item.get("detail", "")
        try:
            at = datetime.fromisoformat(item["at"])
        except (KeyError, TypeError, ValueError):
            continue
        if at.tzinfo is None or not isinstance(kind, str) or not kind or not isinstance(detail, str):
            continue
        out.append(RuntimeEvent(at=at, kind=kind, detail=detail))
    out.sort(key=lambda e: e.at, reverse=True)
    return tuple(out)


EVENTS_SQL = """
SELECT r.instance_id, r.hostname, r.pid, awa.safe_ts(r.started_at) AS started_at,
       awa.safe_ts(r.stopped_at) AS stopped_at, coalesce(%(now)s::timestamptz, clock_timestamp()) AS now,
       -- by name from the row: a schema rolled back below v034 has no such columns
       j.row -> 'recent_events' AS recent_events, j.row ->> 'lead_refusal' AS lead_refusal
FROM awa.runtime_instances r CROSS JOIN LATERAL (SELECT to_jsonb(r) - 'manifest' AS row) j
WHERE r.instance_id::text = %(id)s
"""


def runtime_events(conn: Any, instance_id: uuid.UUID | str, now: datetime | None = None) -> RuntimeEvents | None:
    """One runtime's recent events (None when no snapshot row has that id, a malformed one
    included: compared as text, so a database without the schema still says so first), read
    at `now` (DB time when omitted)."""
    try:
        wanted = str(instance_id if isinstance(instance_id, uuid.UUID) else uuid.UUID(instance_id.strip()))
    except ValueError:
        wanted = str(instance_id)
    row = conn.execute(EVENTS_SQL, {"id": wanted, "now": now}).fetchone()
    if row is None:
        return None
    events = list(from_json(row["recent_events"]))
    # What the row's own columns record and no event does: a forced stop marks the row
    # only (reporter.mark_stopped), and a runtime before v034 records no events at all.
    stopped, started = row["stopped_at"], row["started_at"]
    if stopped is not None and not (events and events[0].kind == STOPPED):
        events.insert(0, RuntimeEvent(at=stopped, kind=STOPPED))
    if started is not None and not any(e.kind == STARTED for e in events):
        events.append(RuntimeEvent(at=started, kind=STARTED))
    return RuntimeEvents(instance_id=row["instance_id"], hostname=row["hostname"], pid=row["pid"], now=row["now"],
                         events=tuple(events), refusal=row["lead_refusal"])
