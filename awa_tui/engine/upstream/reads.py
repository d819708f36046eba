"""The reads of upstream mode (ReadBackend over UpstreamAdapter), for the console and the CLI.

An upstream schedule becomes awa-tui's own read model (engine/read/models.py) with no owner,
no tombstone and no fault; a runtime snapshot a RuntimeRow, a queue a QueueRow, each with
what upstream says besides (upstream/models.py). What upstream has no notion of (owners,
the plan, the fire ledger, runtime health, calendars) is refused in one line (refusal.py).

Upstream's leader is judged from its runtime snapshots (leader flag, and upstream's own
staleness rule as the lease), not from a lock of awa-tui's: upstream takes none of ours.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NoReturn
from uuid import UUID

from awa_tui.engine.calendars.models import CalendarInfo, CalendarSummary
from awa_tui.engine.core.errors import NotFound, ValidationError
from awa_tui.engine.core.limits import CHECK_TIMEOUT
from awa_tui.engine.core.standby import ServerRole
from awa_tui.engine.cron.expression import parse_timezone, upcoming_fires
from awa_tui.engine.firing.preview import ResumePreview
from awa_tui.engine.health.models import CheckReport, RegisteredRuntime
from awa_tui.engine.ledger.models import (
    AuditEntry,
    AuditPage,
    JobDetail,
    JobsPage,
    JobSummary,
    LedgerView,
    Verdict,
    Why,
)
from awa_tui.engine.read.fleet import Leadership, ReadWait, RuntimeEvents
from awa_tui.engine.read.models import (
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
    SchedulePageRow,
    ScheduleRow,
)
from awa_tui.engine.upstream import models as up
from awa_tui.engine.upstream.adapter import UpstreamAdapter
from awa_tui.engine.upstream.refusal import refuse
from awa_tui.filters import GRAMMARS, TIME_FIELDS, Filter, Term, value_pattern
from awa_tui.instants import parse_point

if TYPE_CHECKING:
    from awa_tui.engine.alerts.models import AlertDelivery, Silence
    from awa_tui.engine.health.models import ConsoleAttention
    from awa_tui.engine.schedules.definition import Schedule

# The schedules panel's sorts (views.SCHEDULE_SORTS), over read models.
STATE_ORDER = {"retired": 0, "paused": 1, "active": 2}
SORT_KEYS: dict[str, Callable[[SchedulePageRow], Any]] = {
    "name": lambda r: r.name,
    "next": lambda r: r.next_fire,
    "last": lambda r: r.last_enqueued_at,
    "state": lambda r: STATE_ORDER[r.state],
    "queue": lambda r: r.queue,
    "owner": lambda r: r.owner,
}
AUDIT_SCAN = 10_000  # entries of upstream mode's own audit read for one search (newest first)


class UpstreamReads:
    """ReadBackend on an upstream Awa database (tests/test_architecture.py checks the signatures)."""

    def __init__(self, adapter: UpstreamAdapter) -> None:
        self.adapter = adapter

    def _refuse(self, method: str) -> NoReturn:
        refuse(method, self.adapter.info().version)

    # --- the database ---------------------------------------------------------------------

    def db_time(self) -> datetime:
        return self.adapter.db_time()

    def write_refusal(self) -> str | None:
        return self.adapter.write_refusal()

    def server_role(self) -> ServerRole:
        return self.adapter.server_role()

    def audit_gap(self) -> str | None:
        return None if self.adapter.audited() else AUDIT_GAP

    # --- schedules ------------------------------------------------------------------------

    def list_schedules(
        self, filter_text: str | None = None, limit: int = 100000, *, where: Filter | None = None,
        now: datetime | None = None,
    ) -> list[ScheduleRow]:
        """Schedules in name order; the filter grammar is the console's (in memory: upstream
        has no hint columns to compile against)."""
        text = Term("text", "", filter_text) if filter_text else None
        rows: list[ScheduleRow] = []
        for s in self.adapter.list_schedules(now):
            row = schedule_row(s)
            if matches(where, row, s.tags) and (text is None or holds(text, row, s.tags)):
                rows.append(row)
        return rows[:limit]

    def schedule_page(
        self, filter_text: str | None = None, *, sort: str = "name", descending: bool = False, limit: int = 1000,
        now: datetime | None = None, where: Filter | None = None, counts: bool = True, from_end: bool = False,
    ) -> SchedulePage:
        # `counts` is accepted and ignored: the counts come with the list, read whole here.
        if sort not in SORT_KEYS:
            raise ValidationError(f"sort: expected one of {', '.join(SORT_KEYS)}, got {sort!r}")
        if where and where.panel != "schedules":
            raise ValidationError(f"filter: a {where.panel} filter cannot select schedules")
        at = now or self.db_time()
        last = self.adapter.last_fires()
        schedules = self.adapter.list_schedules(at)
        tags = {s.name: s.tags for s in schedules}
        everything = [page_row(s, last.get(s.name)) for s in schedules]
        text = Term("text", "", filter_text) if filter_text else None
        chosen = [r for r in everything
                  if matches(where, r, tags[r.name]) and (text is None or holds(text, r, tags[r.name]))]
        key = SORT_KEYS[sort]
        # As the engine's page orders: `key direction NULLS LAST, name direction`.
        valued = sorted((r for r in chosen if key(r) is not None), key=lambda r: (key(r), r.name), reverse=descending)
        nulls = sorted((r for r in chosen if key(r) is None), key=lambda r: r.name, reverse=descending)
        chosen = valued + nulls
        rows = chosen[-max(1, limit):] if from_end else chosen[: max(1, limit)]
        return SchedulePage(now=at, rows=rows, total=len(everything),
                            paused=sum(1 for r in everything if r.state == "paused"), retired=0, matched=len(chosen),
                            from_end=from_end)

    def get_schedule(self, name: str) -> ScheduleInfo:
        return schedule_info(self.adapter.show(name, count=0, recent=0))

    def schedule_detail(self, name: str, *, now: datetime | None = None) -> ScheduleDetail:
        at = now or self.db_time()
        shown = self.adapter.show(name, now=at, count=5, recent=10)
        return ScheduleDetail(now=at, schedule=schedule_info(shown), next=next_fires(shown),
                              recent=[fire(f) for f in shown.recent], audit=self.list_audit(target=name, limit=20))

    def recent_fires(self, name: str, limit: int = 10) -> list[Fire]:
        return [fire(f) for f in self.adapter.recent_fires(name, limit)]

    def definition_fires(self, schedule: Schedule, count: int = 5, *,
                         after: datetime | None = None, fired: int = 0) -> list[NextFire]:
        self._refuse("definition_fires")

    def next_fires(self, name: str, count: int = 5, *, after: datetime | None = None) -> list[NextFire]:
        """By awa-tui's cron arithmetic: after `after`, else after now or the last fire if later."""
        shown = self.adapter.show(name, count=count, recent=0)
        s = shown.schedule
        if s.problem is not None:
            raise ValidationError(f"schedule {s.name!r} has no next fire here: {s.problem}")
        if after is None:
            return next_fires(shown)
        zone = parse_timezone(s.timezone)
        return [NextFire(utc=f.at, local=f.at.astimezone(zone), timezone=s.timezone, dst=f.mark)
                for f in upcoming_fires(s.cron_expr, s.timezone, after, count)]

    def resume_preview(self, name: str, *, now: datetime | None = None) -> ResumePreview:
        """What resuming means upstream: its own leader applies the policy; awa-tui can only say so."""
        at = now or self.db_time()
        s = self.adapter.show(name, now=at, count=1, recent=0).schedule
        nxt = s.next_fire
        return ResumePreview(
            name=name, policy=s.missed_fire_policy, now=at, count=0, first=None, last=None, coalesced_instant=None,
            instants=(), more=False, next_fire=nxt,
            explanation=(f"Upstream Awa's own leader decides what the paused period fires, by its policy "
                         f"{s.missed_fire_policy}; the next regular fire is "
                         f"{nxt.strftime('%Y-%m-%d %H:%M:%S UTC') if nxt else 'unknown'}."),
        )

    # --- queues and runtimes --------------------------------------------------------------

    def list_queues(self) -> list[QueueRow]:
        return [
            up.UpstreamQueueRow(queue=q.queue, paused=q.paused, paused_at=q.paused_at, paused_by=q.paused_by,
                                available=q.available, running=q.running, schedules=q.schedules,
                                scheduled=q.scheduled, failed=q.failed, completed=q.completed)
            for q in self.adapter.queues()
        ]

    def list_runtimes(self, now: datetime | None = None) -> list[RuntimeRow]:
        return [runtime_row(r) for r in self.adapter.runtimes(now)]

    def runtime_events(self, instance_id: str, now: datetime | None = None) -> RuntimeEvents | None:
        """Upstream's runtimes record no events of ours."""
        return None

    def console_attention(self, now: datetime, *, unserved: bool) -> ConsoleAttention:
        """Upstream records no schedule health and no runtime's handled kinds: nothing to say."""
        from awa_tui.engine.health.models import ConsoleAttention

        return ConsoleAttention(unhealthy=0, worst=None, unserved=() if unserved else None)

    def read_wait(self, thread_id: int, bound: timedelta) -> ReadWait | None:
        return self.adapter.read_wait(thread_id, bound)

    def leadership(self, now: datetime | None = None) -> Leadership:
        at = now or self.db_time()
        leader = next((r for r in self.adapter.runtimes(now) if r.leader and not r.shutting_down), None)
        if leader is None:
            return Leadership(now=at)
        return Leadership(
            now=at, backend_pid=leader.pid, application_name="upstream Awa", instance_id=UUID(leader.instance_id),
            hostname=leader.hostname or "?", pid=leader.pid, lease_expires_at=stale_at(leader),
        )

    # --- awa-tui's own audit trail beside upstream's schema (`db init-audit`) -----------------

    def list_audit(self, target: str | None = None, limit: int = 100) -> list[AuditEntry]:
        """Newest first; [] when the trail was never created (the console's detail screen)."""
        return [
            AuditEntry(id=e.id, at=e.at, operator=e.operator, action=e.action, target=e.target, before=e.before,
                       after=e.after, detail=e.detail, db_user=None)
            for e in self.adapter.audit_entries(target, limit)
        ]

    def search_audit(self, *, operator: str | None = None, action: str | None = None, target: str | None = None,
                     since: datetime | None = None, until: datetime | None = None, limit: int = 50,
                     before_id: int | None = None, where: Filter | None = None,
                     now: datetime | None = None, oldest: bool = False) -> AuditPage:
        """Filtered in memory: the trail holds only the actions taken through awa-tui, a
        short list. Refused in one line when the trail was never created."""
        if not self.adapter.audited():
            raise NotFound(f"awa-tui's audit trail does not exist on this database (upstream Awa schema "
                           f"v{self.adapter.info().version}); `awa-tui db init-audit` creates it")
        at = self.db_time() if now is None else now
        rows = [e for e in self.list_audit(target, AUDIT_SCAN)
                if (before_id is None or e.id < before_id)
                and (operator is None or e.operator == operator) and (action is None or e.action == action)
                and (since is None or e.at >= since) and (until is None or e.at <= until)
                and _audit_matches(where, e, at)]
        if oldest:  # the end of the list (the console's G): the oldest `limit`, no older page
            return AuditPage(entries=tuple(rows[-limit:]), next_before_id=None, oldest=True)
        page = rows[:limit]
        more = len(rows) > limit
        return AuditPage(entries=tuple(page), next_before_id=page[-1].id if more and page else None)

    def audit_record(self, entry_id: int) -> AuditRecord:
        """The entry as the trail beside upstream's schema keeps it: that trail records no
        database session (user, client address, application), so `session_recorded` is False."""
        for e in self.search_audit(before_id=entry_id + 1, limit=1).entries:
            if e.id == entry_id:
                return AuditRecord(id=e.id, at=e.at, operator=e.operator, action=e.action, target=e.target,
                                   before=e.before, after=e.after, detail=e.detail, db_user=None, client_addr=None,
                                   application_name=None, backend_pid=None, session_recorded=False)
        raise NotFound(f"no audit entry {entry_id}")

    # --- what upstream's schema has no notion of ---------------------------------------------

    def list_owners(self, now: datetime | None = None) -> list[OwnerSummary]:
        self._refuse("list_owners")

    def plan(self, owner: str | None = None, now: datetime | None = None) -> list[OwnerPlan]:
        self._refuse("plan")

    def jobs_page(self, where: Filter | None = None, *, limit: int = 200, now: datetime | None = None,
                  oldest: bool = False) -> JobsPage:
        self._refuse("jobs_page")

    def job_detail(self, job_id: int) -> JobDetail:
        self._refuse("job_detail")

    def ledger_view(self, name: str, *, at: datetime | None = None, limit: int = 50,
                    now: datetime | None = None) -> LedgerView:
        self._refuse("ledger_view")

    def check(self, *, owner: str | None = None, schedule: str | None = None, tag: str | None = None,
              now: datetime | None = None, timeout: timedelta = CHECK_TIMEOUT) -> CheckReport:
        self._refuse("check")

    def registered_runtimes(self, hostname: str, *, now: datetime | None = None) -> list[RegisteredRuntime]:
        self._refuse("registered_runtimes")

    def list_jobs(self, *, schedule: str | None = None, queue: str | None = None, state: str | None = None,
                  since: datetime | None = None, limit: int = 50) -> list[JobSummary]:
        self._refuse("list_jobs")

    def ledger(self, name: str, *, since: datetime | None = None, until: datetime | None = None,
               limit: int = 50, now: datetime | None = None) -> list[Verdict]:
        self._refuse("ledger")

    def why(self, name: str, *, at: datetime | None = None, now: datetime | None = None) -> Why:
        self._refuse("why")

    def list_calendars(self) -> list[CalendarSummary]:
        self._refuse("list_calendars")

    def get_calendar(self, name: str) -> CalendarInfo:
        self._refuse("get_calendar")

    def alerts(self, *, state: str | None = None, sink: str | None = None, name: str | None = None,
               limit: int = 100) -> list[AlertDelivery]:
        self._refuse("alerts")

    def silences(self, now: datetime | None = None) -> list[Silence]:
        self._refuse("silences")


AUDIT_GAP = "awa-tui db init-audit has not been run on this database: this action will not be audited"


def _audit_matches(where: Filter | None, e: AuditEntry, now: datetime) -> bool:
    """The audit grammar's terms over one entry (the SQL path's meaning, in memory)."""
    for term in where.terms if where else ():
        if term.kind == "text":
            held = e.target is not None and value_pattern(term.value, True).fullmatch(e.target) is not None
        elif term.name in TIME_FIELDS:
            point = parse_point(term.value, f"filter: {term.name}", now)
            held = e.at >= point if term.name == "since" else e.at <= point
        else:
            value = {"operator": e.operator, "action": e.action, "target": e.target}.get(term.name)
            held = value is not None and value_pattern(term.value, False).fullmatch(value) is not None
        if held == term.negated:
            return False
    return True


# --- upstream rows as awa-tui's read models --------------------------------------------------------


def definition(s: up.UpstreamSchedule) -> dict[str, Any]:
    """The _ScheduleColumns of an upstream schedule: no owner, no tombstone, no fault (an
    expression awa-tui cannot evaluate only lacks a next fire: upstream's own parser fires it)."""
    return {
        "name": s.name, "cron_expr": s.cron_expr, "timezone": s.timezone, "kind": s.kind, "queue": s.queue,
        "priority": s.priority, "max_attempts": s.max_attempts, "missed_fire_policy": s.missed_fire_policy,
        "last_enqueued_at": s.last_enqueued_at, "next_fire_at": s.next_fire, "created_at": s.created_at,
        "updated_at": s.updated_at, "paused_at": s.paused_at, "paused_by": s.paused_by, "owner": None,
        "retired_at": None, "retired_by": None, "fault": None,
    }


def schedule_row(s: up.UpstreamSchedule) -> up.UpstreamScheduleRow:
    return up.UpstreamScheduleRow(**definition(s), queue_paused=s.queue_paused, queue_paused_by=s.queue_paused_by,
                                  state=s.state, next_fire_mark=s.next_fire_mark, problem=s.problem)


def schedule_info(shown: up.UpstreamScheduleDetail) -> up.UpstreamScheduleInfo:
    s = shown.schedule
    return up.UpstreamScheduleInfo(
        **definition(s), args=shown.args, metadata=shown.metadata, tags=list(shown.tags),
        queue_paused=s.queue_paused, queue_paused_by=s.queue_paused_by, state=s.state,
        next_fire_mark=s.next_fire_mark, problem=s.problem,
    )


def next_fires(shown: up.UpstreamScheduleDetail) -> list[NextFire]:
    return [NextFire(utc=f.at, local=f.local, timezone=shown.schedule.timezone, dst=f.mark) for f in shown.upcoming]


def lateness(f: up.UpstreamFire) -> timedelta | None:
    return None if f.fire_time is None else f.created_at - f.fire_time


def page_row(s: up.UpstreamSchedule, last: up.UpstreamFire | None) -> SchedulePageRow:
    return SchedulePageRow(
        **definition(s), queue_paused=s.queue_paused, queue_paused_by=s.queue_paused_by, state=s.state,
        queue_paused_at=s.queue_paused_at, last_job_state=last.state if last else None,
        lateness=lateness(last) if last else None, next_fire=s.next_fire,
        next_fire_due=False,  # computed from now: upstream's own leader owns what is due
    )


def fire(f: up.UpstreamFire) -> up.UpstreamFireRow:
    return up.UpstreamFireRow(id=f.job_id, state=f.state, attempt=f.attempt, created_at=f.created_at,
                              fire_time=f.fire_time.isoformat() if f.fire_time else None, manual=f.manual,
                              lateness=lateness(f), finalized_at=f.finalized_at)


def stale_at(r: up.UpstreamRuntime) -> datetime:
    """When upstream calls this snapshot stale: unseen for max(3 x interval, 30 s)."""
    return r.last_seen_at + timedelta(milliseconds=max(3 * max(r.snapshot_interval_ms, 1000), 30_000))


def runtime_row(r: up.UpstreamRuntime) -> up.UpstreamRuntimeRow:
    return up.UpstreamRuntimeRow(
        instance_id=UUID(r.instance_id), hostname=r.hostname or "?", pid=r.pid, version=r.version,
        protocol_version=0,  # upstream snapshots carry no awa-tui protocol
        started_at=r.started_at, last_seen_at=r.last_seen_at,
        snapshot_interval=timedelta(milliseconds=r.snapshot_interval_ms), is_leader=r.leader,
        health="healthy" if r.healthy else "unhealthy", stopped_at=None, owner=None, authoritative=False,
        manifest_hash=None, fresh=not r.stale, role=("stalled" if r.stale else "leader") if r.leader else "follower",
        lease_expires_at=stale_at(r) if r.leader else None, shutting_down=r.shutting_down,
        storage_capability=r.storage_capability, queues=r.queues,
    )


# --- the schedules filter over read models (the grammar of awa_tui/filters.py) ---------------------


def _fields(r: ScheduleRow) -> dict[str, Any]:
    return {"name": r.name, "owner": r.owner, "state": r.state, "queue": r.queue, "kind": r.kind,
            "policy": r.missed_fire_policy, "tz": r.timezone,
            "overlap": "allow"}  # upstream fires whatever is still going


FLAGS: dict[str, Callable[[ScheduleRow], bool]] = {
    "active": lambda r: r.state == "active",
    "paused": lambda r: r.state == "paused",
    "retired": lambda r: False,  # upstream has no tombstones
    "broken": lambda r: False,  # upstream's own parser decides what fires
    "late": lambda r: False,  # next fires are computed from now: never overdue here
    "unowned": lambda r: True,  # upstream has no owners
    "finished": lambda r: False,  # upstream has no bounds
    "overridden": lambda r: False,  # nor operator overrides
    "interval": lambda r: False,  # nor interval schedules
}


def holds(term: Term, r: ScheduleRow, tags: tuple[str, ...] = ()) -> bool:
    substring = GRAMMARS["schedules"].substring_fields
    if term.kind == "flag":
        return FLAGS[term.name](r)
    if term.kind == "text":
        pattern = value_pattern(term.value, substring=True)
        return any(v is not None and pattern.fullmatch(v) for v in (r.name, r.kind, r.queue, r.owner))
    if term.name == "state":
        return FLAGS[term.value](r)
    if term.name == "tag":
        return any(value_pattern(term.value, False).fullmatch(t) for t in tags)
    value = _fields(r).get(term.name)
    return value is not None and value_pattern(term.value, term.name in substring).fullmatch(str(value)) is not None


def matches(where: Filter | None, r: ScheduleRow, tags: tuple[str, ...] = ()) -> bool:
    return not where or all(holds(t, r, tags) != t.negated for t in where.terms)
