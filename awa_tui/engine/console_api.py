"""What the console needs of an engine: one Protocol, so a key press can be followed to
its SQL by reading, and another backend (an adapter over an upstream Awa database,
awa_tui/engine/upstream/) can drive the same console by implementing it.

`Client` satisfies it (tests/test_architecture.py checks both statically and with
isinstance). Every method reads or acts in DB time unless `now` is given; every action
raises an `AwaError` with a one-line message when refused.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from awa_tui.engine.models import (
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
})
# The features only awa-tui's own schema has (docs/keys.md marks their keys).
OWN_SCHEMA_FEATURES: frozenset[str] = frozenset({"owners", "plan", "lifecycle", "ledger", "health"})


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
    ) -> SchedulePage: ...

    def schedule_detail(self, name: str, *, now: datetime | None = None) -> ScheduleDetail: ...

    def get_schedule(self, name: str) -> ScheduleInfo: ...

    def list_queues(self) -> list[QueueRow]: ...

    def list_owners(self, now: datetime | None = None) -> list[OwnerSummary]: ...

    def plan(self, owner: str | None = None, now: datetime | None = None) -> list[OwnerPlan]: ...

    def list_audit(self, target: str | None = None, limit: int = 100) -> list[AuditEntry]: ...

    # --- operator actions (the writer thread) ----------------------------------------------

    def pause(self, name: str, *, operator: str | None = None) -> ScheduleState: ...

    def resume(self, name: str, *, operator: str | None = None) -> ScheduleState: ...

    def trigger(self, name: str, *, operator: str | None = None) -> TriggeredJob: ...

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

    def queue_pause(self, queue: str, *, operator: str | None = None) -> QueueState: ...

    def queue_resume(self, queue: str, *, operator: str | None = None) -> QueueState: ...

    def queue_drain(self, queue: str, *, operator: str | None = None) -> QueueDrained: ...
