"""Read models of queues and runtime snapshots (the queues and runtimes panels, `queue list`,
`runtime list`); named from awa_tui/engine/read/models.py too."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from awa_tui.printable import printable


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
    """A database session that held a lock the leader's pass waited for (S59): enough to
    find and end it, never its statement's text (anyone's SQL, literals and secrets
    included), only the statement's kind. Printable."""

    pid: int  # the blocking session's backend pid
    application: str  # its application_name ('' when unset)
    state: str  # active, idle in transaction, ...
    kind: str  # its current (or, when idle, last) statement's kind: 'ALTER ROLE', 'UPDATE awa.cron_jobs'
    waited_for: str  # what the pass waited on: a table (awa.jobs), a row, a transaction
    user: str = ""  # the role it is logged in as


@dataclass(frozen=True)
class HeldLock:
    """A session in the way and the lock mode it holds (or asks for ahead in the queue) on
    what the waiting session wants: 'ACCESS EXCLUSIVE'. Printable."""

    blocker: Blocker
    mode: str  # in the words of LOCK TABLE: ACCESS EXCLUSIVE, ROW EXCLUSIVE; '' when unknown


@dataclass(frozen=True)
class ReadWait:
    """What one session (the console's refresh) waits on now, read on a second connection
    (S75): the sessions in its way; none when it waits on no lock (a slow statement, the network)."""

    pid: int  # the waiting session's backend pid
    held: tuple[HeldLock, ...] = ()


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
class RuntimeEvent:
    """One thing a runtime did, at a database time; `detail` in operator words ('' if none).
    Strings come from the database: callers escape them for a terminal (printable)."""

    at: datetime
    kind: str
    detail: str = ""


@dataclass(frozen=True)
class RuntimeEvents:
    """A runtime's recent events, newest first, as its snapshot row carries them, plus its
    start and stop when the row records them and no event does (a runtime of a release
    before v034, a forced stop)."""

    instance_id: uuid.UUID
    hostname: str
    pid: int
    now: datetime  # DB time of the read
    events: tuple[RuntimeEvent, ...]
    refusal: str | None = None  # why it never competes for leadership ('pooler in transaction mode')


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
    schema_version: int | None = None  # the schema its code was built for (None: not reported)
    # The protocol the schema's release policy judges (`--version` prints it, `migrate
    # --leaders-from` takes it): 1 for a release that reported a schema but no protocol.
    leader_protocol: int | None = None
    # Why it never competes for leadership ('pooler in transaction mode'); None when it does
    # (or its release does not say).
    lead_refusal: str | None = None


@dataclass(frozen=True)
class Leadership:
    """Who holds the leader lock now (pg_locks), and the state of its lease, at `now`.

    Leadership is the lock holder's, never a snapshot's is_leader flag (which lags, and
    stays true in the row of a runtime killed with -9)."""

    now: datetime
    backend_pid: int | None = None  # the lock session; None: nobody holds the lock
    application_name: str | None = None  # from pg_stat_activity
    client_addr: str | None = None
    instance_id: uuid.UUID | None = None  # from the lease, when it names the lock session
    hostname: str | None = None  # from that runtime's snapshot
    pid: int | None = None
    lease_expires_at: datetime | None = None

    @property
    def held(self) -> bool:
        return self.backend_pid is not None

    @property
    def stalled(self) -> bool:
        """The lock is held but its lease has expired (or it has none): a frozen holder."""
        return self.held and (self.lease_expires_at is None or self.lease_expires_at <= self.now)

    @property
    def lease_left_s(self) -> float | None:
        if self.lease_expires_at is None:
            return None
        return (self.lease_expires_at - self.now).total_seconds()

    def holder(self) -> str:
        """'app-1 pid 4242 (instance 6f1c2a9e)', or the lock session's own labels when no
        runtime snapshot names it. Control characters escaped."""
        if not self.held:
            return "nobody"
        if self.instance_id is not None and self.hostname is not None:
            return printable(f"{self.hostname} pid {self.pid} (instance {str(self.instance_id)[:8]})")
        where = f" from {self.client_addr}" if self.client_addr else ""
        return printable(f"session {self.backend_pid} {self.application_name or '?'!r}{where} (no lease)")


def describe(blockers: tuple[Blocker, ...]) -> str:
    """'session 4242 (user alice, psql, idle in transaction) holding table awa.jobs: LOCK
    TABLE awa.jobs' for a log line, `check` and the console."""
    return "; ".join(f"session {b.pid} (user {b.user or 'unknown'}, {b.application or 'no application name'}, "
                     f"{b.state or 'unknown'}) holding {b.waited_for or 'a lock'}: "
                     f"{b.kind or '(statement not shown)'}" for b in blockers)
