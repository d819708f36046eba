"""Read models of queues and runtime snapshots (the queues and runtimes panels, `queue list`,
`runtime list`); named from awa_tui/engine/models.py too."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID


@dataclass(frozen=True)
class QueueRow:
    queue: str
    paused: bool
    paused_at: datetime | None
    paused_by: str | None
    available: int
    running: int
    schedules: int


@dataclass(frozen=True)
class PassSummary:
    """One evaluator pass of a runtime, as its snapshot carries it (newest first)."""

    at: datetime  # the pass's `now`
    duration_ms: float  # wall time of the pass, in this runtime's process
    due: int  # schedules the pass examined: due at `at`, or with no next fire stored yet (hinted set-based, S51)
    fired: int  # jobs written
    errors: int  # schedules skipped with an error (S15)


@dataclass(frozen=True)
class RuntimeRow:
    """A runtime's snapshot; `role` is the leader lock's verdict, `is_leader` the snapshot's."""

    instance_id: UUID
    hostname: str
    pid: int
    version: str
    protocol_version: int
    started_at: datetime | None
    last_seen_at: datetime | None
    snapshot_interval: timedelta | None
    is_leader: bool
    health: Any
    stopped_at: datetime | None
    owner: str | None
    authoritative: bool
    manifest_hash: str | None
    fresh: bool
    role: str  # leader | stalled | follower
    lease_expires_at: datetime | None
    passes: tuple[PassSummary, ...] = ()  # its last evaluator passes, newest first (leaders only)
