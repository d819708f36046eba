"""What the console needs of an engine: one Protocol, so a key press can be followed to
its SQL by reading, and another backend (an adapter over an upstream Awa database,
awa_tui/engine/upstream/) can drive the same console by implementing it.

`Client` satisfies it (tests/test_architecture.py checks both statically and with
isinstance). Every method reads or acts in DB time unless `now` is given; every action
raises an `AwaError` with a one-line message when refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from awa_tui.engine.limits import BACKFILL_LIMIT

# The read models are named for type checkers only: the Client takes FEATURES from here
# at import, and must not load every model to do so (issue 18).
if TYPE_CHECKING:
    from datetime import datetime

    from awa_tui.engine.firing.backfill import BackfillResult
    from awa_tui.engine.ledger.models import AuditPage, JobChange, JobDetail, JobsPage, LedgerView
    from awa_tui.engine.read.models import (
        AuditEntry,
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
        ScheduleState,
        TriggeredJob,
    )
    from awa_tui.engine.runtime.leader import Leadership
    from awa_tui.engine.schedules.overrides import OverrideRequest
    from awa_tui.engine.standby import ServerRole
    from awa_tui.filters import Filter

# Features a backend may lack. The key map marks each key that needs one (keymap.Act.needs);
# the console leaves a key whose feature its backend lacks out of the footer, help and
# palette, so such a Protocol method is never called. Upstream Awa (engine/upstream/console.py)
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
})
# The features only awa-tui's own schema has (docs/keys.md marks their keys).
OWN_SCHEMA_FEATURES: frozenset[str] = frozenset({"owners", "plan", "lifecycle", "ledger", "health", "backfill",
                                                  "override"})


@runtime_checkable
class ConsoleBackend(Protocol):
    dsn: str  # shown through describe_dsn only, never with its password
    read_only: bool
    operator: str  # the label the audit trail records
    features: frozenset[str]  # of FEATURES: what this backend can do
    features_note: str | None  # one line (help screen): why some FEATURES are missing; None when none is

    def close(self) -> None: ...

    # --- reads (the reader thread) ---------------------------------------------------------

    def db_time(self) -> datetime: ...

    def write_refusal(self) -> str | None: ...

    def server_role(self) -> ServerRole:
        """The server read from: a primary, or a hot standby and its replay lag."""
        ...

    def audit_gap(self) -> str | None:
        """Why operator actions would NOT be audited (one line), or None when they are."""
        ...

    def list_runtimes(self, now: datetime | None = None) -> list[RuntimeRow]: ...

    def leadership(self, now: datetime | None = None) -> Leadership: ...

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
    ) -> SchedulePage: ...

    def schedule_detail(self, name: str, *, now: datetime | None = None) -> ScheduleDetail: ...

    def get_schedule(self, name: str) -> ScheduleInfo: ...

    def list_queues(self) -> list[QueueRow]: ...

    def list_owners(self, now: datetime | None = None) -> list[OwnerSummary]: ...

    def plan(self, owner: str | None = None, now: datetime | None = None) -> list[OwnerPlan]: ...

    def list_audit(self, target: str | None = None, limit: int = 100) -> list[AuditEntry]: ...

    # The fire ledger (issue 13): jobs, one job, a schedule's verdicts, audit search.
    def jobs_page(self, where: Filter | None = None, *, limit: int = 200, now: datetime | None = None) -> JobsPage: ...

    def job_detail(self, job_id: int) -> JobDetail: ...

    def ledger_view(self, name: str, *, at: datetime | None = None, limit: int = 50,
                    now: datetime | None = None) -> LedgerView: ...

    def search_audit(self, *, operator: str | None = None, action: str | None = None, target: str | None = None,
                     since: datetime | None = None, until: datetime | None = None, limit: int = 50,
                     before_id: int | None = None, where: Filter | None = None,
                     now: datetime | None = None) -> AuditPage: ...

    # --- operator actions (the writer thread) ----------------------------------------------

    def pause(self, name: str, *, operator: str | None = None) -> ScheduleState: ...

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

    def queue_pause(self, queue: str, *, operator: str | None = None) -> QueueState: ...

    def queue_resume(self, queue: str, *, operator: str | None = None) -> QueueState: ...

    def queue_drain(self, queue: str, *, operator: str | None = None) -> QueueDrained: ...

    def retry_job(self, job_id: int, *, operator: str | None = None) -> JobChange: ...

    def cancel_job(self, job_id: int, *, operator: str | None = None) -> JobChange: ...
