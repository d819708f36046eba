"""The reads of awa-tui's own schema, for the console and the CLI: every read model
behind one object (`client.reads`), each method one statement handing its work to the room
that reads it, on a pooled connection. The rooms load on first use, so a command pays only
for what it reads."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from awa_tui.engine.core import limits
from awa_tui.engine.core.db import ConnectionSource
from awa_tui.engine.core.session import Room, Session

if TYPE_CHECKING:
    from awa_tui.engine import migrations
    from awa_tui.engine.actions import ops
    from awa_tui.engine.alerts import outbox as alert_outbox
    from awa_tui.engine.alerts import sinks as alert_sinks
    from awa_tui.engine.alerts.models import AlertDelivery, Silence, SinkInfo
    from awa_tui.engine.alerts.outbox import SinkBacklog
    from awa_tui.engine.calendars import store as calendars
    from awa_tui.engine.calendars.models import CalendarInfo, CalendarSummary
    from awa_tui.engine.core import standby
    from awa_tui.engine.core.standby import ServerRole
    from awa_tui.engine.firing import preview
    from awa_tui.engine.firing.preview import ResumePreview
    from awa_tui.engine.health import attention
    from awa_tui.engine.health import bounded as health_bounded
    from awa_tui.engine.health import check as health_check
    from awa_tui.engine.health.models import CheckReport, ConsoleAttention, RegisteredRuntime, Transition
    from awa_tui.engine.ledger import jobs as ledger_jobs
    from awa_tui.engine.ledger import trail, verdicts
    from awa_tui.engine.ledger import why as ledger_why
    from awa_tui.engine.ledger.models import (
        AuditPage,
        JobDetail,
        JobsPage,
        JobSummary,
        LastResult,
        LedgerView,
        Verdict,
        Why,
    )
    from awa_tui.engine.ownership import reconcile
    from awa_tui.engine.read import audit, blockers, events, page, views
    from awa_tui.engine.read.fleet import Leadership, ReadWait, RuntimeEvents
    from awa_tui.engine.read.models import (
        AuditEntry,
        AuditRecord,
        Fire,
        NextFire,
        OwnerPlan,
        OwnerSummary,
        QueueRow,
        RuntimeRow,
        ScheduleDetail,
        ScheduleInfo,
        SchedulePage,
        ScheduleRow,
    )
    from awa_tui.engine.schedules.definition import Schedule
    from awa_tui.filters import Filter
else:
    migrations = Room("awa_tui.engine.migrations")
    alert_outbox = Room("awa_tui.engine.alerts.outbox")
    alert_sinks = Room("awa_tui.engine.alerts.sinks")
    ops = Room("awa_tui.engine.actions.ops")
    events = Room("awa_tui.engine.read.events")
    calendars = Room("awa_tui.engine.calendars.store")
    standby = Room("awa_tui.engine.core.standby")
    preview = Room("awa_tui.engine.firing.preview")
    health_bounded = Room("awa_tui.engine.health.bounded")
    health_check = Room("awa_tui.engine.health.check")
    ledger_jobs = Room("awa_tui.engine.ledger.jobs")
    trail = Room("awa_tui.engine.ledger.trail")
    verdicts = Room("awa_tui.engine.ledger.verdicts")
    ledger_why = Room("awa_tui.engine.ledger.why")
    reconcile = Room("awa_tui.engine.ownership.reconcile")
    attention = Room("awa_tui.engine.health.attention")
    audit = Room("awa_tui.engine.read.audit")
    blockers = Room("awa_tui.engine.read.blockers")
    page = Room("awa_tui.engine.read.page")
    views = Room("awa_tui.engine.read.views")


class Reads(Session):
    """Read models of awa-tui's own schema (the console's ReadBackend, and the CLI's)."""

    def __init__(self, db: ConnectionSource, *, read_only: bool, operator: str, catch_up_limit: int) -> None:
        super().__init__(db, read_only=read_only, operator=operator)
        self.catch_up_limit = catch_up_limit  # of a resume preview: what resuming would fire

    def check_schema(self) -> int:
        return self._read(migrations.check_version)

    def check(self, *, owner: str | None = None, schedule: str | None = None, tag: str | None = None,
              now: datetime | None = None, timeout: timedelta = limits.CHECK_TIMEOUT) -> CheckReport:
        """`awa-tui check` (S43): unhealthy schedules and fleet problems, with the exit code;
        CheckTimedOut (naming the session in the way) when it cannot read within `timeout`."""
        return health_bounded.check_within(self.db, timeout, owner=owner, schedule=schedule, tag=tag, now=now)

    def registered_runtimes(self, hostname: str, *, now: datetime | None = None) -> list[RegisteredRuntime]:
        """`awa-tui check --registered`: the runtimes on `hostname` with a fresh snapshot."""
        return self._read(health_check.registered, hostname, now)

    def alert_sinks(self) -> list[SinkInfo]:
        """The alert sinks (S63), their secrets masked."""
        return self._read(alert_sinks.list_sinks)

    def alerts(self, *, state: str | None = None, sink: str | None = None, name: str | None = None,
               limit: int = 100) -> list[AlertDelivery]:
        """Alert deliveries, newest first: open, pending, failing, delivered, silenced, unrouted."""
        return self._read(alert_outbox.list_alerts, state=state, sink=sink, name=name, limit=limit)

    def alert_backlog(self) -> list[SinkBacklog]:
        """Per sink, the deliveries not yet made and those failing."""
        return self._read(alert_outbox.backlog)

    def silences(self, now: datetime | None = None) -> list[Silence]:
        """The alert silences in force."""
        return self._read(alert_outbox.silences, now)

    def health_history(self, name: str, limit: int = 20) -> list[Transition]:
        """A schedule's health transitions, newest first."""
        return self._read(health_check.transitions, name, limit=limit)

    def plan(self, owner: str | None = None, now: datetime | None = None) -> list[OwnerPlan]:
        """Preview of reconciliation per owner, from one snapshot, changing nothing (S34).

        See `awa_tui.engine.ownership.reconcile.plan` for what each part means (inserts,
        updates, retirements, conflicts, blockers with code and message, agreement clock).
        """
        return self._read(reconcile.owner_plans, owner, now)

    def list_owners(self, now: datetime | None = None) -> list[OwnerSummary]:
        """One summary per owner; see `awa_tui.engine.ownership.reconcile.list_owners`."""
        return self._read(reconcile.owner_summaries, now)

    def list_calendars(self) -> list[CalendarSummary]:
        return self._read(calendars.list_calendars)

    def get_calendar(self, name: str) -> CalendarInfo:
        return self._read(calendars.show_calendar, name)

    def list_schedules(
        self, filter_text: str | None = None, limit: int = 100000, *, where: Filter | None = None,
        now: datetime | None = None,
    ) -> list[ScheduleRow]:
        """Schedules in name order; `where` is a parsed filter (awa_tui/filters.py)."""
        return self._read(views.list_schedules, filter_text=filter_text, limit=limit, where=where, now=now)

    def get_schedule(self, name: str) -> ScheduleInfo:
        return self._read(views.get_schedule, name)

    def next_fires(self, name: str, count: int = 5, *, after: datetime | None = None) -> list[NextFire]:
        return self._read(views.next_fires, name, count, after=after)

    def definition_fires(self, schedule: Schedule, count: int = 5, *,
                         after: datetime | None = None, fired: int = 0) -> list[NextFire]:
        """The next fires a definition would have (a dry run of `cron create`/`edit`; `fired`:
        the scheduled fires an edited one has made, which its max_fires counts); reads only."""
        return self._read(views.definition_fires, schedule, count, after=after, fired=fired)

    def resume_preview(self, name: str, *, now: datetime | None = None) -> ResumePreview:
        """What resuming the paused schedule `name` would fire now (DB time when omitted),
        by this client's catch-up cap; reads only."""
        return self._read(preview.resume_preview, name, now, catch_up_limit=self.catch_up_limit)

    def recent_fires(self, name: str, limit: int = 10) -> list[Fire]:
        return self._read(views.recent_fires, name, limit)

    def list_queues(self) -> list[QueueRow]:
        return self._read(views.list_queues)

    def list_runtimes(self, now: datetime | None = None) -> list[RuntimeRow]:
        """Runtime snapshots; `role` (leader / stalled / follower) is the leader lock's
        holder's (pg_locks), `is_leader` what the snapshot last reported."""
        return self._read(views.list_runtimes, now)

    def runtime_events(self, instance_id: str, now: datetime | None = None) -> RuntimeEvents | None:
        """One runtime's recent events, newest first (None: no snapshot row has that id)."""
        return self._read(events.runtime_events, instance_id, now)

    def leadership(self, now: datetime | None = None) -> Leadership:
        """Who holds the leader lock, and whether its lease has expired (STALLED)."""
        return self._read(views.leadership, now)

    def console_attention(self, now: datetime, *, unserved: bool) -> ConsoleAttention:
        """What the console's ATTENTION line says on every panel besides the leader lock (S75):
        the worst unhealthy schedule and, when `unserved`, the kinds no live runtime runs."""
        return self._read(attention.console_attention, now, unserved=unserved)

    def read_wait(self, thread_id: int, bound: timedelta) -> ReadWait | None:
        """What the statement thread `thread_id` runs on this client's connections waits on,
        read on another connection within `bound` (S75); None when that thread holds none."""
        return blockers.thread_wait(self.db, thread_id, bound)

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
    ) -> SchedulePage:
        """One filtered, sorted page of schedules with counts (the console's schedules panel;
        None without `counts`); `where` is a parsed filter (awa_tui/filters.py) on top of the
        free text; `from_end`: the last `limit` rows of that order instead of the first."""
        return self._read(views.schedule_page,
                          page.PageQuery(filter_text, sort, descending, limit, now, where, counts, from_end))

    def schedule_detail(self, name: str, *, now: datetime | None = None) -> ScheduleDetail:
        """Definition, next fires, recent fires and audit entries of one schedule."""
        return self._read(views.schedule_detail, name, now=now)

    def list_audit(self, target: str | None = None, limit: int = 100) -> list[AuditEntry]:
        return self._read(views.list_audit, target=target, limit=limit)

    def list_jobs(self, *, schedule: str | None = None, queue: str | None = None, state: str | None = None,
                  since: datetime | None = None, limit: int = 50) -> list[JobSummary]:
        """Recent jobs, newest first; `since` bounds created_at."""
        return self._read(ledger_jobs.list_jobs, schedule=schedule, queue=queue, state=state, since=since,
                          limit=limit)

    def jobs_page(self, where: Filter | None = None, *, limit: int = 200, now: datetime | None = None,
                  oldest: bool = False) -> JobsPage:
        """The console's jobs panel: the newest `limit` jobs matching a jobs filter (`oldest`:
        the oldest `limit`, the end of the list)."""
        return self._read(ledger_jobs.jobs_page, where, limit=limit, now=now, oldest=oldest)

    def job_detail(self, job_id: int) -> JobDetail:
        """One job with every failed attempt (error, traceback tail, timing, runtime)."""
        return self._read(ledger_jobs.job_detail, job_id)

    def last_results(self, names: list[str] | None = None) -> dict[str, LastResult]:
        """Per schedule: ok, failed, running, waiting, cancelled or none (its latest job)."""
        return self._read(ledger_jobs.last_results, names)

    def fails_24h(self, now: datetime | None = None) -> dict[str, int]:
        """Per schedule, jobs of the last 24 hours whose latest attempt failed."""
        return self._read(ledger_jobs.fails_24h, now)

    def ledger(self, name: str, *, since: datetime | None = None, until: datetime | None = None,
               limit: int = 50, now: datetime | None = None) -> list[Verdict]:
        """Verdicts of the last `limit` due instants in [since, until], oldest first."""
        return self._read(verdicts.ledger, name, since=since, until=until, limit=limit, now=now)

    def outcome_strip(self, name: str, *, count: int = 20, now: datetime | None = None) -> list[Verdict]:
        return self._read(verdicts.outcome_strip, name, count=count, now=now)

    def why(self, name: str, *, at: datetime | None = None, now: datetime | None = None) -> Why:
        """One paragraph on the last due instant (or the one at or before `at`)."""
        return self._read(ledger_why.why, name, at=at, now=now)

    def ledger_view(self, name: str, *, at: datetime | None = None, limit: int = 50,
                    now: datetime | None = None) -> LedgerView:
        """The console's schedule detail: the last `limit` verdicts and the `why` of `at`."""
        return self._read(ledger_why.ledger_view, name, at=at, limit=limit, now=now)

    def search_audit(self, *, operator: str | None = None, action: str | None = None, target: str | None = None,
                     since: datetime | None = None, until: datetime | None = None, limit: int = 50,
                     before_id: int | None = None, where: Filter | None = None,
                     now: datetime | None = None, oldest: bool = False) -> AuditPage:
        return self._read(trail.search_audit, operator=operator, action=action, target=target, since=since,
                          until=until, limit=limit, before_id=before_id, where=where, now=now, oldest=oldest)

    def audit_record(self, entry_id: int) -> AuditRecord:
        """One audit entry in full, with the session that wrote it (the console's audit detail)."""
        return self._read(audit.audit_record, entry_id)

    def server_role(self) -> ServerRole:
        """The server this client reads from: a primary, or a standby and its replay lag (S58)."""
        return self._read(standby.server_role)

    def db_time(self) -> datetime:
        return self._read(views.db_time)

    def audit_gap(self) -> str | None:
        """awa-tui's own schema audits every operator action in the same transaction."""
        return None

    def write_refusal(self) -> str | None:
        """Why operator actions would be refused here (read-only client, SELECT-only role,
        standby), as one line; None when they can run."""
        return "this client is read-only" if self.read_only else self._read(ops.write_refusal)
