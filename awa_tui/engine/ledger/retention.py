"""Retention: finished jobs (completed, discarded, cancelled) are pruned after a horizon,
in small batches, always keeping the last N jobs of every schedule. Waiting and running
jobs are never touched.

Each batch is one short transaction over at most `batch` finished jobs, oldest finish
first, walked with a keyset cursor (finalized_at, id): jobs kept because they are among
their schedule's last N are looked at once per prune, not once per batch. A batch locks
only the finished rows it deletes (SKIP LOCKED), so it never waits on, nor delays, the
fire path or the worker. Per schedule, the latest fire instant pruned is recorded
(awa.ledger_pruned) so that the ledger reports `unknown (pruned)` for older instants
instead of a wrong verdict.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from awa_tui.engine.core.audit import begin_action, jsonable, record_event
from awa_tui.engine.core.db import db_now
from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.core.guards import check_operator
from awa_tui.engine.core.limits import DEFAULT_HORIZON, DEFAULT_KEEP, check_horizon, check_keep
from awa_tui.engine.ledger.models import PruneResult

BATCH = 1000


@dataclass
class RetentionCursor:
    """Where the leader's retention continues: its rounds are bounded, and a round that began
    again at the oldest finished job would spend its budget re-reading the rows it must keep
    (a schedule's last N) and, with enough of them past the horizon, never reach a deletable
    one again. Kept between rounds; back to the start once a walk reached the end (`laps`)."""

    after_at: datetime | None = None
    after_id: int = 0
    laps: int = 0

_CANDIDATES = """
cand AS (
    SELECT j.id, j.finalized_at, j.metadata ->> 'cron_name' AS name,
           awa.try_timestamptz(j.metadata ->> 'cron_fire_time') AS fire, j.created_at
    FROM awa.jobs j
    WHERE j.state IN ('completed', 'discarded', 'cancelled') AND j.finalized_at < %(cutoff)s
      AND (j.finalized_at, j.id) > (coalesce(%(after_at)s::timestamptz, '-infinity'), %(after_id)s::bigint)
    ORDER BY j.finalized_at, j.id
    LIMIT %(batch)s
),
doomed AS (
    SELECT c.* FROM cand c
    WHERE c.name IS NULL OR %(keep)s::int = 0 OR c.id < coalesce((
        SELECT k.id FROM awa.jobs k
        WHERE k.metadata ? 'cron_name' AND k.metadata ->> 'cron_name' = c.name
        ORDER BY k.metadata ->> 'cron_name' DESC, k.id DESC
        OFFSET greatest(%(keep)s::int - 1, 0) LIMIT 1), 0)
)"""

_CURSOR = """
SELECT (SELECT finalized_at FROM cand ORDER BY finalized_at DESC, id DESC LIMIT 1) AS last_at,
       (SELECT id FROM cand ORDER BY finalized_at DESC, id DESC LIMIT 1) AS last_id,
       (SELECT count(*) FROM cand) AS scanned,
       (SELECT count(*) FROM {gone}) AS deleted,
       (SELECT coalesce(jsonb_object_agg(name, n), '{{}}'::jsonb)
        FROM (SELECT name, count(*) AS n FROM {gone} WHERE name IS NOT NULL GROUP BY name) x) AS by_schedule
"""

PRUNE_SQL = f"""
WITH {_CANDIDATES},
locked AS (
    SELECT j.id FROM awa.jobs j JOIN doomed d ON d.id = j.id
    WHERE j.state IN ('completed', 'discarded', 'cancelled')
    FOR UPDATE OF j SKIP LOCKED
),
del AS (
    DELETE FROM awa.jobs j USING doomed d
    WHERE j.id = d.id AND j.id IN (SELECT id FROM locked)
    RETURNING j.id, d.name, d.fire, d.created_at
),
marks AS (
    INSERT INTO awa.ledger_pruned AS p (cron_name, pruned_through, pruned_jobs)
    SELECT name, max(coalesce(fire, created_at)), count(*) FROM del WHERE name IS NOT NULL GROUP BY name
    ON CONFLICT (cron_name) DO UPDATE
    SET pruned_through = greatest(p.pruned_through, EXCLUDED.pruned_through),
        pruned_jobs = p.pruned_jobs + EXCLUDED.pruned_jobs
    RETURNING 1
)
{_CURSOR.format(gone="del")}
"""

OPERATOR_PRUNE_SQL = ("SELECT * FROM awa.prune_jobs(%(cutoff)s, %(keep)s, %(batch)s, %(after_at)s, %(after_id)s, "
                      "%(detail)s)")

DRY_RUN_SQL = f"WITH {_CANDIDATES}\n{_CURSOR.format(gone='doomed')}"

# skipped_overlap records (awa.fire_skips, v009) past the horizon, one bounded batch per
# prune: the schedule's pruned mark moves over them, so such an instant then reads
# `unknown (pruned)` like one whose job was pruned, never a wrong verdict. No row lock
# first: the runtime's role may delete them, not update them (which FOR UPDATE needs); a
# concurrent prune of the same rows waits on the delete and then finds them gone.
SKIPS_PRUNE_SQL = """
WITH gone AS (
    DELETE FROM awa.fire_skips s
    WHERE (s.cron_name, s.fire_time) IN (
        SELECT cron_name, fire_time FROM awa.fire_skips WHERE skipped_at < %(cutoff)s
        ORDER BY skipped_at LIMIT %(batch)s)
    RETURNING s.cron_name, s.fire_time
),
marks AS (
    INSERT INTO awa.ledger_pruned AS p (cron_name, pruned_through)
    SELECT cron_name, max(fire_time) FROM gone GROUP BY cron_name
    ON CONFLICT (cron_name) DO UPDATE SET pruned_through = greatest(p.pruned_through, EXCLUDED.pruned_through)
    RETURNING 1
)
SELECT count(*) AS n FROM gone
"""


# The leader's progress (v027): a lap begins with the first round and again when a walk reached
# the end; `check` warns when the current one has lasted too long, /metrics exports it.
PROGRESS_SQL = """
UPDATE awa.retention_progress
SET lap_started_at = CASE WHEN %(done)s THEN %(now)s ELSE coalesce(lap_started_at, %(now)s) END,
    lap_finished_at = CASE WHEN %(done)s THEN %(now)s ELSE lap_finished_at END,
    laps = laps + CASE WHEN %(done)s THEN 1 ELSE 0 END,
    walked_to = %(walked_to)s, cutoff = %(cutoff)s, deleted = deleted + %(deleted)s, updated_at = %(now)s
WHERE singleton
"""


def _record_progress(conn: psycopg.Connection[Any], result: PruneResult, cursor: RetentionCursor,
                     now: datetime) -> None:
    try:
        conn.execute(PROGRESS_SQL, {"done": result.done, "now": now, "walked_to": cursor.after_at,
                                    "cutoff": result.cutoff, "deleted": result.deleted})
    except psycopg.errors.UndefinedTable:
        pass  # a schema rolled back below v027 while this runtime runs: the prune itself went on


def prune_jobs(
    conn: psycopg.Connection[Any],
    older_than: timedelta = DEFAULT_HORIZON,
    *,
    keep: int = DEFAULT_KEEP,
    now: datetime | None = None,
    dry_run: bool = False,
    batch: int = BATCH,
    max_batches: int | None = None,
    budget_s: float | None = None,
    duty: float = 1.0,
    operator: str | None = None,
    cursor: RetentionCursor | None = None,
) -> PruneResult:
    """Prune jobs finished before `now - older_than`, keeping each schedule's last `keep`.

    `conn` in autocommit: every batch commits on its own. With `operator`, the prune is an
    operator action: each batch is awa.prune_jobs (v035), which records a `jobs_prune` audit
    event for a batch that deleted anything (nothing is deleted unaudited), and a last
    event records the totals. `max_batches`
    and `budget_s` (seconds, checked between batches) bound one call: the leader's
    housekeeping runs between evaluator passes. `duty` (0 < duty <= 1) paces a long prune:
    after a batch that took b seconds it waits b * (1 - duty) / duty, so the prune uses at
    most that share of a database core and the fire path keeps the rest. `done` says
    whether all was seen. `cursor` (the leader's) starts the walk where the last call
    stopped and is moved to where this one stops; the leader's progress is then recorded
    (awa.retention_progress) at `now`, the instant the call judged its horizon from."""
    if not 0 < duty <= 1:
        raise ValidationError(f"duty: expected a share in (0, 1], got {duty!r}")
    check_horizon(older_than)
    check_keep(keep)
    if operator is not None:
        operator = check_operator(operator)
    now = now or db_now(conn)
    cutoff = now - older_than
    start = cursor or RetentionCursor()
    params: dict[str, Any] = {"cutoff": cutoff, "keep": keep, "batch": batch, "after_at": start.after_at,
                              "after_id": start.after_id}
    deleted = 0
    by_schedule: dict[str, int] = {}
    batches = 0
    done = False
    detail = {"cutoff": cutoff, "keep": keep, "older_than_s": older_than.total_seconds(), "dry_run": dry_run}
    started = time.monotonic()
    while (max_batches is None or batches < max_batches) and (
            budget_s is None or batches == 0 or time.monotonic() - started < budget_s):
        with conn.transaction():
            began = time.monotonic()
            if operator is not None and not dry_run:
                # An operator's batch: the schema's function deletes and audits it (no role but
                # the runtime, the leader's housekeeping below, deletes jobs itself).
                begin_action(conn, operator, "jobs_prune", detail)
                row = conn.execute(OPERATOR_PRUNE_SQL, {**params, "detail": Jsonb(jsonable(detail))}).fetchone()
            else:
                row = conn.execute(DRY_RUN_SQL if dry_run else PRUNE_SQL, params, prepare=False).fetchone()
            took = time.monotonic() - began
        assert row is not None
        batches += 1
        deleted += int(row["deleted"])
        for name, n in row["by_schedule"].items():
            by_schedule[name] = by_schedule.get(name, 0) + int(n)
        if int(row["scanned"]) < batch:
            done = True
            break
        params["after_at"], params["after_id"] = row["last_at"], row["last_id"]
        if cursor is not None:
            cursor.after_at, cursor.after_id = row["last_at"], row["last_id"]
        if duty < 1:
            time.sleep(took * (1 - duty) / duty)  # pacing, not synchronisation: yield the database
    if done and cursor is not None:  # the walk reached the end: the next one begins again
        cursor.after_at, cursor.after_id, cursor.laps = None, 0, cursor.laps + 1
    if done and not dry_run and operator is None:  # an operator's last batch did it (awa.prune_jobs)
        conn.execute(SKIPS_PRUNE_SQL, {"cutoff": cutoff, "batch": batch}, prepare=False)
    if operator is not None and not dry_run:
        with conn.transaction():
            begin_action(conn, operator, "jobs_prune", detail)
            record_event(conn, "jobs_prune", "jobs", None, {"deleted": deleted, "done": done},
                         {**detail, "by_schedule": by_schedule})
    result = PruneResult(cutoff=cutoff, keep=keep, dry_run=dry_run, deleted=deleted, by_schedule=by_schedule,
                         batches=batches, done=done)
    if cursor is not None and not dry_run:  # the leader's rounds: where it got to, for check and /metrics
        _record_progress(conn, result, cursor, now)
    return result
