"""Every operator action on awa-tui's own schema behind one object (`client.actions`): each
method one statement handing its work to the function of this room that does it, in one
transaction that declares itself to the audit trail, labelled with the operator."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from awa_tui.engine.core import guards, limits
from awa_tui.engine.core.db import ConnectionSource
from awa_tui.engine.core.session import Room, Session

if TYPE_CHECKING:
    from awa_tui.engine.actions import backfill as backfills
    from awa_tui.engine.actions import bulk as bulk_ops
    from awa_tui.engine.actions import lifecycle, made, ops, overrides
    from awa_tui.engine.actions.backfill import BackfillResult
    from awa_tui.engine.alerts import deliver as alert_deliver
    from awa_tui.engine.alerts import outbox as alert_outbox
    from awa_tui.engine.alerts import sinks as alert_sinks
    from awa_tui.engine.alerts.models import Silence, SinkInfo, SinkRound
    from awa_tui.engine.calendars import store as calendars
    from awa_tui.engine.calendars.models import CalendarInfo
    from awa_tui.engine.ledger import jobs as ledger_jobs
    from awa_tui.engine.ledger import retention
    from awa_tui.engine.ledger.models import JobChange, PruneResult
    from awa_tui.engine.read import results
    from awa_tui.engine.read.models import OwnerChange, QueueDrained, QueueState, ScheduleState, TriggeredJob
    from awa_tui.engine.schedules.definition import Schedule
    from awa_tui.filters import Filter
else:
    backfills = Room("awa_tui.engine.actions.backfill")
    alert_deliver = Room("awa_tui.engine.alerts.deliver")
    alert_outbox = Room("awa_tui.engine.alerts.outbox")
    alert_sinks = Room("awa_tui.engine.alerts.sinks")
    bulk_ops = Room("awa_tui.engine.actions.bulk")
    lifecycle = Room("awa_tui.engine.actions.lifecycle")
    made = Room("awa_tui.engine.actions.made")
    ops = Room("awa_tui.engine.actions.ops")
    overrides = Room("awa_tui.engine.actions.overrides")
    calendars = Room("awa_tui.engine.calendars.store")
    ledger_jobs = Room("awa_tui.engine.ledger.jobs")
    retention = Room("awa_tui.engine.ledger.retention")
    results = Room("awa_tui.engine.read.results")


class Actions(Session):
    """Operator actions (the console's ActionBackend, and the CLI's). Each returns the typed
    row it left, or raises one-line `AwaError`s when refused; a read-only session refuses all
    but dry runs."""

    def __init__(self, db: ConnectionSource, *, read_only: bool, operator: str, job_retention: timedelta,
                 max_lateness: int | None = None) -> None:
        super().__init__(db, read_only=read_only, operator=operator)
        self.job_retention = job_retention  # a backfill enqueues no instant older than this
        self.max_lateness = max_lateness  # S41: of a schedule made here that declares none (the client's)

    def pause(self, name: str, *, until: datetime | timedelta | None = None, reason: str | None = None,
              operator: str | None = None, now: datetime | None = None) -> ScheduleState:
        """Pause automatic fires (S16). `until` (an instant, or a duration from now) ends the
        pause by itself, `reason` says why (S65); pausing a paused schedule with either edits them."""
        return self._op("pause", ops.pause, name, operator=operator, until=until, reason=reason, now=now,
                        model=results.ScheduleState)

    def resume(self, name: str, *, operator: str | None = None) -> ScheduleState:
        return self._op("resume", ops.resume, name, operator=operator, model=results.ScheduleState)

    def trigger(self, name: str, *, operator: str | None = None) -> TriggeredJob:
        return self._op("trigger", ops.trigger, name, operator=operator, model=results.TriggeredJob)

    def backfill(self, name: str, from_at: datetime, to_at: datetime, *, dry_run: bool = False,
                 max_count: int = limits.BACKFILL_LIMIT, operator: str | None = None,
                 now: datetime | None = None) -> BackfillResult:
        """One job per instant of [from_at, to_at] that never fired (engine/actions/backfill.py);
        a dry run only counts them (and works on a read-only client)."""
        return self._op("backfill", backfills.backfill, name, from_at, to_at, operator=operator, dry_run=dry_run,
                        max_count=max_count, now=now, horizon=self.job_retention)

    def remove(self, name: str, *, operator: str | None = None) -> ScheduleState:
        """The row as it was before it was deleted."""
        return self._op("remove", ops.remove, name, operator=operator, model=results.ScheduleState)

    def override(self, name: str, request: overrides.OverrideRequest, *,
                 operator: str | None = None) -> ScheduleState:
        """Override the expression, zone, args, queue or priority (S49); the row after."""
        return self._op("override", overrides.override, name, operator=operator, request=request,
                        model=results.ScheduleState)

    def reset_override(self, name: str, *, operator: str | None = None) -> ScheduleState:
        """Return an overridden schedule to its code definition; the row after."""
        return self._op("reset", overrides.reset, name, operator=operator, model=results.ScheduleState)

    # --- schedules made at run time (S64), an operator's: the console's form ------------------

    def create_schedule(self, name: str, request: made.ScheduleRequest, *, owner: str | None = None,
                        dry_run: bool = False, operator: str | None = None) -> Schedule:
        """Make one schedule (`request` needs cron and kind; owner: "app" unless given),
        audited; a dry run checks everything a create does (a taken name, a calendar) and
        writes nothing. The definition made."""
        return self._checked("create schedule", made.create, self.db, name, request, owner, self._label(operator),
                             self.max_lateness, dry_run=dry_run)

    def edit_schedule(self, name: str, request: made.ScheduleRequest, *, dry_run: bool = False,
                      operator: str | None = None) -> Schedule:
        """Change the settings `request` gives of a schedule made at run time (one declared
        in code is refused: overrides change those), audited; the definition after."""
        return self._checked("edit schedule", made.edit, self.db, name, request, self._label(operator),
                             self.max_lateness, dry_run=dry_run)

    def delete_schedule(self, name: str, *, dry_run: bool = False, operator: str | None = None) -> int:
        """Delete a schedule made at run time (never one declared in code), audited; its jobs
        and history stay. How many were deleted (1; 0 on a dry run's rollback too)."""
        return self._checked("delete schedule", made.delete, self.db, name, self._label(operator), dry_run=dry_run)

    def _label(self, operator: str | None) -> str:
        return self.operator if operator is None else guards.check_operator(operator)

    def adopt(self, name: str, owner: str, *, operator: str | None = None,
              now: datetime | None = None) -> ScheduleState:
        """Give an unowned schedule to `owner`; returns the schedule's state after."""
        return self._op("adopt", lifecycle.adopt, name, owner, operator=operator, now=now, model=results.ScheduleState)

    def transfer(self, name: str, to_owner: str, *, operator: str | None = None,
                 now: datetime | None = None) -> ScheduleState:
        """Move an owned schedule to another owner; voids both owners' certificates."""
        return self._op("transfer", lifecycle.transfer, name, to_owner, operator=operator, now=now,
                        model=results.ScheduleState)

    def retire(self, name: str, *, operator: str | None = None, now: datetime | None = None) -> ScheduleState:
        """Tombstone a schedule: it keeps its row, never fires, cannot be triggered."""
        return self._op("retire", lifecycle.retire, name, operator=operator, now=now, model=results.ScheduleState)

    def restore(self, name: str, *, operator: str | None = None, now: datetime | None = None) -> ScheduleState:
        """Clear a tombstone; evaluation resumes from now, nothing from the retired period."""
        return self._op("restore", lifecycle.restore, name, operator=operator, now=now, model=results.ScheduleState)

    def retire_owner(self, owner: str, *, operator: str | None = None,
                     now: datetime | None = None) -> OwnerChange:
        """Retire every active schedule of an owner: the names retired now."""
        return self._op("retire owner", lifecycle.retire_owner, owner, operator=operator, now=now,
                        model=results.OwnerChange)

    def restore_owner(self, owner: str, *, operator: str | None = None,
                      now: datetime | None = None) -> OwnerChange:
        """Restore every retired schedule of an owner: the names restored now."""
        return self._op("restore owner", lifecycle.restore_owner, owner, operator=operator, now=now,
                        model=results.OwnerChange)

    def bulk(
        self, action: str, names: Sequence[str] | None = None, *, where: Filter | None = None,
        owner: str | None = None, dry_run: bool = False, batch_size: int = limits.BATCH_SIZE,
        operator: str | None = None, now: datetime | None = None,
        until: datetime | timedelta | None = None, reason: str | None = None,
    ) -> bulk_ops.BulkResult:
        """pause/resume/trigger/retire/restore/adopt (to `owner`) every selected schedule,
        one transaction per batch; a row whose state refuses is skipped with the reason.
        A dry run reports what would be done and writes nothing (also when read-only).
        `until` and `reason` go with pause only (S65), as for one schedule."""
        return self._op(f"bulk {action}", bulk_ops.run_bulk, action, names, operator=operator, where=where,
                        owner=owner, dry_run=dry_run, batch_size=batch_size, now=now, until=until, reason=reason)

    def adopt_declared(
        self, owner: str, *, dry_run: bool = False, batch_size: int = limits.BATCH_SIZE,
        operator: str | None = None, now: datetime | None = None,
    ) -> bulk_ops.BulkResult:
        """Adopt for `owner` every unowned schedule its fresh declarations list."""
        return self._op("adopt declared", bulk_ops.adopt_declared, owner, operator=operator, dry_run=dry_run,
                        batch_size=batch_size, now=now)

    def queue_pause(self, queue: str, *, operator: str | None = None) -> QueueState:
        return self._op("queue pause", ops.queue_pause, queue, operator=operator, model=results.QueueState)

    def queue_resume(self, queue: str, *, operator: str | None = None) -> QueueState:
        return self._op("queue resume", ops.queue_resume, queue, operator=operator, model=results.QueueState)

    def queue_drain(self, queue: str, *, operator: str | None = None) -> QueueDrained:
        return self._op("queue drain", ops.queue_drain, queue, operator=operator, model=results.QueueDrained)

    def set_calendar(self, name: str, dates: Any, *, operator: str | None = None) -> CalendarInfo:
        """Create or replace calendar `name`: dates and inclusive (start, end) date pairs
        (`calendars/files.parse_dates` reads them from a file). Audited."""
        return self._op("calendar set", calendars.set_calendar_dates, name, dates, operator=operator)  # type: ignore[no-any-return]

    def delete_calendar(self, name: str, *, operator: str | None = None) -> CalendarInfo:
        """Delete calendar `name`; refused while a schedule names it. Audited."""
        return self._op("calendar delete", calendars.delete_calendar, name, operator=operator)  # type: ignore[no-any-return]

    def add_alert_sink(self, name: str, kind: str, *, route: str = "all", url: str | None = None,
                       url_env: str | None = None, url_file: str | None = None, key_env: str | None = None,
                       key_file: str | None = None, channel: str | None = None,
                       operator: str | None = None) -> SinkInfo:
        """Add an alert sink (S63); its secrets are named (env:, file:) or a URL stored and
        masked in every read. Audited."""
        return self._op("alert sink add", alert_sinks.add_sink, name, kind, operator=operator, route=route,  # type: ignore[no-any-return]
                        url=url, url_env=url_env, url_file=url_file, key_env=key_env, key_file=key_file,
                        channel=channel)

    def remove_alert_sink(self, name: str, *, operator: str | None = None) -> SinkInfo:
        """Remove an alert sink with the deliveries it still had to make. Audited."""
        return self._op("alert sink remove", alert_sinks.remove_sink, name, operator=operator)  # type: ignore[no-any-return]

    def silence_alerts(self, name: str | None, until: datetime | timedelta, reason: str, *,
                       operator: str | None = None, now: datetime | None = None, owner: str | None = None,
                       filter: str | None = None) -> Silence:
        """Silence the alerts of schedule `name`, or of owner `owner`'s schedules, or of the
        schedules `filter` selects (exactly one) until `until`, with a reason. Audited."""
        return self._op("alert silence", alert_outbox.silence, name, until, reason, operator=operator,  # type: ignore[no-any-return]
                        now=now, owner=owner, filter=filter)

    def test_alert_sink(self, name: str, *, operator: str | None = None) -> SinkRound:
        """Send a test alert to sink `name` now (no outbox row; through the audit gate; a failure is one line)."""
        return self._op("alert test", alert_deliver.send_test, name, operator=operator)  # type: ignore[no-any-return]

    def retry_job(self, job_id: int, *, operator: str | None = None) -> JobChange:
        return self._op("retry job", ledger_jobs.retry_job, job_id, operator=operator)  # type: ignore[no-any-return]

    def cancel_job(self, job_id: int, *, operator: str | None = None) -> JobChange:
        return self._op("cancel job", ledger_jobs.cancel_job, job_id, operator=operator)  # type: ignore[no-any-return]

    def prune_jobs(self, older_than: timedelta, *, keep: int = limits.DEFAULT_KEEP, dry_run: bool = False,
                   operator: str | None = None, max_batches: int | None = None,
                   budget_s: float | None = None, duty: float = 1.0,
                   now: datetime | None = None) -> PruneResult:
        """Delete finished jobs older than `older_than`, keeping each schedule's last `keep`.
        With `operator` (the CLI) it is an audited operator action; the leader's own
        housekeeping passes none."""
        return self._write("prune jobs", retention.prune_jobs, older_than, keep=keep, now=now, dry_run=dry_run,
                           max_batches=max_batches, budget_s=budget_s, duty=duty, operator=operator)
