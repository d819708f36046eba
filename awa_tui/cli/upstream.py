"""Upstream mode of the CLI: the same commands on a database whose `awa` schema belongs to
upstream Awa (awa-pg), answered through UpstreamAdapter instead of awa-tui's own tables.

`make_client` (common.py) returns an UpstreamCommands in place of a Client when the schema
is upstream's, so the commands need no branch of their own: UpstreamCommands has the
Client methods they call, returning dicts with the native keys where the concept is the
same; any other method says in one line that it needs awa-tui's own schema.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NoReturn

from awa_tui.cli.common import warn
from awa_tui.engine.errors import AwaError, Conflict, NotFound, SchemaError, ValidationError

# A command loads this module only on a database with upstream's version table
# (common.make_client); the adapter, upstream's models and the cron arithmetic only once
# it is found to be upstream's.
if TYPE_CHECKING:
    from awa_tui.engine.upstream.models import ActionOutcome, SchemaInfo, UpstreamSchedule
    from awa_tui.filters import Filter

NOT_AUDITED = (
    "warning: not audited: this database has no awa-tui audit trail; "
    "run `awa-tui db init-audit` to record operator actions"
)

# What a Client method is about, for the one-line refusal of what upstream mode cannot do.
NEEDS_OWN_SCHEMA = {
    "list_owners": "owners need",
    "retire_owner": "owners need",
    "restore_owner": "owners need",
    "adopt": "owners need",
    "transfer": "owners need",
    "plan": "reconciliation plans need",
    "retire": "retiring a schedule needs",
    "restore": "restoring a schedule needs",
    "remove": "removing a schedule needs",
    "queue_drain": "draining a queue needs",
    "registered_runtimes": "the readiness check of a runtime needs",
    "set_calendar": "calendars need",
    "delete_calendar": "calendars need",
    "list_calendars": "calendars need",
    "get_calendar": "calendars need",
}


def schema_of(client: Any) -> SchemaInfo:
    """What owns the `awa` schema of the client's database (catalog reads)."""
    from awa_tui.engine.upstream.detect import detect_schema

    with client.db.connection() as conn:
        return detect_schema(conn)


def client_for(client: Any) -> Any:
    """`client` itself on awa-tui's schema (or none: its own errors say what to do), else
    UpstreamCommands on the same database, with the same operator and read-only flag."""
    info = schema_of(client)
    if info.kind != "upstream":
        return client
    client.close()
    return UpstreamCommands(client.dsn, info, operator=client.operator, read_only=client.read_only)


def refusal(what: str, info: SchemaInfo) -> str:
    """The one line for a command upstream mode does not offer."""
    return f"{what} awa-tui's own schema; this database holds upstream Awa schema v{info.version}"


def schedule_row(s: UpstreamSchedule) -> dict[str, Any]:
    """An upstream schedule under the keys of awa-tui's own `cron list` rows."""
    return {
        "name": s.name, "cron_expr": s.cron_expr, "timezone": s.timezone, "kind": s.kind, "queue": s.queue,
        "priority": s.priority, "max_attempts": s.max_attempts, "missed_fire_policy": s.missed_fire_policy,
        "last_enqueued_at": s.last_enqueued_at, "next_fire_at": s.next_fire, "next_fire_mark": s.next_fire_mark,
        "created_at": s.created_at, "updated_at": s.updated_at, "paused_at": s.paused_at, "paused_by": s.paused_by,
        "queue_paused": s.queue_paused, "state": s.state, "problem": s.problem,
    }



class Record(dict[str, Any]):
    """An upstream result: a dict (its JSON keys) that the commands read by attribute, as
    they read awa-tui's own read models (engine/read/models.py)."""

    # Fields of awa-tui's own models that upstream has no notion of (no BROKEN verdict, no
    # retirement, no owners, no bounds, no H nor overrides): read as None, never added to the JSON.
    ABSENT = frozenset({"fault", "retired_at", "retired_by", "owner", "finished_at", "cron_written", "overridden",
                        "excluded", "exclude_dates", "exclude_calendars"})  # S56: no exclusions upstream

    def to_dict(self) -> dict[str, Any]:
        return dict(self)

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            if name in Record.ABSENT:
                return None
            raise AttributeError(name) from None


def records(method: Callable[..., Any]) -> Callable[..., Any]:
    """Return a method's dicts (or list of dicts) as Records."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        if isinstance(result, list):
            return [Record(item) for item in result]
        return Record(result)

    return wrapper


def _matches(row: dict[str, Any], where: Filter) -> bool:
    """The filter grammar on upstream rows, in Python (upstream has no hint columns to
    compile against): free text and the name/kind/queue/state fields."""
    for term in where.terms:
        if term.kind == "text":
            hit = any(term.value.casefold() in str(row[k]).casefold() for k in ("name", "kind", "queue"))
        elif term.kind == "field" and term.name in ("name", "kind"):
            hit = term.value.casefold() in str(row[term.name]).casefold()
        elif term.kind == "field" and term.name in ("queue", "state"):
            hit = str(row[term.name]).casefold() == term.value.casefold()
        else:
            raise AwaError(f"filter {str(term)!r} needs awa-tui's own schema; upstream mode filters by "
                           "free text, name:, kind:, queue: and state:")
        if hit == term.negated:
            return False
    return True

class UpstreamCommands:
    """The Client methods the CLI calls, on an upstream Awa database (see the module doc)."""

    def __init__(self, dsn: str, info: SchemaInfo, *, operator: str, read_only: bool) -> None:
        from awa_tui.engine.upstream.adapter import UpstreamAdapter

        self.info = info
        self.operator = operator
        self.read_only = read_only
        self.adapter = UpstreamAdapter(dsn, read_only=read_only, application_name="awa-tui cli")

    def close(self) -> None:
        self.adapter.close()

    def __getattr__(self, name: str) -> Any:
        # Only reached for methods not defined here: a command added later gets the
        # one-line refusal too, never an SQL error from upstream's different tables.
        if name.startswith("_"):
            raise AttributeError(name)

        def refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
            what = NEEDS_OWN_SCHEMA.get(name, f"{name.replace('_', ' ')} needs")
            raise SchemaError(refusal(what, self.info))

        return refuse

    # --- reads ----------------------------------------------------------------------------

    @records
    def list_schedules(self, filter_text: str | None = None, limit: int = 100000, *,
                       where: Filter | None = None, now: datetime | None = None) -> list[dict[str, Any]]:
        rows = [schedule_row(s) for s in self.adapter.list_schedules()]
        if where:
            rows = [r for r in rows if _matches(r, where)]
        if filter_text:
            # As awa-tui's own list: a case-insensitive substring of name, kind or queue.
            needle = filter_text.casefold()
            rows = [r for r in rows if any(needle in r[k].casefold() for k in ("name", "kind", "queue"))]
        return rows[:limit]

    @records
    def get_schedule(self, name: str) -> dict[str, Any]:
        detail = self.adapter.show(name, count=0, recent=0)
        return {**schedule_row(detail.schedule), "args": detail.args, "tags": list(detail.tags),
                "metadata": detail.metadata}

    @records
    def recent_fires(self, name: str, limit: int = 10) -> list[dict[str, Any]]:
        return [
            {"id": f.job_id, "state": f.state, "attempt": f.attempt, "created_at": f.created_at,
             "fire_time": f.fire_time, "manual": f.manual, "finalized_at": f.finalized_at}
            for f in self.adapter.recent_fires(name, limit)
        ]

    @records
    def next_fires(self, name: str, count: int = 5, *, after: datetime | None = None) -> list[dict[str, Any]]:
        """By awa-tui's cron arithmetic: after `after`, else after now or the last fire if later."""
        from awa_tui.engine.cron.expression import parse_timezone, upcoming_fires

        detail = self.adapter.show(name, count=count, recent=0)
        schedule = detail.schedule
        if schedule.problem is not None:
            raise ValidationError(f"schedule {schedule.name!r} has no next fire here: {schedule.problem}")
        if after is None:
            fires = [(f.at, f.mark) for f in detail.upcoming]
        else:
            fires = [(f.at, f.mark) for f in upcoming_fires(schedule.cron_expr, schedule.timezone, after, count)]
        zone = parse_timezone(schedule.timezone)
        return [{"utc": at, "local": at.astimezone(zone), "timezone": schedule.timezone, "dst": mark}
                for at, mark in fires]

    @records
    def list_queues(self) -> list[dict[str, Any]]:
        return [asdict(q) for q in self.adapter.queues()]

    def leadership(self) -> None:
        """Upstream elects its leader its own way: the runtime rows' leader flag says who."""
        return None

    @records
    def list_runtimes(self, now: datetime | None = None) -> list[dict[str, Any]]:
        return [
            {"instance_id": r.instance_id, "hostname": r.hostname, "pid": r.pid, "version": r.version,
             "started_at": r.started_at, "last_seen_at": r.last_seen_at,
             "snapshot_interval": timedelta(milliseconds=r.snapshot_interval_ms), "is_leader": r.leader,
             "role": "leader" if r.leader else "follower",
             "fresh": not r.stale, "health": "healthy" if r.healthy else "unhealthy",
             "shutting_down": r.shutting_down, "storage_capability": r.storage_capability,
             "queues": list(r.queues)}
            for r in self.adapter.runtimes(now)
        ]

    def search_audit(self, *, operator: str | None = None, action: str | None = None, target: str | None = None,
                     since: datetime | None = None, until: datetime | None = None, limit: int = 50,
                     before_id: int | None = None) -> Record:
        """`awa-tui audit` on awa-tui's own trail beside upstream's schema: by target only."""
        if operator or action or since or until or before_id:
            raise SchemaError(refusal("audit filters other than --target need", self.info))
        return Record(entries=tuple(self.list_audit(target, limit)), next_before_id=None)

    @records
    def list_audit(self, target: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        if not self.adapter.audited():
            raise NotFound(
                f"awa-tui's audit trail does not exist on this database (upstream Awa schema v{self.info.version}); "
                "`awa-tui db init-audit` creates it"
            )
        return [asdict(e) for e in self.adapter.audit_entries(target, limit)]

    # --- actions its own leader and workers honour ------------------------------------------

    def _acted(self, outcome: ActionOutcome) -> dict[str, Any]:
        if not outcome.audited:
            warn(NOT_AUDITED)
        return {"audited": outcome.audited, "audit_id": outcome.audit_id}

    def _schedule_action(self, outcome: ActionOutcome, name: str) -> dict[str, Any]:
        audit = self._acted(outcome)
        return {**schedule_row(self.adapter.show(name, count=0, recent=0).schedule), **audit}

    @records
    def pause(self, name: str, *, operator: str | None = None) -> dict[str, Any]:
        return self._schedule_action(self.adapter.pause(name, operator or self.operator), name)

    @records
    def resume(self, name: str, *, operator: str | None = None) -> dict[str, Any]:
        return self._schedule_action(self.adapter.resume(name, operator or self.operator), name)

    @records
    def trigger(self, name: str, *, operator: str | None = None) -> dict[str, Any]:
        outcome = self.adapter.trigger(name, operator or self.operator)
        audit = self._acted(outcome)
        return {"id": outcome.job_id, "name": name, **audit}

    def _queue_action(self, outcome: ActionOutcome, queue: str) -> dict[str, Any]:
        audit = self._acted(outcome)
        row = next(q for q in self.adapter.queues() if q.queue == queue)  # the action just wrote it
        return {"queue": row.queue, "paused": row.paused, "paused_at": row.paused_at, "paused_by": row.paused_by,
                **audit}

    @records
    def queue_pause(self, queue: str, *, operator: str | None = None) -> dict[str, Any]:
        return self._queue_action(self.adapter.queue_pause(queue, operator or self.operator), queue)

    @records
    def queue_resume(self, queue: str, *, operator: str | None = None) -> dict[str, Any]:
        return self._queue_action(self.adapter.queue_resume(queue, operator or self.operator), queue)


def database_status(dsn: str) -> dict[str, Any]:
    """`db status` of a configured database: where (no password), which schema and version,
    and in upstream mode whether awa-tui's audit trail exists."""
    from awa_tui.engine.client import Client
    from awa_tui.engine.db import describe_dsn
    from awa_tui.engine.upstream.adapter import UpstreamAdapter

    client = Client(dsn, read_only=True, application_name="awa-tui cli")
    try:
        info = schema_of(client)
    finally:
        client.close()
    audit_trail: bool | None = None
    if info.kind == "upstream":
        adapter = UpstreamAdapter(dsn, read_only=True, application_name="awa-tui cli")
        try:
            audit_trail = adapter.audited()
        finally:
            adapter.close()
    return {"database": describe_dsn(dsn), "schema": info.kind, "version": info.version, "detail": info.detail,
            "upstream_mode": info.kind == "upstream", "audit_trail": audit_trail}


def init_upstream_audit(dsn: str) -> dict[str, Any]:
    """Create awa-tui's audit trail beside an upstream Awa schema (the operator's consent is
    this command); refused in one line on any other database."""
    from awa_tui.engine.client import Client
    from awa_tui.engine.upstream.adapter import init_audit

    client = Client(dsn, application_name="awa-tui cli")
    try:
        info = schema_of(client)
    finally:
        client.close()
    if info.kind == "awa-tui":
        raise Conflict(f"init-audit is for upstream Awa databases; this database holds {info.detail}, "
                       "whose audit trail is built in")
    if info.kind != "upstream":
        raise Conflict(f"init-audit is for upstream Awa databases; this database has {info.detail}")
    return {"created": init_audit(dsn), "schema": "awa_tui_audit", "table": "awa_tui_audit.audit_log"}
