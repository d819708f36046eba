"""The operator actions of upstream mode (ActionBackend over UpstreamAdapter), for the
console and the CLI: what upstream's own leader and workers honour (pause / resume a
schedule, trigger, pause / resume a queue), each returning awa-tui's own result model with
whether awa-tui's audit trail recorded it; the rest is refused in one line (refusal.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NoReturn

from awa_tui.engine.actions import bulk as bulk_ops
from awa_tui.engine.actions.backfill import BackfillResult
from awa_tui.engine.actions.bulk import BulkResult, Skipped
from awa_tui.engine.actions.overrides import OverrideRequest
from awa_tui.engine.calendars.models import CalendarInfo
from awa_tui.engine.core.errors import Conflict, NotFound
from awa_tui.engine.core.limits import BACKFILL_LIMIT, BATCH_SIZE, DEFAULT_KEEP
from awa_tui.engine.ledger.models import JobChange, PruneResult
from awa_tui.engine.read.models import OwnerChange, QueueDrained, QueueState, ScheduleState, TriggeredJob
from awa_tui.engine.upstream import models as up
from awa_tui.engine.upstream.adapter import UpstreamAdapter
from awa_tui.engine.upstream.reads import UpstreamReads
from awa_tui.engine.upstream.refusal import refuse
from awa_tui.filters import Filter

if TYPE_CHECKING:
    from awa_tui.engine.actions.made import ScheduleRequest
    from awa_tui.engine.alerts.models import Silence
    from awa_tui.engine.schedules.definition import Schedule


class UpstreamActions:
    """ActionBackend on an upstream Awa database (tests/test_architecture.py checks the
    signatures). `on_unaudited` is told each action awa-tui's audit trail did not record
    (the CLI warns on stderr; the console says so in its dialogs beforehand)."""

    def __init__(self, adapter: UpstreamAdapter, reads: UpstreamReads, *, operator: str,
                 on_unaudited: Callable[[up.ActionOutcome], None] | None = None) -> None:
        self.adapter = adapter
        self.reads = reads
        self.operator = operator
        self.on_unaudited = on_unaudited

    def _who(self, operator: str | None) -> str:
        return self.operator if operator is None else operator

    def _done(self, outcome: up.ActionOutcome) -> up.ActionOutcome:
        if not outcome.audited and self.on_unaudited is not None:
            self.on_unaudited(outcome)
        return outcome

    def _refuse(self, method: str, what: str | None = None) -> NoReturn:
        refuse(method, self.adapter.info().version, what)

    # --- what upstream's leader and workers honour -------------------------------------------

    def pause(self, name: str, *, until: datetime | timedelta | None = None, reason: str | None = None,
              operator: str | None = None, now: datetime | None = None) -> ScheduleState:
        if until is not None or reason is not None:  # S65: upstream's leader knows no pause end
            self._refuse("pause", "a pause with an end or a reason needs")
        return self._state(name, self._done(self.adapter.pause(name, self._who(operator))))

    def resume(self, name: str, *, operator: str | None = None) -> ScheduleState:
        return self._state(name, self._done(self.adapter.resume(name, self._who(operator))))

    def trigger(self, name: str, *, operator: str | None = None) -> TriggeredJob:
        done = self._done(self.adapter.trigger(name, self._who(operator)))
        job = done.job
        assert job is not None  # a trigger always says what it wrote
        return up.UpstreamTriggeredJob(id=job.id, kind=job.kind, queue=job.queue, state=job.state,
                                       metadata=job.metadata, created_at=job.created_at, name=name,
                                       audited=done.audited, audit_id=done.audit_id)

    def queue_pause(self, queue: str, *, operator: str | None = None) -> QueueState:
        return self._queue_state(queue, self._done(self.adapter.queue_pause(queue, self._who(operator))))

    def queue_resume(self, queue: str, *, operator: str | None = None) -> QueueState:
        return self._queue_state(queue, self._done(self.adapter.queue_resume(queue, self._who(operator))))

    def _state(self, name: str, done: up.ActionOutcome) -> up.UpstreamScheduleState:
        shown = self.adapter.show(name, count=0, recent=0)
        s = shown.schedule
        return up.UpstreamScheduleState(
            name=s.name, cron_expr=s.cron_expr, timezone=s.timezone, kind=s.kind, queue=s.queue, args=shown.args,
            priority=s.priority, max_attempts=s.max_attempts, tags=list(shown.tags), metadata=shown.metadata,
            missed_fire_policy=s.missed_fire_policy, last_enqueued_at=s.last_enqueued_at, paused_at=s.paused_at,
            paused_by=s.paused_by, owner=None, retired_at=None, retired_by=None, state=s.state,
            queue_paused=s.queue_paused, next_fire_at=s.next_fire, next_fire_mark=s.next_fire_mark,
            created_at=s.created_at, updated_at=s.updated_at, problem=s.problem, audited=done.audited,
            audit_id=done.audit_id,
        )

    def _queue_state(self, queue: str, done: up.ActionOutcome) -> up.UpstreamQueueState:
        row = next(q for q in self.adapter.queues() if q.queue == queue)  # the action just wrote it
        return up.UpstreamQueueState(queue=queue, paused=row.paused, paused_at=row.paused_at,
                                     paused_by=row.paused_by, audited=done.audited, audit_id=done.audit_id)

    def bulk(
        self, action: str, names: Sequence[str] | None = None, *, where: Filter | None = None,
        owner: str | None = None, dry_run: bool = False, batch_size: int = BATCH_SIZE,
        operator: str | None = None, now: datetime | None = None,
        until: datetime | timedelta | None = None, reason: str | None = None,
    ) -> bulk_ops.BulkResult:
        """pause / resume / trigger each selected schedule as the single action does (its own
        transaction, audited as a single action); one refused is skipped with its reason."""
        single: dict[str, Callable[[str], Any]] = {
            "pause": lambda n: self.pause(n, operator=operator),
            "resume": lambda n: self.resume(n, operator=operator),
            "trigger": lambda n: self.trigger(n, operator=operator),
        }
        if until is not None or reason is not None:  # S65: upstream's leader knows no pause end
            self._refuse("bulk", "a pause with an end or a reason needs")
        if action not in single:
            self._refuse(action, BULK_NEEDS.get(action, f"bulk {action} needs"))
        chosen = sorted(set(names or ())) if where is None else [
            r.name for r in self.reads.list_schedules(where=where, now=now)]
        done: list[str] = []
        skipped: list[Skipped] = []
        job_ids: dict[str, int] = {}
        for name in chosen:
            if dry_run:
                done.append(name)
                continue
            try:
                result = single[action](name)
            except (Conflict, NotFound) as exc:
                skipped.append(Skipped(name, exc.message))
                continue
            done.append(name)
            if isinstance(result, TriggeredJob):
                job_ids[name] = result.id
        return BulkResult(action=action, done=tuple(done), skipped=tuple(skipped), dry_run=dry_run,
                          batches=len(done), job_ids=job_ids)

    # --- what upstream's schema has no notion of ---------------------------------------------

    def adopt(self, name: str, owner: str, *, operator: str | None = None,
              now: datetime | None = None) -> ScheduleState:
        self._refuse("adopt")

    def transfer(self, name: str, to_owner: str, *, operator: str | None = None,
                 now: datetime | None = None) -> ScheduleState:
        self._refuse("transfer")

    def retire(self, name: str, *, operator: str | None = None, now: datetime | None = None) -> ScheduleState:
        self._refuse("retire")

    def restore(self, name: str, *, operator: str | None = None, now: datetime | None = None) -> ScheduleState:
        self._refuse("restore")

    def retire_owner(self, owner: str, *, operator: str | None = None,
                     now: datetime | None = None) -> OwnerChange:
        self._refuse("retire_owner")

    def restore_owner(self, owner: str, *, operator: str | None = None,
                      now: datetime | None = None) -> OwnerChange:
        self._refuse("restore_owner")

    def adopt_declared(
        self, owner: str, *, dry_run: bool = False, batch_size: int = BATCH_SIZE,
        operator: str | None = None, now: datetime | None = None,
    ) -> bulk_ops.BulkResult:
        self._refuse("adopt_declared")

    def remove(self, name: str, *, operator: str | None = None) -> ScheduleState:
        self._refuse("remove")

    def queue_drain(self, queue: str, *, operator: str | None = None) -> QueueDrained:
        self._refuse("queue_drain")

    def retry_job(self, job_id: int, *, operator: str | None = None) -> JobChange:
        self._refuse("retry_job")

    def cancel_job(self, job_id: int, *, operator: str | None = None) -> JobChange:
        self._refuse("cancel_job")

    def silence_alerts(self, name: str | None, until: datetime | timedelta, reason: str, *,
                       operator: str | None = None, now: datetime | None = None, owner: str | None = None,
                       filter: str | None = None) -> Silence:
        self._refuse("silence_alerts")

    def backfill(self, name: str, from_at: datetime, to_at: datetime, *, dry_run: bool = False,
                 max_count: int = BACKFILL_LIMIT, operator: str | None = None,
                 now: datetime | None = None) -> BackfillResult:
        self._refuse("backfill")

    def override(self, name: str, request: OverrideRequest, *, operator: str | None = None) -> ScheduleState:
        self._refuse("override")

    def reset_override(self, name: str, *, operator: str | None = None) -> ScheduleState:
        self._refuse("reset_override")

    def create_schedule(self, name: str, request: ScheduleRequest, *, owner: str | None = None,
                        dry_run: bool = False, operator: str | None = None) -> Schedule:
        self._refuse("create_schedule", _replace_needs(request))

    def edit_schedule(self, name: str, request: ScheduleRequest, *, dry_run: bool = False,
                      operator: str | None = None) -> Schedule:
        self._refuse("edit_schedule", _replace_needs(request))

    def delete_schedule(self, name: str, *, dry_run: bool = False, operator: str | None = None) -> int:
        self._refuse("delete_schedule")

    def set_calendar(self, name: str, dates: Any, *, operator: str | None = None) -> CalendarInfo:
        self._refuse("set_calendar")

    def delete_calendar(self, name: str, *, operator: str | None = None) -> CalendarInfo:
        self._refuse("delete_calendar")

    def prune_jobs(self, older_than: timedelta, *, keep: int = DEFAULT_KEEP, dry_run: bool = False,
                   operator: str | None = None, max_batches: int | None = None,
                   budget_s: float | None = None, duty: float = 1.0,
                   now: datetime | None = None) -> PruneResult:
        self._refuse("prune_jobs")


def _replace_needs(request: ScheduleRequest) -> str | None:
    """The overlap policy replace (cancelling the previous fire's job) is refused by its own
    name: upstream Awa's cron has no notion of it."""
    return "the overlap policy replace needs" if request.overlap == "replace" else None


# A bulk action upstream cannot do, refused with the single action's words.
BULK_NEEDS = {"retire": "retiring a schedule needs", "restore": "restoring a schedule needs", "adopt": "owners need"}
