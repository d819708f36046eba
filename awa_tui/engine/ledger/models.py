"""Typed records the ledger hands to the console and the CLI (frozen: read models only)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from awa_tui.engine.ledger.states import FINISHED_STATES as FINISHED_STATES
from awa_tui.engine.ledger.states import JOB_STATES as JOB_STATES
from awa_tui.engine.ledger.states import WAITING_STATES as WAITING_STATES

# A due instant's verdict (the vocabulary shared by the console, the CLI and JSON).
FIRED = "fired"
MANUAL = "manual"
COALESCED = "coalesced"
SKIPPED_PAUSED = "skipped_paused"
SKIPPED_RETIRED = "skipped_retired"
NO_LEADER = "no_leader"
PENDING = "pending"  # due, not fired yet, and no later fire: the next pass decides
UNKNOWN = "unknown"  # history that would decide it is gone (pruned, or before the ledger)
SKIPPED_OVERLAP = "skipped_overlap"  # the overlap policy kept it out (awa.fire_skips, v009)
BACKFILLED = "backfilled"  # fired later by an operator's backfill
SKIPPED_EXCLUDED = "skipped_excluded"  # on a date the schedule excludes (S56); `reason` names the rule
# Older than the schedule's catch-up window when the leader could fire it (S66); `since` is then.
SKIPPED_TOO_OLD = "skipped_too_old"
# Run by the scheduler it was imported from, before the import (S68): a finished job carried
# over; `reason` names that scheduler (pg_cron).
IMPORTED = "imported"
VERDICTS = (FIRED, MANUAL, COALESCED, SKIPPED_PAUSED, SKIPPED_RETIRED, NO_LEADER, PENDING, UNKNOWN,
            SKIPPED_OVERLAP, BACKFILLED, SKIPPED_EXCLUDED, SKIPPED_TOO_OLD, IMPORTED)


def instant_outcome(verdict: str, job_state: str | None) -> str:
    """A due instant as the schedules panel's strip shows it: the state of the job fired
    (or backfilled) for it, else its verdict (coalesced, skipped_*, no_leader, pending,
    unknown)."""
    if verdict in (FIRED, BACKFILLED):
        return job_state or verdict
    return verdict


def job_result(state: str) -> str:
    """A job's state in the last-result vocabulary: ok, failed, running, waiting, cancelled.

    `failed` is a job whose latest attempt raised (retryable: it will run again; discarded:
    it will not)."""
    return {
        "completed": "ok",
        "retryable": "failed",
        "discarded": "failed",
        "running": "running",
        "available": "waiting",
        "cancelled": "cancelled",
    }.get(state, state)


def stored_instant(value: Any) -> datetime | None:
    """An ISO-8601 instant kept as JSON text (an attempt's times, an audited pause); None when
    it is missing or not an instant: one malformed stored value never stops a read."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


class Record:
    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]  # every subclass is a dataclass


@dataclass(frozen=True)
class Attempt(Record):
    """One failed attempt of a job, as the worker recorded it."""

    attempt: int
    error: str
    traceback: str | None
    started_at: datetime | None
    ended_at: datetime | None
    runtime: str | None  # instance id of the runtime that ran it


@dataclass(frozen=True)
class JobSummary(Record):
    id: int
    schedule: str | None
    kind: str
    queue: str
    state: str
    result: str  # job_result(state)
    attempt: int
    max_attempts: int
    fire_time: datetime | None  # the due instant it was fired for; None for a manual job
    manual: bool
    triggered_by: str | None
    created_at: datetime | None
    run_at: datetime | None
    attempted_at: datetime | None
    finalized_at: datetime | None
    duration_s: float | None  # of the last attempt, once finished
    runtime: str | None  # instance id of the runtime that ran (or runs) it
    last_error: str | None
    queue_paused: bool  # a waiting job behind a paused queue does not run

    @property
    def source(self) -> str:
        """Where the job came from: `fired` by its schedule, `manual` (triggered by hand) or
        `enqueued` by the application (no schedule)."""
        return "manual" if self.manual else "fired" if self.schedule is not None else "enqueued"


@dataclass(frozen=True)
class JobDetail(Record):
    job: JobSummary
    args: Any
    metadata: Any
    tags: list[str]
    attempts: tuple[Attempt, ...]
    lateness_s: float | None  # created_at - fire_time


@dataclass(frozen=True)
class JobChange(Record):
    """A job after an operator's retry or cancel."""

    id: int
    state: str
    attempt: int
    max_attempts: int
    queue: str
    schedule: str | None


@dataclass(frozen=True)
class LastResult(Record):
    schedule: str
    result: str  # ok, failed, running, waiting, cancelled, none
    job_id: int | None
    at: datetime | None  # the job's created_at
    error: str | None


@dataclass(frozen=True)
class Verdict(Record):
    """What happened at one due instant of a schedule (or one manual trigger)."""

    schedule: str
    instant: datetime
    verdict: str  # one of VERDICTS
    job_id: int | None = None
    job_state: str | None = None
    result: str | None = None  # job_result of the job
    lateness_s: float | None = None  # fired: job created_at - instant
    error: str | None = None  # the job's latest error
    by: str | None = None  # who paused, retired or triggered
    since: datetime | None = None  # when the pause or retirement began; skipped_too_old: when it was skipped
    gap_from: datetime | None = None  # no_leader: the last leadership ended here (None: unknown)
    gap_until: datetime | None = None  # ... and the next began here (None: not yet)
    into: datetime | None = None  # coalesced/no_leader: the later fire that covered it
    folded: int = 0  # instants folded into that fire (on the fire's own entry too)
    reason: str | None = None  # unknown: why
    queue: str | None = None
    queue_paused_by: str | None = None  # the job waits behind a paused queue
    catchup_window_s: int | None = None  # skipped_too_old: the schedule's catch-up window (S66)
    # The overlap policy replace: the jobs of earlier fires this fire cancelled, and the job
    # whose fire cancelled this one.
    replaced: tuple[int, ...] = ()
    replaced_by: int | None = None


@dataclass(frozen=True)
class Why(Record):
    schedule: str
    asked_at: datetime | None  # the instant asked about (None: the last due instant)
    verdict: Verdict | None
    next_due: datetime | None
    text: str


@dataclass(frozen=True)
class PruneResult(Record):
    cutoff: datetime
    keep: int
    dry_run: bool
    deleted: int  # or, in a dry run, would be deleted
    by_schedule: dict[str, int]
    batches: int
    done: bool  # False: stopped at max_batches, more remain


@dataclass(frozen=True)
class AuditEntry(Record):
    id: int
    at: datetime
    operator: str
    action: str
    target: str
    before: Any
    after: Any
    detail: Any
    db_user: str | None


@dataclass(frozen=True)
class AuditPage(Record):
    entries: tuple[AuditEntry, ...]
    next_before_id: int | None  # pass as before_id for the next (older) page; None: last page
    oldest: bool = False  # the oldest page (the end of the list): newer entries may exist above


@dataclass(frozen=True)
class JobsPage(Record):
    """The console's jobs panel: the newest jobs matching a filter, at `now`."""

    now: datetime
    rows: tuple[JobSummary, ...]
    more: bool  # older matching jobs exist beyond `rows` (with `oldest`: newer ones)
    oldest: bool = False  # the oldest page (the end of the list), not the newest


@dataclass(frozen=True)
class LedgerView(Record):
    """A schedule's detail screen: the verdicts of its last due instants and the `why` of
    one of them (the latest, or the one asked about)."""

    now: datetime
    verdicts: tuple[Verdict, ...]  # oldest first, manual triggers interleaved
    why: Why
