"""The console's backend on an upstream Awa (awa-pg) database: ConsoleBackend over
UpstreamAdapter, so the same panels, detail screen and dialogs operate upstream's tables.

Reads become the console's own read models (engine/read/models.py): an upstream schedule is a
SchedulePageRow with no owner, no tombstone and no fault, a runtime snapshot a RuntimeRow,
a queue a QueueRow. Upstream has no owners, plan, retirement, fire ledger or runtime
health: `features` leaves them out, so the console never offers those keys, and the
methods behind them refuse in one line (Unsupported) if called anyway.

Upstream's leader is judged from its runtime snapshots (leader flag, and upstream's own
staleness rule as the lease), not from a lock of awa-tui's: upstream takes none of ours.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, NoReturn
from uuid import UUID

from awa_tui.config import default_operator
from awa_tui.engine.cron.expression import parse_timezone, upcoming_fires
from awa_tui.engine.errors import AwaError, Conflict, NotFound, ValidationError
from awa_tui.engine.firing.backfill import BackfillResult
from awa_tui.engine.firing.preview import ResumePreview
from awa_tui.engine.ledger.models import AuditEntry, AuditPage, JobChange, JobDetail, JobsPage, LedgerView
from awa_tui.engine.limits import BACKFILL_LIMIT
from awa_tui.engine.operations.bulk import BulkResult, Skipped
from awa_tui.engine.operations.ops import check_operator
from awa_tui.engine.read.backend import FEATURES, OWN_SCHEMA_FEATURES
from awa_tui.engine.read.models import (
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
    SchedulePageRow,
    ScheduleState,
    TriggeredJob,
)
from awa_tui.engine.runtime.leader import Leadership
from awa_tui.engine.schedules.overrides import OverrideRequest
from awa_tui.engine.standby import ServerRole
from awa_tui.engine.upstream import models as up
from awa_tui.engine.upstream.adapter import UpstreamAdapter
from awa_tui.filters import GRAMMARS, TIME_FIELDS, Filter, Term, value_pattern
from awa_tui.instants import parse_point

FEATURES_NOTE = (
    "upstream Awa mode: owners, plan, retire/restore, the fire ledger and runtime health are awa-tui "
    "features this upstream schema does not have, so their keys are left out"
)
AUDIT_GAP = "awa-tui db init-audit has not been run on this database: this action will not be audited"
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


class Unsupported(AwaError):
    """An awa-tui feature upstream Awa's schema does not have."""


class UpstreamConsole:
    """ConsoleBackend on an upstream Awa database (tests/upstream/test_upstream_console.py checks
    it against the Protocol)."""

    def __init__(self, dsn: str, *, operator: str | None = None, read_only: bool = False,
                 adapter: UpstreamAdapter | None = None) -> None:
        self.dsn = dsn
        self.read_only = read_only
        self.operator = default_operator() if operator is None else check_operator(operator)
        self.adapter = adapter or UpstreamAdapter(dsn, read_only=read_only, application_name="awa-tui console")
        caps = self.adapter.capabilities()  # also checks, once, that the schema is upstream's
        supported = {"schedule_pause": caps.schedule_pause, "trigger": caps.trigger, "queue_pause": caps.queue_pause}
        self.features = frozenset(name for name, ok in supported.items() if ok)
        missing = sorted(FEATURES - self.features - OWN_SCHEMA_FEATURES)
        self.features_note = FEATURES_NOTE + (
            f"; this schema version also lacks {', '.join(m.replace('_', ' ') for m in missing)}" if missing else "")

    def close(self) -> None:
        self.adapter.close()

    # --- reads ---------------------------------------------------------------------------------

    def db_time(self) -> datetime:
        return self.adapter.db_time()

    def write_refusal(self) -> str | None:
        return self.adapter.write_refusal()

    def server_role(self) -> ServerRole:
        return self.adapter.server_role()

    def audit_gap(self) -> str | None:
        return None if self.adapter.audited() else AUDIT_GAP

    def list_runtimes(self, now: datetime | None = None) -> list[RuntimeRow]:
        return [runtime_row(r) for r in self.adapter.runtimes(now)]

    def leadership(self, now: datetime | None = None) -> Leadership:
        at = now or self.db_time()
        leader = next((r for r in self.adapter.runtimes(now) if r.leader and not r.shutting_down), None)
        if leader is None:
            return Leadership(now=at)
        return Leadership(
            now=at, backend_pid=leader.pid, application_name="upstream Awa", instance_id=UUID(leader.instance_id),
            hostname=leader.hostname or "?", pid=leader.pid, lease_expires_at=stale_at(leader),
        )

    def schedule_page(
        self, filter_text: str | None = None, *, sort: str = "name", descending: bool = False, limit: int = 1000,
        now: datetime | None = None, where: Filter | None = None, counts: bool = True,
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
        return SchedulePage(now=at, rows=chosen[: max(1, limit)], total=len(everything),
                            paused=sum(1 for r in everything if r.state == "paused"), retired=0, matched=len(chosen))

    def get_schedule(self, name: str) -> ScheduleInfo:
        return self._detail(name, None, recent=0).schedule

    def schedule_detail(self, name: str, *, now: datetime | None = None) -> ScheduleDetail:
        return self._detail(name, now)

    def _detail(self, name: str, now: datetime | None, recent: int = 10) -> ScheduleDetail:
        at = now or self.db_time()
        shown = self.adapter.show(name, now=at, count=5, recent=recent)
        s = shown.schedule
        info = ScheduleInfo(
            **definition(s), args=shown.args, metadata=shown.metadata, tags=list(shown.tags),
            queue_paused=s.queue_paused, queue_paused_by=s.queue_paused_by, state=s.state,
        )
        zone = parse_timezone(s.timezone) if s.problem is None else None
        after = max(at, s.last_enqueued_at) if s.last_enqueued_at else at
        upcoming = [] if zone is None else [
            NextFire(utc=f.at, local=f.at.astimezone(zone), timezone=s.timezone, dst=f.mark)
            for f in upcoming_fires(s.cron_expr, s.timezone, after, 5)
        ]
        audit = self.list_audit(target=name, limit=20) if recent else []
        return ScheduleDetail(now=at, schedule=info, next=upcoming, recent=[fire(f) for f in shown.recent],
                              audit=audit)

    def list_queues(self) -> list[QueueRow]:
        return [
            QueueRow(queue=q.queue, paused=q.paused, paused_at=q.paused_at, paused_by=q.paused_by,
                     available=q.available, running=q.running, schedules=q.schedules)
            for q in self.adapter.queues()
        ]

    def list_audit(self, target: str | None = None, limit: int = 100) -> list[AuditEntry]:
        return [
            AuditEntry(id=e.id, at=e.at, operator=e.operator, action=e.action, target=e.target, before=e.before,
                       after=e.after, detail=e.detail, db_user=None)
            for e in self.adapter.audit_entries(target, limit)
        ]

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

    def list_owners(self, now: datetime | None = None) -> list[OwnerSummary]:
        _unsupported("owners")

    def plan(self, owner: str | None = None, now: datetime | None = None) -> list[OwnerPlan]:
        _unsupported("the reconciliation plan")

    # --- actions -------------------------------------------------------------------------------

    def _who(self, operator: str | None) -> str:
        return self.operator if operator is None else operator

    def pause(self, name: str, *, operator: str | None = None) -> ScheduleState:
        self.adapter.pause(name, self._who(operator))
        return self._state(name)

    def resume(self, name: str, *, operator: str | None = None) -> ScheduleState:
        self.adapter.resume(name, self._who(operator))
        return self._state(name)

    def trigger(self, name: str, *, operator: str | None = None) -> TriggeredJob:
        done = self.adapter.trigger(name, self._who(operator))
        assert done.job_id is not None
        job = next(f for f in self.adapter.recent_fires(name, 20) if f.job_id == done.job_id)
        return TriggeredJob(id=job.job_id, kind=self.get_schedule(name).kind, queue=job.queue, state=job.state,
                            metadata={"cron_name": name, "triggered_manually": True}, created_at=job.created_at)

    def _state(self, name: str) -> ScheduleState:
        info = self.get_schedule(name)
        return ScheduleState(
            name=info.name, cron_expr=info.cron_expr, timezone=info.timezone, kind=info.kind, queue=info.queue,
            args=info.args, priority=info.priority, max_attempts=info.max_attempts, tags=info.tags,
            metadata=info.metadata, missed_fire_policy=info.missed_fire_policy,
            last_enqueued_at=info.last_enqueued_at, paused_at=info.paused_at, paused_by=info.paused_by,
            owner=None, retired_at=None, retired_by=None,
        )

    def queue_pause(self, queue: str, *, operator: str | None = None) -> QueueState:
        self.adapter.queue_pause(queue, self._who(operator))
        return self._queue_state(queue)

    def queue_resume(self, queue: str, *, operator: str | None = None) -> QueueState:
        self.adapter.queue_resume(queue, self._who(operator))
        return self._queue_state(queue)

    def _queue_state(self, queue: str) -> QueueState:
        row = next(q for q in self.list_queues() if q.queue == queue)
        return QueueState(queue=queue, paused=row.paused, paused_at=row.paused_at, paused_by=row.paused_by)

    def bulk(
        self, action: str, names: Sequence[str] | None = None, *, where: Filter | None = None,
        owner: str | None = None, dry_run: bool = False, batch_size: int = 500, operator: str | None = None,
        now: datetime | None = None,
    ) -> BulkResult:
        """pause / resume / trigger each selected schedule as the single action does (its own
        transaction, audited as a single action); one refused is skipped with its reason."""
        single: dict[str, Callable[[str], Any]] = {
            "pause": lambda n: self.pause(n, operator=operator),
            "resume": lambda n: self.resume(n, operator=operator),
            "trigger": lambda n: self.trigger(n, operator=operator),
        }
        if action not in single:
            _unsupported(f"bulk {action}")
        chosen = sorted(set(names or ())) if where is None else [
            r.name for r in self.schedule_page(where=where, limit=1_000_000, now=now).rows]
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

    def adopt(self, name: str, owner: str, *, operator: str | None = None,
              now: datetime | None = None) -> ScheduleState:
        _unsupported("owners")

    def transfer(self, name: str, to_owner: str, *, operator: str | None = None,
                 now: datetime | None = None) -> ScheduleState:
        _unsupported("owners")

    def retire(self, name: str, *, operator: str | None = None, now: datetime | None = None) -> ScheduleState:
        _unsupported("retire")

    def restore(self, name: str, *, operator: str | None = None, now: datetime | None = None) -> ScheduleState:
        _unsupported("restore")

    def retire_owner(self, owner: str, *, operator: str | None = None,
                     now: datetime | None = None) -> OwnerChange:
        _unsupported("owners")

    def restore_owner(self, owner: str, *, operator: str | None = None,
                      now: datetime | None = None) -> OwnerChange:
        _unsupported("owners")

    def queue_drain(self, queue: str, *, operator: str | None = None) -> QueueDrained:
        _unsupported("queue drain")

    # --- awa-tui's fire ledger, backfill and overrides: not in upstream's schema -------------

    def jobs_page(self, where: Filter | None = None, *, limit: int = 200, now: datetime | None = None) -> JobsPage:
        _unsupported("the jobs panel (fire ledger)")

    def job_detail(self, job_id: int) -> JobDetail:
        _unsupported("job history (fire ledger)")

    def ledger_view(self, name: str, *, at: datetime | None = None, limit: int = 50,
                    now: datetime | None = None) -> LedgerView:
        _unsupported("the fire ledger")

    def retry_job(self, job_id: int, *, operator: str | None = None) -> JobChange:
        _unsupported("job retry")

    def cancel_job(self, job_id: int, *, operator: str | None = None) -> JobChange:
        _unsupported("job cancel")

    def backfill(self, name: str, from_at: datetime, to_at: datetime, *, dry_run: bool = False,
                 max_count: int = BACKFILL_LIMIT, operator: str | None = None,
                 now: datetime | None = None) -> BackfillResult:
        _unsupported("backfill")

    def override(self, name: str, request: OverrideRequest, *, operator: str | None = None) -> ScheduleState:
        _unsupported("operator overrides")

    def reset_override(self, name: str, *, operator: str | None = None) -> ScheduleState:
        _unsupported("operator overrides")

    def search_audit(self, *, operator: str | None = None, action: str | None = None, target: str | None = None,
                     since: datetime | None = None, until: datetime | None = None, limit: int = 50,
                     before_id: int | None = None, where: Filter | None = None,
                     now: datetime | None = None) -> AuditPage:
        """awa-tui's own audit of upstream mode (`db init-audit`), filtered in memory: it
        holds only the actions taken through awa-tui, a short list."""
        at = self.db_time() if now is None else now
        rows = [e for e in self.list_audit(target, AUDIT_SCAN)
                if (before_id is None or e.id < before_id)
                and (operator is None or e.operator == operator) and (action is None or e.action == action)
                and (since is None or e.at >= since) and (until is None or e.at <= until)
                and _audit_matches(where, e, at)]
        page = rows[:limit]
        more = len(rows) > limit
        return AuditPage(entries=tuple(page), next_before_id=page[-1].id if more and page else None)


AUDIT_SCAN = 10_000  # entries of upstream mode's own audit read for one search (newest first)


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


def _unsupported(what: str) -> NoReturn:
    raise Unsupported(f"{what}: an awa-tui feature that upstream Awa's schema does not have")


# --- upstream rows as the console's read models -------------------------------------------------


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


def lateness(f: up.UpstreamFire) -> timedelta | None:
    return None if f.fire_time is None else f.created_at - f.fire_time


def page_row(s: up.UpstreamSchedule, last: up.UpstreamFire | None) -> SchedulePageRow:
    return SchedulePageRow(
        **definition(s), queue_paused=s.queue_paused, queue_paused_by=s.queue_paused_by, state=s.state,
        queue_paused_at=s.queue_paused_at, last_job_state=last.state if last else None,
        lateness=lateness(last) if last else None, next_fire=s.next_fire,
        next_fire_due=False,  # computed from now: upstream's own leader owns what is due
    )


def fire(f: up.UpstreamFire) -> Fire:
    return Fire(id=f.job_id, state=f.state, attempt=f.attempt, created_at=f.created_at,
                fire_time=f.fire_time.isoformat() if f.fire_time else None, manual=f.manual, lateness=lateness(f))


def stale_at(r: up.UpstreamRuntime) -> datetime:
    """When upstream calls this snapshot stale: unseen for max(3 x interval, 30 s)."""
    return r.last_seen_at + timedelta(milliseconds=max(3 * max(r.snapshot_interval_ms, 1000), 30_000))


def runtime_row(r: up.UpstreamRuntime) -> RuntimeRow:
    health = "shutting down" if r.shutting_down else ("healthy" if r.healthy else "UNHEALTHY")
    return RuntimeRow(
        instance_id=UUID(r.instance_id), hostname=r.hostname or "?", pid=r.pid, version=r.version,
        protocol_version=0,  # upstream snapshots carry no awa-tui protocol
        started_at=r.started_at, last_seen_at=r.last_seen_at,
        snapshot_interval=timedelta(milliseconds=r.snapshot_interval_ms), is_leader=r.leader,
        health=f"{health}; queues {', '.join(r.queues) or '-'}", stopped_at=None, owner=None, authoritative=False,
        manifest_hash=None, fresh=not r.stale, role=("stalled" if r.stale else "leader") if r.leader else "follower",
        lease_expires_at=stale_at(r) if r.leader else None,
    )


# --- the schedules filter over read models (the grammar of awa_tui/filters.py) ---------------------


def _fields(r: SchedulePageRow) -> dict[str, Any]:
    return {"name": r.name, "owner": r.owner, "state": r.state, "queue": r.queue, "kind": r.kind,
            "policy": r.missed_fire_policy, "tz": r.timezone}


FLAGS: dict[str, Callable[[SchedulePageRow], bool]] = {
    "active": lambda r: r.state == "active",
    "paused": lambda r: r.state == "paused",
    "retired": lambda r: False,  # upstream has no tombstones
    "broken": lambda r: False,  # upstream's own parser decides what fires
    "late": lambda r: False,  # next fires are computed from now: never overdue here
    "unowned": lambda r: True,  # upstream has no owners
    "finished": lambda r: False,  # upstream has no bounds
    "overridden": lambda r: False,  # nor operator overrides
}


def holds(term: Term, r: SchedulePageRow, tags: tuple[str, ...] = ()) -> bool:
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


def matches(where: Filter | None, r: SchedulePageRow, tags: tuple[str, ...] = ()) -> bool:
    return not where or all(holds(t, r, tags) != t.negated for t in where.terms)
