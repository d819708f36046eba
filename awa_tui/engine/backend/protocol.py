"""What the console needs of an engine: typed Protocols (its reads, its operator actions,
and the backend that holds both), so a key press can be followed to its SQL by reading, and
another backend (over an upstream Awa database, awa_tui/engine/upstream/) can drive the same
console by implementing them.

`Client` satisfies ConsoleBackend (tests/test_architecture.py checks both statically and with
isinstance). Every method reads or acts in DB time unless `now` is given; every action
raises an `AwaError` with a one-line message when refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from awa_tui.engine.core.limits import BACKFILL_LIMIT, BATCH_SIZE, CHECK_TIMEOUT, DEFAULT_KEEP

# The read models are named for type checkers only: the Client takes FEATURES from here
# at import, and must not load every model to do so (start-up time).
if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime, timedelta

    from awa_tui.engine.actions import bulk as bulk_ops
    from awa_tui.engine.actions.backfill import BackfillResult
    from awa_tui.engine.actions.made import ScheduleRequest
    from awa_tui.engine.actions.overrides import OverrideRequest
    from awa_tui.engine.alerts.models import AlertDelivery, Silence
    from awa_tui.engine.calendars.models import CalendarInfo, CalendarSummary
    from awa_tui.engine.core.standby import ServerRole
    from awa_tui.engine.firing.preview import ResumePreview
    from awa_tui.engine.health.models import CheckReport, ConsoleAttention, RegisteredRuntime
    from awa_tui.engine.ledger.models import (
        AuditPage,
        JobChange,
        JobDetail,
        JobsPage,
        JobSummary,
        LedgerView,
        PruneResult,
        Verdict,
        Why,
    )
    from awa_tui.engine.read.fleet import Leadership, ReadWait, RuntimeEvents
    from awa_tui.engine.read.models import (
        AuditEntry,
        AuditRecord,
        Fire,
        NextFire,
        OwnerChange,
        OwnerPlan,
        OwnerSummary,
        QueueDrained,
        QueueRow,
        QueueState,
        RuntimeRow,
        ScheduleDetail,
        ScheduleInfo,
        SchedulePage,
        ScheduleRow,
        ScheduleState,
        TriggeredJob,
    )
    from awa_tui.engine.schedules.definition import Schedule
    from awa_tui.filters import Filter

# Features a backend may lack. The key map marks each key that needs one (keymap.Act.needs);
# the console leaves a key whose feature its backend lacks out of the footer, help and
# palette, so such a Protocol method is never called. Upstream Awa (engine/upstream/backend.py)
# has none of OWN_SCHEMA_FEATURES.
FEATURES: frozenset[str] = frozenset({
    "owners",  # owners panel, adopt / transfer, owner-wide retire / restore
    "plan",  # the reconciliation plan panel
    "lifecycle",  # retire / restore (tombstones)
    "ledger",  # awa-tui's fire ledger and job history (outcomes, jobs panel)
    "health",  # runtime health and evaluator passes
    "schedule_pause",  # pause / resume a schedule
    "trigger",  # one job now
    "queue_pause",  # pause / resume a queue
    "backfill",  # enqueue the instants of a range that never fired (S47)
    "override",  # an operator's override of a definition (S49)
    "calendars",  # named calendars of excluded dates (S56) and the console's calendars panel
    "runtime_schedules",  # schedules made at run time (S64): the console's schedule form, delete
    "pause_until",  # a pause with an end and a reason (S65): the pause dialog's optional values
    "alerts",  # alert deliveries and silences (S63, S71): the console's alerts screen and its silence
})
# The features only awa-tui's own schema has (docs/keys.md marks their keys).
OWN_SCHEMA_FEATURES: frozenset[str] = frozenset({"owners", "plan", "lifecycle", "ledger", "health", "backfill",
                                                  "override", "calendars", "runtime_schedules",
                                                  "pause_until", "alerts"})


@runtime_checkable
class ReadBackend(Protocol):
    """The reads (the console's reader thread): awa-tui's own schema (backend/reads.Reads)
    or upstream Awa's."""

    def db_time(self) -> datetime: ...

    def write_refusal(self) -> str | None: ...

    def server_role(self) -> ServerRole:
        """The server read from: a primary, or a hot standby and its replay lag."""
        ...

    def audit_gap(self) -> str | None:
        """Why operator actions would NOT be audited (one line), or None when they are."""
        ...

    def list_runtimes(self, now: datetime | None = None) -> list[RuntimeRow]: ...

    def runtime_events(self, instance_id: str, now: datetime | None = None) -> RuntimeEvents | None:
        """A runtime's recent events (the console's runtime events screen, `runtime events`)."""
        ...

    def leadership(self, now: datetime | None = None) -> Leadership: ...

    def console_attention(self, now: datetime, *, unserved: bool) -> ConsoleAttention:
        """The console's ATTENTION line besides the leader lock (S75)."""
        ...

    def read_wait(self, thread_id: int, bound: timedelta) -> ReadWait | None:
        """What this client's statement on thread `thread_id` waits on, read on another connection."""
        ...

    def schedule_page(
        self,
        filter_text: str | None = None,
        *,
        sort: str = "name",
        descending: bool = False,
        limit: int = 1000,
        now: datetime | None = None,
        where: Filter | None = None,
        counts: bool = True,
        from_end: bool = False,
    ) -> SchedulePage: ...

    def schedule_detail(self, name: str, *, now: datetime | None = None) -> ScheduleDetail: ...

    def get_schedule(self, name: str) -> ScheduleInfo: ...

    def list_queues(self) -> list[QueueRow]: ...

    def list_owners(self, now: datetime | None = None) -> list[OwnerSummary]: ...

    def plan(self, owner: str | None = None, now: datetime | None = None) -> list[OwnerPlan]: ...

    def list_audit(self, target: str | None = None, limit: int = 100) -> list[AuditEntry]: ...

    # The fire ledger (S39): jobs, one job, a schedule's verdicts, audit search.
    def jobs_page(self, where: Filter | None = None, *, limit: int = 200, now: datetime | None = None,
                  oldest: bool = False) -> JobsPage: ...

    def job_detail(self, job_id: int) -> JobDetail: ...

    def ledger_view(self, name: str, *, at: datetime | None = None, limit: int = 50,
                    now: datetime | None = None) -> LedgerView: ...

    def search_audit(self, *, operator: str | None = None, action: str | None = None, target: str | None = None,
                     since: datetime | None = None, until: datetime | None = None, limit: int = 50,
                     before_id: int | None = None, where: Filter | None = None,
                     now: datetime | None = None, oldest: bool = False) -> AuditPage: ...

    def audit_record(self, entry_id: int) -> AuditRecord: ...

    # What the CLI reads besides (Reads has the same signatures; upstream mode refuses in one
    # line those its schema has no notion of).
    def list_schedules(
        self, filter_text: str | None = None, limit: int = 100000, *, where: Filter | None = None,
        now: datetime | None = None,
    ) -> list[ScheduleRow]: ...

    def recent_fires(self, name: str, limit: int = 10) -> list[Fire]: ...

    def next_fires(self, name: str, count: int = 5, *, after: datetime | None = None) -> list[NextFire]: ...

    def definition_fires(self, schedule: Schedule, count: int = 5, *,
                         after: datetime | None = None, fired: int = 0) -> list[NextFire]:
        """The next fires a definition not yet written would have (its exclusions listed)."""
        ...

    def resume_preview(self, name: str, *, now: datetime | None = None) -> ResumePreview: ...

    def check(self, *, owner: str | None = None, schedule: str | None = None, tag: str | None = None,
              now: datetime | None = None, timeout: timedelta = CHECK_TIMEOUT) -> CheckReport: ...

    def registered_runtimes(self, hostname: str, *, now: datetime | None = None) -> list[RegisteredRuntime]: ...

    def list_jobs(self, *, schedule: str | None = None, queue: str | None = None, state: str | None = None,
                  since: datetime | None = None, limit: int = 50) -> list[JobSummary]: ...

    def ledger(self, name: str, *, since: datetime | None = None, until: datetime | None = None,
               limit: int = 50, now: datetime | None = None) -> list[Verdict]: ...

    def why(self, name: str, *, at: datetime | None = None, now: datetime | None = None) -> Why: ...

    def list_calendars(self) -> list[CalendarSummary]: ...

    def get_calendar(self, name: str) -> CalendarInfo: ...

    # Alerts (S63): deliveries (`state="open"`: the alerts still firing) and silences in force.
    def alerts(self, *, state: str | None = None, sink: str | None = None, name: str | None = None,
               limit: int = 100) -> list[AlertDelivery]: ...

    def silences(self, now: datetime | None = None) -> list[Silence]: ...


@runtime_checkable
class ActionBackend(Protocol):
    """Operator actions (the console's writer thread): awa-tui's own schema
    (actions/operator.Actions) or upstream Awa's."""

    def pause(self, name: str, *, until: datetime | timedelta | None = None, reason: str | None = None,
              operator: str | None = None, now: datetime | None = None) -> ScheduleState: ...

    def resume(self, name: str, *, operator: str | None = None) -> ScheduleState: ...

    def trigger(self, name: str, *, operator: str | None = None) -> TriggeredJob: ...

    def backfill(self, name: str, from_at: datetime, to_at: datetime, *, dry_run: bool = False,
                 max_count: int = BACKFILL_LIMIT, operator: str | None = None,
                 now: datetime | None = None) -> BackfillResult: ...

    def adopt(
        self, name: str, owner: str, *, operator: str | None = None, now: datetime | None = None
    ) -> ScheduleState: ...

    def transfer(
        self, name: str, to_owner: str, *, operator: str | None = None, now: datetime | None = None
    ) -> ScheduleState: ...

    def retire(self, name: str, *, operator: str | None = None, now: datetime | None = None) -> ScheduleState: ...

    def restore(self, name: str, *, operator: str | None = None, now: datetime | None = None) -> ScheduleState: ...

    def retire_owner(
        self, owner: str, *, operator: str | None = None, now: datetime | None = None
    ) -> OwnerChange: ...

    def restore_owner(
        self, owner: str, *, operator: str | None = None, now: datetime | None = None
    ) -> OwnerChange: ...

    def override(self, name: str, request: OverrideRequest, *, operator: str | None = None) -> ScheduleState: ...

    def reset_override(self, name: str, *, operator: str | None = None) -> ScheduleState: ...

    # Schedules made at run time (S64): a dry run checks all and writes nothing.
    def create_schedule(self, name: str, request: ScheduleRequest, *, owner: str | None = None,
                        dry_run: bool = False, operator: str | None = None) -> Schedule: ...

    def edit_schedule(self, name: str, request: ScheduleRequest, *, dry_run: bool = False,
                      operator: str | None = None) -> Schedule: ...

    def delete_schedule(self, name: str, *, dry_run: bool = False, operator: str | None = None) -> int: ...

    def queue_pause(self, queue: str, *, operator: str | None = None) -> QueueState: ...

    def queue_resume(self, queue: str, *, operator: str | None = None) -> QueueState: ...

    def queue_drain(self, queue: str, *, operator: str | None = None) -> QueueDrained: ...

    def retry_job(self, job_id: int, *, operator: str | None = None) -> JobChange: ...

    def cancel_job(self, job_id: int, *, operator: str | None = None) -> JobChange: ...

    def silence_alerts(self, name: str | None, until: datetime | timedelta, reason: str, *,
                       operator: str | None = None, now: datetime | None = None, owner: str | None = None,
                       filter: str | None = None) -> Silence: ...

    # What the CLI does besides (Actions has the same signatures).
    def bulk(
        self, action: str, names: Sequence[str] | None = None, *, where: Filter | None = None,
        owner: str | None = None, dry_run: bool = False, batch_size: int = BATCH_SIZE,
        operator: str | None = None, now: datetime | None = None,
        until: datetime | timedelta | None = None, reason: str | None = None,
    ) -> bulk_ops.BulkResult: ...

    def remove(self, name: str, *, operator: str | None = None) -> ScheduleState: ...

    def adopt_declared(
        self, owner: str, *, dry_run: bool = False, batch_size: int = BATCH_SIZE,
        operator: str | None = None, now: datetime | None = None,
    ) -> bulk_ops.BulkResult: ...

    def set_calendar(self, name: str, dates: Any, *, operator: str | None = None) -> CalendarInfo: ...

    def delete_calendar(self, name: str, *, operator: str | None = None) -> CalendarInfo: ...

    def prune_jobs(self, older_than: timedelta, *, keep: int = DEFAULT_KEEP, dry_run: bool = False,
                   operator: str | None = None, max_batches: int | None = None,
                   budget_s: float | None = None, duty: float = 1.0,
                   now: datetime | None = None) -> PruneResult: ...


@runtime_checkable
class ConsoleBackend(Protocol):
    """What the console and the CLI drive (`cli/common.make_client` returns one): a Client,
    or upstream mode's backend (engine/upstream/backend.py)."""

    dsn: str  # shown through describe_dsn only, never with its password
    read_only: bool
    operator: str  # the label the audit trail records
    features: frozenset[str]  # of FEATURES: what this backend can do
    features_note: str | None  # one line (help screen): why some FEATURES are missing; None when none is

    @property
    def reads(self) -> ReadBackend: ...

    @property
    def actions(self) -> ActionBackend: ...

    def close(self) -> None: ...
