"""Read models of queues and runtime snapshots (the queues and runtimes panels, `queue list`,
`runtime list`); named from awa_tui/engine/read/models.py too."""

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
class Blocker:
    """A database session that held a lock the leader's pass waited for (S59). Its text
    comes from pg_stat_activity (anyone's SQL): printable and cut, never obeyed."""

    pid: int  # the blocking session's backend pid
    application: str  # its application_name ('' when unset)
    state: str  # active, idle in transaction, ...
    query: str  # its current (or, when idle, last) statement
    waited_for: str  # what the pass waited on: a table (awa.jobs), a row, a transaction


@dataclass(frozen=True)
class PassSummary:
    """One evaluator pass of a runtime, as its snapshot carries it (newest first)."""

    at: datetime  # the pass's `now`
    duration_ms: float  # wall time of the pass, in this runtime's process
    due: int  # schedules the pass examined: due at `at`, or with no next fire stored yet (hinted set-based, S51)
    fired: int  # jobs written
    errors: int  # schedules skipped with an error (S15)
    timed_out: bool = False  # gave up on its lock or statement timeout (S59); retried next pass
    blockers: tuple[Blocker, ...] = ()  # the sessions it waited on, when it waited long


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
