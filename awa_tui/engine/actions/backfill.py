"""Backfill: an operator fires, on purpose, the due instants of a range that never fired.

One job per instant in [from, to] that has no job yet, stamped with its instant like a
scheduled fire plus `backfill` and the operator, never a second job for an instant that
fired. The rule that makes this exact beside a live leader: backfill fills only instants
the scheduler has passed, at or before its CAS token (`last_enqueued_at`; for a schedule
that never fired, before its first-fire window, evaluator.first_candidate). The leader
never fires those again (its fires are always after the token), and the schedule's row is
locked for the whole transaction (FOR UPDATE): a fire statement in flight finishes first
(its jobs are then seen), one that starts meanwhile skips the locked row (SKIP LOCKED)
and sees it next pass. Instants after the token are left to the scheduler (they are
reported, not filled). The overlap policy does not apply: the operator asked for these.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from awa_tui.engine.core.audit import begin_action, jsonable
from awa_tui.engine.core.db import db_now
from awa_tui.engine.core.errors import Conflict, ValidationError
from awa_tui.engine.core.guards import check_operator
from awa_tui.engine.core.limits import BACKFILL_LIMIT, DEFAULT_HORIZON
from awa_tui.engine.core.scope import unseen_schedule
from awa_tui.engine.cron.expression import compile_cron, iso_utc
from awa_tui.engine.firing.evaluator import first_candidate
from awa_tui.engine.ledger.models import Record

COUNT_CEILING = 100000  # instants counted to name a refusal; past it, "more than"
ONE_US = timedelta(microseconds=1)

ROW_SQL = """
SELECT name, cron_expr, timezone, retired_at, awa.safe_ts(last_enqueued_at) AS last_enqueued_at,
       awa.safe_ts(created_at) AS created_at, start_at, end_at, exclude_dates, exclude_calendars
FROM awa.cron_jobs WHERE name = %s
"""

# The schedule's scheduled and backfilled jobs in the range (manual triggers have no
# instant), through jobs_cron_name_idx.
FIRED_SQL = """
SELECT DISTINCT awa.try_timestamptz(metadata ->> 'cron_fire_time') AS fire_time
FROM awa.jobs
WHERE metadata ? 'cron_name' AND metadata ->> 'cron_name' = %(name)s AND metadata ? 'cron_fire_time'
  AND awa.try_timestamptz(metadata ->> 'cron_fire_time') BETWEEN %(lo)s AND %(hi)s
"""



@dataclass(frozen=True)
class BackfillResult(Record):
    """What a backfill enqueued (or, in a dry run, would enqueue)."""

    schedule: str
    from_at: datetime
    to_at: datetime
    dry_run: bool
    instants: tuple[datetime, ...]  # the instants that get a job, ascending
    already_fired: int  # instants of the range that had a job: left alone
    left_to_scheduler: int  # instants after the schedule's last fire: the scheduler's own
    job_ids: tuple[int, ...]  # empty in a dry run
    excluded: int = 0  # instants of the range on an excluded date (S56): never filled

    @property
    def count(self) -> int:
        return len(self.instants)


def check_range(from_at: datetime, to_at: datetime, now: datetime, horizon: timedelta) -> None:
    """One line naming the value: reversed, in the future, older than retention."""
    for label, value in (("from", from_at), ("to", to_at)):
        if not isinstance(value, datetime) or value.utcoffset() is None:
            raise ValidationError(f"backfill {label}: expected a timezone-aware instant, got {value!r}")
    if from_at > to_at:
        raise ValidationError(f"backfill range reversed: from {iso_utc(from_at)} is after to {iso_utc(to_at)}")
    if to_at > now:
        raise ValidationError(f"backfill range in the future: to {iso_utc(to_at)} is after now {iso_utc(now)}")
    if from_at < now - horizon:
        raise ValidationError(
            f"backfill range older than the job-retention horizon ({_span(horizon)}): from {iso_utc(from_at)} "
            f"is before {iso_utc(now - horizon)}; older instants cannot be checked"
        )


def backfill(
    conn: psycopg.Connection[Any],
    name: str,
    from_at: datetime,
    to_at: datetime,
    operator: str,
    *,
    dry_run: bool = False,
    max_count: int = BACKFILL_LIMIT,
    now: datetime | None = None,
    horizon: timedelta = DEFAULT_HORIZON,
) -> BackfillResult:
    """Enqueue one job per instant of [from_at, to_at] that never fired (see the module)."""
    operator = check_operator(operator)
    if isinstance(max_count, bool) or not isinstance(max_count, int) or max_count < 1:
        raise ValidationError(f"backfill max: expected an integer of 1 or more, got {max_count!r}")
    now = now or db_now(conn)
    with conn.transaction():
        if not dry_run:
            begin_action(conn, operator, "backfill",
                         {"from": iso_utc(from_at), "to": iso_utc(to_at)})
        row = conn.execute(ROW_SQL + ("" if dry_run else " FOR UPDATE"), (name,)).fetchone()
        if row is None:
            raise unseen_schedule(conn, name)
        if row["retired_at"] is not None:
            raise Conflict(f"schedule {name!r} is retired; restore it before a backfill")
        if row["created_at"] is None:
            raise ValidationError(f"schedule {name!r}: created_at cannot be loaded; repair the row first")
        # After the audit gate and the lookup: a role that may not act, or a database
        # without the schema, hears that first, whatever the range.
        check_range(from_at, to_at, now, horizon)
        _refuse_pruned(conn, name, from_at)
        instants = _instants(row, from_at, to_at)
        every = len(instants)
        instants = _not_excluded(conn, row, instants)
        frontier = row["last_enqueued_at"] or first_candidate(row)
        passed = [t for t in instants if t <= frontier]
        fired = {r["fire_time"] for r in conn.execute(FIRED_SQL, {"name": name, "lo": from_at, "hi": to_at})}
        todo = [t for t in passed if t not in fired]
        if len(todo) > max_count:
            many = f"more than {COUNT_CEILING}" if len(instants) > COUNT_CEILING else str(len(todo))
            raise ValidationError(
                f"backfill of {name!r} would enqueue {many} jobs, over the limit of {max_count}; pass a higher max"
            )
        job_ids: tuple[int, ...] = ()
        if not dry_run:  # the jobs and their audit event, by the schema's function
            detail = {"from": iso_utc(from_at), "to": iso_utc(to_at), "count": len(todo),
                      "already_fired": len(passed) - len(todo)}
            job_ids = tuple(r["id"] for r in conn.execute(
                "SELECT j AS id FROM awa.backfill_jobs(%s, %s, %s) j",
                (name, [iso_utc(t) for t in todo], Jsonb(jsonable(detail)))))
    return BackfillResult(
        schedule=name, from_at=from_at, to_at=to_at, dry_run=dry_run, instants=tuple(todo),
        already_fired=len(passed) - len(todo), left_to_scheduler=len(instants) - len(passed), job_ids=job_ids,
        excluded=every - len(instants),
    )


def _not_excluded(conn: psycopg.Connection[Any], row: dict[str, Any], instants: list[datetime]) -> list[datetime]:
    """The instants not on a date the schedule excludes (S56): a backfill skips them too."""
    from awa_tui.engine.calendars.store import row_exclusions
    from awa_tui.engine.cron.expression import parse_timezone

    rules = row_exclusions(conn, row)
    if rules is None:
        return instants
    zone = parse_timezone(row["timezone"])
    return [t for t in instants if rules.rule_for(t, zone) is None]


def _span(span: timedelta) -> str:
    seconds = int(span.total_seconds())
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds % size == 0 and seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} seconds"


def _refuse_pruned(conn: psycopg.Connection[Any], name: str, from_at: datetime) -> None:
    mark = conn.execute("SELECT pruned_through FROM awa.ledger_pruned WHERE cron_name = %s", (name,)).fetchone()
    if mark is not None and mark["pruned_through"] >= from_at:
        raise ValidationError(
            f"backfill of {name!r}: jobs up to {iso_utc(mark['pruned_through'])} were pruned; "
            f"instants from {iso_utc(from_at)} cannot be checked"
        )


def _instants(row: dict[str, Any], from_at: datetime, to_at: datetime) -> list[datetime]:
    """The schedule's due instants in [from_at, to_at] within its bounds (v009)."""
    try:
        cron = compile_cron(row["cron_expr"], row["timezone"], row["start_at"])
    except ValidationError as exc:
        raise ValidationError(f"schedule {row['name']!r} cannot be backfilled: {exc}") from None
    lo = from_at if row["start_at"] is None else max(from_at, row["start_at"])
    hi = to_at if row["end_at"] is None else min(to_at, row["end_at"])
    if hi < lo:
        return []
    return [f.at for f in cron.between(lo - ONE_US, hi, COUNT_CEILING + 1)]
