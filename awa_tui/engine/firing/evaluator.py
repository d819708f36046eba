"""One evaluator pass: which fires are due (S13, S14), fired atomically (S11, S12).

A pass reads DB time once (S9), fetches only rows whose stored `next_fire_at` hint is due
(one indexed probe when idle, S10) and the rows without a hint that are due or that SQL
does not decide (found by group, engine/firing/hints.py, S51), computes fires in Python, then
CAS-marks and inserts jobs for a whole chunk of schedules in one statement. The other
rows without a hint get theirs set-based, in bounded chunks, after the fires.

Every transaction of a pass carries the lock and statement timeouts (S59): a lock held
elsewhere ends the pass, which says so and is retried, instead of hanging the leader; a
shorter statement timeout of the role or database is kept, and fires then go out in
smaller statements.
"""

from __future__ import annotations

import functools
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg

from awa_tui.engine.core.errors import AwaError
from awa_tui.engine.core.limits import CATCH_UP_LIMIT, DEFAULT_LOCK_TIMEOUT, DEFAULT_STATEMENT_TIMEOUT
from awa_tui.engine.cron.expression import Fire, iso_utc
from awa_tui.engine.cron.spread import jitter_offset_ms
from awa_tui.engine.firing.arrays import array_literal as _array
from awa_tui.engine.firing.hints import (
    GROUPS_SQL,
    HINT_BUDGET_S,
    HINT_CHUNK,
    Groups,
    unhinted_groups,
    unhinted_rows_sql,
    write_group_hints,
)
from awa_tui.engine.schedules.columns import FAULT_SQL, JOB_COPIES, listed, safe_listed
from awa_tui.engine.schedules.definition import check_stored
from awa_tui.engine.schedules.exclusions import has_exclusions
from awa_tui.printable import printable_logger

if TYPE_CHECKING:
    from awa_tui.engine.calendars.store import Calendars

log = printable_logger("awa_tui.evaluator")

FIRE_CHUNK = 5000
FIRST_FIRE_LOOKBACK = timedelta(minutes=1)
ONE_MICROSECOND = timedelta(microseconds=1)


# S15: a poison instant (infinity, a BC date) would fail the whole fetch in Python's
# loader, so every instant goes through awa.safe_ts (NULL when unloadable) and the fault
# column says why; check_stored then skips that row only.
_DUE_LISTED = ("name", "cron_expr", "timezone", "missed_fire_policy", "last_enqueued_at", "next_fire_at",
               "created_at", "overlap", "start_at", "end_at", "max_fires", "fires_count", "jitter_ms",
               "exclude_dates", "exclude_calendars")
DUE_COLUMNS = safe_listed((*_DUE_LISTED, "catchup_window")) + f", {FAULT_SQL} AS fault"
# The same columns on a schema rolled back below v025 (`migrate --down-to`, S61) while this
# runtime still leads: no catch-up window there.
DUE_COLUMNS_BEFORE_V025 = safe_listed(_DUE_LISTED) + f", NULL::int AS catchup_window, {FAULT_SQL} AS fault"

# The rows with a hint that is due: one probe of cron_jobs_due_idx (S10). Rows without a
# hint are found by group (engine/firing/hints.py, S51): UNHINTED_SQL.
#
# The gate (the first hint in index order, an InitPlan: when it is ahead of `now` the scan
# is never run) is what keeps the idle pass one probe between vacuums. A boundary's fires
# leave one dead index entry per fired row below `now`; the planner reads the range with a
# bitmap scan, which never marks entries dead, so every idle pass visited them all again
# (measured at 1M: 14,404 dead entries, 3,109 heap pages, 2.6 ms per pass until autovacuum).
# An ordered index scan marks each dead entry it meets as such, so the first idle pass
# after a boundary pays once (4-11 ms) and the next ones read a page or two (0.03-0.09 ms).
DUE_GATE = """(SELECT g.next_fire_at FROM awa.cron_jobs g
       WHERE g.paused_at IS NULL AND g.retired_at IS NULL AND g.finished_at IS NULL
       ORDER BY g.next_fire_at LIMIT 1)"""
DUE_FROM = f"""
FROM awa.cron_jobs c
WHERE c.paused_at IS NULL AND c.retired_at IS NULL AND c.finished_at IS NULL AND c.next_fire_at <= %(now)s
  AND {DUE_GATE} <= %(now)s
"""
DUE_SQL = f"SELECT {DUE_COLUMNS}{DUE_FROM}"
UNHINTED_SQL = unhinted_rows_sql(DUE_COLUMNS)
DUE_SQL_BEFORE_V025 = f"SELECT {DUE_COLUMNS_BEFORE_V025}{DUE_FROM}"
UNHINTED_SQL_BEFORE_V025 = unhinted_rows_sql(DUE_COLUMNS_BEFORE_V025)
# S13's first-fire rule on created_at: candidate < L  <=>  created_at < L + lookback + 1 us.
CANDIDATE_LOOKBACK = FIRST_FIRE_LOOKBACK + ONE_MICROSECOND

# S48: f.run_at is a jittered fire's run time, NULL for an unjittered one (runs now).
# S11: rows are locked in name order, skipping any an operator holds (it will be seen
# next pass, in its new state); the CAS and pause/retire guards sit in the UPDATE itself.
# Arrays arrive as literals built by `_array` (see there); `unnest` of a constant array
# lets the planner see the batch size, which it needs to pick hash joins.
#
# Overlap (v009), decided here, under the row lock, in the statement that inserts: no
# window between check and insert. `busy` counts the waiting and running jobs of the
# schedules whose policy is not `allow` (`guarded`, empty in the common case: one probe of
# an empty array), through jobs_cron_active_idx. `decide` says how many of a plan's fires
# are enqueued (`k`): all for allow; for skip the first when nothing is waiting or
# running; for buffer_one the first when nothing is waiting. The rest of the plan's fires
# (catch_up replays overlap each other) go to awa.fire_skips: the ledger's skipped_overlap.
# Replace (v031, S74) fires like allow (`k` is every planned fire) and, for a row whose
# CAS it won and that enqueued, cancels the jobs still going when the statement began:
# `prior` locks them (of the schedules whose policy is replace, `replacing`; a chunk
# without one is sent the statement without these steps, _fire_sql), the pass's first job names them in its
# metadata (`cron_replaced`) and `replaced` ends them: a waiting one cancelled at once, a
# running one asked of its runtime (cancel_requested_at, as an operator's cancel). Only
# jobs of earlier fires: this statement's own jobs are not in its snapshot.
# Bounds are planned in Python (plan_fires): `ends` marks a plan past end_at; the count
# of scheduled fires moves by `k` and reaching max_fires finishes the schedule too.
# Catch-up window (v025, S66), planned in Python like the bounds: a shape's instants older
# than the window are not among its fires, and `too_old` is the newest of them (NULL when
# none): the statement records it in awa.fire_skips with reason 'too_old' (the ledger's
# skipped_too_old), only for a row whose CAS it won.
# The overlap policy replace's parts of the fire statement (see _fire_sql).
_REPLACE_PRIOR = """\
-- Replace: the jobs still going of the rows it fires, locked (a worker finishing one first
-- is waited for, and the row then judged as it ended). After `mark`: its rows are locked.
prior AS (
    SELECT j.id, j.metadata ->> 'cron_name' AS name
    FROM awa.jobs j
    WHERE cardinality(%(replacing)s::text[]) > 0  -- folded at planning: no replace plan, no scan
      AND j.metadata ->> 'cron_name' = ANY(%(replacing)s::text[])
      AND j.metadata ->> 'cron_name' BETWEEN (SELECT min(g) FROM unnest(%(replacing)s::text[]) AS g)
                                         AND (SELECT max(g) FROM unnest(%(replacing)s::text[]) AS g)
      AND j.state IN ('available', 'running', 'retryable') AND j.metadata ? 'cron_name'
      AND j.metadata ->> 'cron_name' IN (SELECT m.name FROM mark m WHERE m.overlap = 'replace' AND m.k > 0)
    ORDER BY j.id
    FOR UPDATE OF j
),
-- One row: each schedule's replaced ids under its name (a jsonb object's key lookup is a
-- binary search: the insert's lookup per replace row stays cheap with thousands of them).
-- MATERIALIZED: computed once, not inlined into that lookup (a whole aggregate per row).
gone AS MATERIALIZED (
    SELECT jsonb_object_agg(p.name, p.ids) AS map
    FROM (SELECT name, jsonb_agg(id ORDER BY id) AS ids FROM prior GROUP BY name) p
),
"""
_PLAIN_METADATA = """\
           m.metadata || jsonb_build_object('cron_name', m.name, 'cron_fire_time', f.fire_iso),
"""
_REPLACE_METADATA = """\
           CASE WHEN m.overlap <> 'replace'
                THEN m.metadata || jsonb_build_object('cron_name', m.name, 'cron_fire_time', f.fire_iso)
                -- Replace: the first job of the pass names the jobs it replaced (never
                -- evaluated for another policy); the keys are the statement's alone.
                ELSE (m.metadata - 'cron_replaced' - 'cron_replaced_by')
                     || jsonb_build_object('cron_name', m.name, 'cron_fire_time', f.fire_iso)
                     || CASE WHEN f.rank = 1 THEN coalesce(
                            (SELECT jsonb_build_object('cron_replaced', g.map -> m.name) FROM gone g
                             WHERE g.map ? m.name), '{}') ELSE '{}' END END,
"""
_REPLACE_CANCEL = """\
-- Replace: end the jobs `prior` locked, each naming the job that replaced it.
replaced AS (
    UPDATE awa.jobs j
    SET state = CASE WHEN j.state = 'running' THEN j.state ELSE 'cancelled' END,
        finalized_at = CASE WHEN j.state = 'running' THEN j.finalized_at ELSE now() END,
        cancel_requested_at = CASE WHEN j.state = 'running' THEN coalesce(j.cancel_requested_at, now())
                                   ELSE j.cancel_requested_at END,
        metadata = j.metadata || jsonb_build_object('cron_replaced_by', i.id),
        errors = CASE WHEN j.state = 'running' THEN j.errors
                      ELSE coalesce(j.errors, '[]'::jsonb) || jsonb_build_array(jsonb_build_object(
                          'attempt', j.attempt, 'error', 'replaced by job ' || i.id, 'reason', 'replaced',
                          'at', now())) END
    FROM prior r JOIN ins i ON i.name = r.name AND i.replacing
    WHERE cardinality(%(replacing)s::text[]) > 0  -- folded at planning, as `prior`
      AND j.id = r.id AND j.state IN ('available', 'running', 'retryable')
    RETURNING j.id, r.name, i.fire_time
),
"""
_REPLACE_OUTCOME = """\
-- Replace: a job this fire cancelled (or asked its runtime to cancel), and the instant that did.
UNION ALL SELECT id, name, fire_time, 'replaced' FROM replaced
"""


def _fire_sql(replace: bool) -> str:
    """The fire statement. With `replace` it also takes the overlap policy replace's steps
    (v031: `prior`, `gone`, `replaced`), sent only for a batch with a replace plan: every
    other batch runs the statement without them, which is valid on a schema rolled back
    below v020 too (the documented rollback, while this release still leads)."""
    overlap_column, replacing_column = (", c.overlap", ",\n              metadata ? 'cron_replaced' AS replacing") \
        if replace else ("", "")
    prior, job_metadata, replaced, union_replaced = (_REPLACE_PRIOR, _REPLACE_METADATA, _REPLACE_CANCEL,
                                                     _REPLACE_OUTCOME) if replace else ("", _PLAIN_METADATA, "", "")
    return f"""
-- awa fire batch: UPDATE awa.cron_jobs (CAS) + INSERT INTO awa.jobs, one statement.
-- (First, so pg_stat_activity, which keeps 1024 bytes of a query, names it.)
-- A chunk's plans share a few shapes (a boundary: every per-minute schedule in a zone has
-- the same token, fires and hint), so each shape is sent once (`grp`) and each plan is a
-- name and its shape's number (S53: building the arrays ~24 -> ~8 us a fire).
WITH grp AS (
    SELECT * FROM unnest(%(expected)s::timestamptz[], %(new_last)s::timestamptz[],
                         %(next_hint)s::timestamptz[], %(exprs)s::text[], %(zones)s::text[],
                         %(overlaps)s::text[], %(counts)s::int[], %(ends)s::boolean[],
                         %(too_old)s::timestamptz[]) WITH ORDINALITY
        AS g(expected, new_last, next_hint, cron_expr, timezone, overlap, n, ends, too_old, gid)
),
plan AS (
    SELECT n.name, n.seq, g.* FROM unnest(%(names)s::text[], %(groups)s::int[]) WITH ORDINALITY AS n(name, gid, seq)
    JOIN grp g ON g.gid = n.gid
),
-- Before any mention of awa.jobs: Postgres locks tables in the order a statement names
-- them, and a fire must take cron_jobs before jobs, like the migration runner (S35).
locked AS (
    SELECT c.name FROM awa.cron_jobs c
    WHERE c.name = ANY(%(names)s::text[])
    ORDER BY c.name
    FOR UPDATE SKIP LOCKED
),
busy AS (
    SELECT j.metadata ->> 'cron_name' AS name, count(*) AS active,
           count(*) FILTER (WHERE j.state <> 'running') AS waiting
    FROM awa.jobs j
    WHERE cardinality(%(guarded)s::text[]) > 0  -- folded at planning: no guarded plan, no scan
      AND j.metadata ->> 'cron_name' = ANY(%(guarded)s::text[])
      -- Redundant, for the planner (measured at scale): without a range it estimates that 5000 names
      -- match every active job and reads all of them through jobs_state_queue_idx, in
      -- every chunk (a 100k pass: 20 x 50k rows filtered, ~1 s). With it, the probe is the
      -- index's one descent per guarded name. Bounds from Postgres, in its collation.
      AND j.metadata ->> 'cron_name' BETWEEN (SELECT min(g) FROM unnest(%(guarded)s::text[]) AS g)
                                         AND (SELECT max(g) FROM unnest(%(guarded)s::text[]) AS g)
      AND j.state IN ('available', 'running', 'retryable') AND j.metadata ? 'cron_name'
    GROUP BY 1
),
decide AS (
    SELECT p.name, CASE p.overlap WHEN 'skip' THEN least(p.n, (coalesce(b.active, 0) = 0)::int)
                                  WHEN 'buffer_one' THEN least(p.n, (coalesce(b.waiting, 0) = 0)::int)
                                  ELSE p.n END AS k
    FROM plan p LEFT JOIN busy b ON b.name = p.name
),
mark AS (
    UPDATE awa.cron_jobs c
    SET last_enqueued_at = p.new_last, next_fire_at = p.next_hint,
        fires_count = c.fires_count + d.k,
        finished_at = CASE WHEN p.ends OR c.fires_count + d.k >= c.max_fires
                           THEN coalesce(%(now)s::timestamptz, clock_timestamp()) END
    FROM plan p JOIN decide d ON d.name = p.name
    WHERE c.name = p.name
      -- Redundant, for the planner (measured at 1M): with hash joins only, it otherwise reads
      -- every schedule to join them to the locked names (1M rows: 350 ms a chunk).
      AND c.name = ANY(%(names)s::text[])
      AND c.name IN (SELECT name FROM locked)
      AND c.last_enqueued_at IS NOT DISTINCT FROM p.expected
      AND c.paused_at IS NULL
      AND c.retired_at IS NULL
      AND c.finished_at IS NULL
      AND c.cron_expr = p.cron_expr AND c.timezone = p.timezone AND c.overlap = p.overlap
    RETURNING c.name, d.k, p.gid, p.seq, p.too_old{overlap_column}, {listed(JOB_COPIES, "c")}
),
{prior}-- Each shape's fires, in rank order (a jittered plan is a shape of its own: its run_at).
fires AS (
    SELECT * FROM unnest(%(fire_groups)s::int[], %(fire_iso)s::text[], %(fire_rank)s::int[],
                         %(fire_run_at)s::timestamptz[])
        AS f(gid, fire_iso, rank, run_at)
),
ins AS (
    INSERT INTO awa.jobs (kind, queue, args, state, priority, attempt, max_attempts, metadata, tags, run_at)
    SELECT m.kind, m.queue, m.args, 'available', m.priority, 0, m.max_attempts,
{job_metadata}           m.tags, coalesce(f.run_at, now())
    FROM mark m JOIN fires f ON f.gid = m.gid
    WHERE f.rank <= m.k
    ORDER BY m.seq, f.rank
    RETURNING id, metadata ->> 'cron_name' AS name, metadata ->> 'cron_fire_time' AS fire_time{replacing_column}
),
{replaced}skips AS (
    INSERT INTO awa.fire_skips (cron_name, fire_time, reason, skipped_at)
    SELECT m.name, f.fire_iso::timestamptz, 'overlap', now() FROM mark m JOIN fires f ON f.gid = m.gid
    WHERE f.rank > m.k
    UNION ALL
    SELECT m.name, m.too_old, 'too_old', coalesce(%(now)s::timestamptz, clock_timestamp()) FROM mark m
    WHERE m.too_old IS NOT NULL
    ON CONFLICT DO NOTHING
    RETURNING cron_name, fire_time, reason
)
SELECT id, name, fire_time, 'job' AS outcome FROM ins
UNION ALL SELECT NULL, cron_name, awa.instant_text(fire_time), CASE reason WHEN 'too_old' THEN 'too_old' ELSE 'skip' END
FROM skips
{union_replaced}-- A plan that enqueued nothing (all skipped, or only finished) still won its CAS.
UNION ALL SELECT NULL, name, NULL, 'mark' FROM mark WHERE k = 0
"""


FIRE_BATCH_SQL = _fire_sql(replace=False)
FIRE_REPLACE_SQL = _fire_sql(replace=True)

# Hints for rows that are not due yet; guarded so a concurrent fire or edit wins.
HINT_SQL = """
UPDATE awa.cron_jobs c SET next_fire_at = h.next_hint
FROM unnest(%(names)s::text[], %(expected)s::timestamptz[], %(next_hint)s::timestamptz[],
            %(exprs)s::text[], %(zones)s::text[])
    AS h(name, expected, next_hint, cron_expr, timezone)
WHERE c.name = h.name
  AND c.last_enqueued_at IS NOT DISTINCT FROM h.expected
  AND c.cron_expr = h.cron_expr AND c.timezone = h.timezone
  AND c.next_fire_at IS NULL
"""


@dataclass(frozen=True)
class Timeouts:
    """What every transaction of a pass sets for itself (SET LOCAL, so a connection shared
    with other loops, or a pooler's, keeps its own settings): the lock timeout, and the
    statement timeout unless the role or database already has a shorter one."""

    lock_ms: int = int(DEFAULT_LOCK_TIMEOUT.total_seconds() * 1000)
    statement_ms: int = int(DEFAULT_STATEMENT_TIMEOUT.total_seconds() * 1000)

    @classmethod
    def of(cls, lock_timeout: timedelta, statement_timeout: timedelta) -> Timeouts:
        """A client's timeouts (timedeltas) in the milliseconds the server takes."""
        return cls(lock_ms=round(lock_timeout.total_seconds() * 1000),
                   statement_ms=round(statement_timeout.total_seconds() * 1000))

    @functools.cached_property
    def settings(self) -> str:
        """A select list that sets both for the current transaction."""
        ms = self.statement_ms
        return (f"set_config('lock_timeout', '{self.lock_ms}ms', true) AS lock_timeout, "
                "set_config('statement_timeout', (SELECT CASE WHEN s > 0 AND s < {ms} THEN round(s) ELSE {ms} END "
                "FROM (SELECT extract(epoch FROM current_setting('statement_timeout')::interval) * 1000 AS s) t)"
                "::bigint || 'ms', true) AS statement_timeout").replace("{ms}", str(ms))

    @functools.cached_property
    def read_sql(self) -> str:
        """Opens the pass's read transaction and reads DB time: one round trip (several
        statements in one simple query; no parameters), so the idle pass pays only COMMIT."""
        return f"BEGIN; SELECT {self.settings}, clock_timestamp() AS now"

    @functools.cached_property
    def fire_sql(self) -> str:
        return f"SELECT {self.settings}"

    @functools.cached_property
    def fire_hash_sql(self) -> str:
        # Big batches get hash joins only: see _run_batch.
        return f"SELECT {self.settings}, set_config('enable_nestloop', 'off', true) AS nestloop"


DEFAULT_TIMEOUTS = Timeouts()


class PassTimedOut(AwaError):
    """A statement of the pass gave up on its lock or statement timeout (S59); nothing of
    the statement was written, and the next pass tries again."""

    def __init__(self, message: str, now: datetime | None) -> None:
        super().__init__(message)
        self.now = now  # the pass's DB time, when it was read


TIMEOUT_ERRORS = (psycopg.errors.LockNotAvailable, psycopg.errors.QueryCanceled)


@dataclass
class FirePlan:
    name: str
    expected: datetime | None
    fires: list[Fire]  # may be empty: instants consumed outside the bounds, or a finish
    next_hint: datetime
    cron_expr: str
    timezone: str
    overlap: str = "allow"
    new_last: datetime | None = None  # the CAS token after the plan (default: the last fire)
    ends: bool = False  # the next instant is past end_at: the schedule finishes
    jitter_ms: int = 0  # S48: each job's run_at is delayed by [0, jitter_ms)
    too_old: datetime | None = None  # S66: the newest instant skipped as older than the catch-up window


@dataclass
class FiredJob:
    id: int
    name: str
    fire_time: str
    # job | skip (skipped_overlap, id None) | too_old (skipped_too_old: the newest such instant)
    # | mark (CAS won, nothing enqueued) | replaced (a job of an earlier fire this fire
    # cancelled: `id` is that job, `fire_time` the instant that replaced it)
    outcome: str = "job"


@dataclass
class PassResult:
    now: datetime
    examined: int = 0  # rows planned in Python (due, or not decided by their group)
    hinted: int = 0  # rows without a hint that got theirs set-based (S51)
    planned: int = 0
    jobs: list[FiredJob] = field(default_factory=list)
    lost_races: int = 0  # schedules whose CAS matched nothing (fired elsewhere, paused...)
    errors: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (name, instant): skipped_overlap
    # (name, instant): the newest instant each schedule skipped as older than its catch-up window (S66)
    too_old: list[tuple[str, str]] = field(default_factory=list)
    # (name, job id): the jobs of earlier fires the overlap policy replace cancelled (or
    # asked their runtime to cancel)
    replaced: list[tuple[str, int]] = field(default_factory=list)

    @property
    def fired(self) -> int:
        return len(self.jobs)


def due_schedules(conn: psycopg.Connection[Any], now: datetime, groups: Groups | None = None) -> list[dict[str, Any]]:
    """The rows the Python path plans at `now`: hints that are due, and the rows without a
    hint that their group does not decide (S51)."""
    rows = conn.execute(DUE_SQL, {"now": now}).fetchall()
    if groups is None:
        groups = unhinted_groups(conn, now, CANDIDATE_LOOKBACK)
    if groups:
        rows += conn.execute(UNHINTED_SQL, groups.params(CANDIDATE_LOOKBACK), prepare=False).fetchall()
    return rows


def first_candidate(row: dict[str, Any]) -> datetime:
    """The instant after which fires are new (S13)."""
    if row["last_enqueued_at"] is not None:
        return row["last_enqueued_at"]
    # First fire: only fires in [created_at - 1 minute, now] count.
    return row["created_at"] - FIRST_FIRE_LOOKBACK - ONE_MICROSECOND


def plan_fires(row: dict[str, Any], now: datetime, catch_up_limit: int) -> tuple[FirePlan | None, datetime]:
    """Fires due for one row at `now`, and the row's next hint. Raises on a bad row.

    Bounds (v009): instants before start_at or after end_at are not due; at most
    max_fires - fires_count fires are planned (for `allow`: the statement enqueues every
    planned fire, and so does replace; skip and buffer_one enqueue at most one per pass).

    Catch-up window (v025, S66): an instant older than `catchup_window` seconds at `now`
    does not fire, whatever the policy; the token moves past it, and the plan's `too_old`
    names the newest such instant for the ledger. Arithmetic on the row already read: the
    window costs the pass no statement."""
    cron = check_stored(row)
    start, end = row.get("start_at"), row.get("end_at")
    hint = row["next_fire_at"] or cron.next_after(first_candidate(row)).at
    if start is not None and hint < start:
        hint = cron.next_after(start - ONE_MICROSECOND).at
    remaining = None if row.get("max_fires") is None else row["max_fires"] - row.get("fires_count", 0)
    if (end is not None and hint > end) or (remaining is not None and remaining <= 0):
        # Nothing more can fire: finish (one statement, like a fire, under the same CAS).
        return _plan(row, [], row["last_enqueued_at"], hint, ends=True), hint
    if hint > now:
        return None, hint
    last = row["last_enqueued_at"]
    upto = now if end is None else min(now, end)
    too_old = _too_old(cron, row, now, upto, hint)
    if last is None or row["missed_fire_policy"] == "coalesce":
        # Coalesce and first fire: the most recent due fire, one computation (S13).
        latest = cron.latest_at_or_before(upto)
        fires = [latest] if latest is not None and latest.at >= hint and (
            too_old is None or latest.at > too_old) else []
    else:
        fires = cron.between(last if too_old is None else too_old, upto, catch_up_limit)
    if not fires:
        if too_old is None:
            return None, hint
        # S66: every due instant was too old: the token moves to the newest, nothing fires.
        following = _following(cron, too_old, start)
        return _plan(row, [], too_old, following, ends=end is not None and following > end,
                     too_old=too_old), following
    new_last = fires[-1].at
    following = _following(cron, new_last, start)
    fires = [f for f in fires if start is None or f.at >= start]
    if remaining is not None and row.get("overlap", "allow") in ("allow", "replace") and len(fires) > remaining:
        # The count finishes the schedule in this statement; the token stays on its last fire.
        fires = fires[:remaining]
        new_last = fires[-1].at
    ends = end is not None and following > end
    return _plan(row, fires, new_last, following, ends=ends, too_old=too_old), following


def catchup_floor(row: dict[str, Any], now: datetime) -> datetime | None:
    """S66: the oldest instant the row may still fire at `now` (None: no catch-up window)."""
    window = row.get("catchup_window")
    return None if window is None else now - timedelta(seconds=window)


def _too_old(cron: Any, row: dict[str, Any], now: datetime, upto: datetime, hint: datetime) -> datetime | None:
    """S66: the newest due instant (from `hint` on, at or before `upto`) older than the
    row's catch-up window at `now`, or None when none is."""
    floor = catchup_floor(row, now)
    if floor is None or hint >= floor:
        return None
    stale = cron.latest_at_or_before(min(floor - ONE_MICROSECOND, upto))
    return stale.at if stale is not None and stale.at >= hint else None


def _following(cron: Any, after: datetime, start: datetime | None) -> datetime:
    """The hint after instant `after`: the next instant, not before start_at."""
    following: datetime = cron.next_after(after).at
    if start is not None and following < start:
        following = cron.next_after(start - ONE_MICROSECOND).at
    return following


class SharedPlans:
    """plan_fires for the rows of one pass, computed once per shape of row.

    A plan depends on a row's expression, zone, policies, token, hint and bounds, never
    on its name or payload, and a boundary's due rows share a handful of those (10,000
    per-minute schedules in five zones: five). Rows of a known shape reuse its plan
    (the fires list is shared: nothing mutates it) under their own name and jitter
    (S53: planning was ~15 us a fire, most of a boundary's Python). A row that
    plan_fires refuses is never remembered: each such row raises its own error."""

    def __init__(self, now: datetime, catch_up_limit: int) -> None:
        self.now = now
        self.catch_up_limit = catch_up_limit
        self.known: dict[tuple[Any, ...], tuple[FirePlan | None, datetime]] = {}

    def plan(self, row: dict[str, Any]) -> tuple[FirePlan | None, datetime]:
        if row["fault"]:
            return plan_fires(row, self.now, self.catch_up_limit)  # raises its fault
        last, hint = row["last_enqueued_at"], row["next_fire_at"]
        max_fires = row.get("max_fires")
        key = (row["cron_expr"], row["timezone"], row["missed_fire_policy"], row.get("overlap", "allow"), last, hint,
               # created_at decides the first candidate only when there is neither (S13).
               row["created_at"] if last is None and hint is None else None,
               row.get("start_at"), row.get("end_at"),
               None if max_fires is None else max_fires - row.get("fires_count", 0), row.get("catchup_window"))
        known = self.known.get(key)
        if known is None:
            known = self.known[key] = plan_fires(row, self.now, self.catch_up_limit)
            return known
        shape, next_hint = known
        if shape is None:
            return None, next_hint
        return FirePlan(row["name"], shape.expected, shape.fires, shape.next_hint, shape.cron_expr, shape.timezone,
                        shape.overlap, shape.new_last, shape.ends, row.get("jitter_ms") or 0, shape.too_old), next_hint


def drop_excluded(plan: FirePlan, row: dict[str, Any], calendars: Calendars | None,
                  now: datetime | None = None) -> FirePlan:
    """S56: the plan without its fires on excluded dates (in the schedule's zone). The CAS
    token still moves to the last instant planned, so an excluded instant is consumed like
    a fired one: never replayed, never doubled. Raises for a bad exclusion (S15)."""
    from awa_tui.engine.cron.expression import parse_timezone
    from awa_tui.engine.schedules.exclusions import exclusions_of

    rules = exclusions_of(row, calendars.days if calendars else {}, calendars.broken if calendars else None)
    if rules is None or not plan.fires:
        return plan
    zone = parse_timezone(plan.timezone)
    kept = [f for f in plan.fires if rules.rule_for(f.at, zone) is None]
    if len(kept) == len(plan.fires):
        return plan
    last = plan.new_last if plan.new_last is not None else plan.fires[-1].at
    if not kept and (row["last_enqueued_at"] is None or row["missed_fire_policy"] == "coalesce"):
        # Coalesce fires the most recent due instant; an excluded one is not due, so it is
        # the latest one before it that is not excluded, if the missed span holds one.
        kept = _latest_not_excluded(row, plan.fires[0], rules, zone)
        floor = None if now is None else catchup_floor(row, now)
        if kept and floor is not None and kept[0].at < floor:
            # S66: that one is older than the catch-up window: skipped as too old instead.
            stale = kept[0].at
            return replace(plan, fires=[], new_last=last,
                           too_old=stale if plan.too_old is None else max(plan.too_old, stale))
    return replace(plan, fires=kept, new_last=last)


def _latest_not_excluded(row: dict[str, Any], latest: Fire, rules: Any, zone: Any) -> list[Fire]:
    cron = check_stored(row)
    floor = first_candidate(row)  # instants at or before it are not new (S13)
    start = row.get("start_at")
    cursor = latest
    for _ in range(CATCH_UP_LIMIT):  # a bounded walk back: a long freeze does not stall a pass
        previous = cron.latest_at_or_before(cursor.at - ONE_MICROSECOND)
        if previous is None or previous.at <= floor or (start is not None and previous.at < start):
            return []
        if rules.rule_for(previous.at, zone) is None:
            return [previous]
        cursor = previous
    return []


def _plan(row: dict[str, Any], fires: list[Fire], new_last: datetime | None, hint: datetime, *,
          ends: bool, too_old: datetime | None = None) -> FirePlan:
    return FirePlan(row["name"], row["last_enqueued_at"], fires, hint, row["cron_expr"], row["timezone"],
                    row.get("overlap", "allow"), new_last, ends, row.get("jitter_ms") or 0, too_old)


def _batch_params(plans: list[FirePlan], now: datetime | str | None) -> dict[str, str | None]:
    """Parameters of FIRE_BATCH_SQL for plans already sorted by name (lock order): each
    plan's name and shape number, and each shape (token, fires, hint, expression...) once."""
    shapes: dict[tuple[Any, ...], str] = {}  # shape -> its number (1-based, as a literal)
    names: list[str] = []
    groups: list[str] = []
    # One element per shape:
    expected: list[datetime | None] = []
    new_last: list[datetime | None] = []
    next_hint: list[datetime] = []
    exprs: list[str] = []
    zones: list[str] = []
    overlaps: list[str] = []
    counts: list[str] = []
    ends: list[str] = []
    too_old: list[datetime | None] = []
    # One element per fire of a shape:
    fire_groups: list[str] = []
    fire_iso: list[str] = []
    fire_rank: list[str] = []
    fire_run_at: list[datetime | None] = []
    for plan in plans:
        fires = plan.fires
        last = plan.new_last if plan.new_last is not None or not fires else fires[-1].at
        key = (plan.expected, last, plan.next_hint, plan.cron_expr, plan.timezone, plan.overlap, plan.ends,
               plan.too_old,
               # S48: a jittered plan's jobs run at instant + an offset of its own name.
               plan.name if plan.jitter_ms else None, *(f.at for f in fires))
        gid = shapes.get(key)
        if gid is None:
            gid = shapes[key] = str(len(shapes) + 1)
            expected.append(plan.expected)
            new_last.append(last)
            next_hint.append(plan.next_hint)
            exprs.append(plan.cron_expr)
            zones.append(plan.timezone)
            overlaps.append(plan.overlap)
            counts.append(str(len(fires)))
            ends.append("t" if plan.ends else "f")
            too_old.append(plan.too_old)
            for rank, fire in enumerate(fires, 1):
                iso = iso_utc(fire.at)
                fire_groups.append(gid)
                fire_iso.append(iso)
                fire_rank.append(_RANKS[rank] if rank < len(_RANKS) else str(rank))
                fire_run_at.append(fire.at + timedelta(milliseconds=jitter_offset_ms(plan.name, iso, plan.jitter_ms))
                                   if plan.jitter_ms else None)
        names.append(plan.name)
        groups.append(gid)
    return {
        "names": _array(names),
        "groups": "{" + ",".join(groups) + "}",
        "expected": _array(expected),
        "new_last": _array(new_last),
        "next_hint": _array(next_hint),
        "exprs": _array(exprs),
        "zones": _array(zones),
        "overlaps": _array(overlaps),
        "counts": _array(counts),
        "ends": _array(ends),
        "too_old": _array(too_old),
        "guarded": _array(p.name for p in plans if p.overlap in GUARDED),
        "replacing": _array(p.name for p in plans if p.overlap == "replace"),
        "fire_groups": "{" + ",".join(fire_groups) + "}",
        "fire_iso": _array(fire_iso),
        "fire_rank": _array(fire_rank),
        "fire_run_at": _array(fire_run_at),
        "now": now.isoformat() if isinstance(now, datetime) else now,  # finished_at (NULL: DB time)
    }


_RANKS = tuple(str(i) for i in range(CATCH_UP_LIMIT + 1))  # rank strings, built once
GUARDED = ("skip", "buffer_one")  # the policies `busy` counts jobs for (replace fires every plan's fires)


HASH_JOINS_FROM = 500  # plans per batch from which nested loops are switched off


def _run_batch(conn: psycopg.Connection[Any], params: dict[str, str | None], size: int,
               timeouts: Timeouts = DEFAULT_TIMEOUTS) -> list[FiredJob]:
    # Never prepared: after ten runs Postgres would switch to a generic plan that cannot
    # see the batch size and turns a 0.1 s chunk into 1 s (bench/README.md, profiles).
    # The CAS join's output is always estimated at ~1 row; with some statistics the
    # planner then nests the `locked` CTE scan inside a loop over it: 5000 x 5000
    # comparisons, 1 s per chunk instead of 0.1 s. Big batches get hash joins only.
    with conn.transaction():
        conn.execute(timeouts.fire_sql if size < HASH_JOINS_FROM else timeouts.fire_hash_sql, prepare=False)
        sql = FIRE_BATCH_SQL if params["replacing"] == "{}" else FIRE_REPLACE_SQL
        rows = conn.execute(sql, params, prepare=False).fetchall()
    return [FiredJob(r["id"], r["name"], r["fire_time"], r["outcome"]) for r in rows]


def fire_batch(conn: psycopg.Connection[Any], plans: list[FirePlan], now: datetime | None = None) -> list[FiredJob]:
    """CAS-mark every planned schedule and insert its jobs, in one statement (S11)."""
    if not plans:
        return []
    rows = _run_batch(conn, _batch_params(sorted(plans, key=lambda p: p.name), now), len(plans))
    return [r for r in rows if r.outcome == "job"]


# S59: after a fire statement was cancelled by the statement timeout (the role's or the
# database's may be far shorter than a chunk), statements carry at most this many
# schedules, per database, for STATEMENT_CAP_HOLD_S; then full chunks are tried again.
_statement_cap: dict[tuple[str, int, str], tuple[int, float]] = {}
STATEMENT_CAP_HOLD_S = 60.0


def _cap(conn: psycopg.Connection[Any]) -> int | None:
    held = _statement_cap.get((conn.info.host, conn.info.port, conn.info.dbname))
    if held is None or time.monotonic() - held[1] > STATEMENT_CAP_HOLD_S:
        return None
    return held[0]


def _fire_degrading(
    conn: psycopg.Connection[Any], params: dict[str, str | None], plans: list[FirePlan], errors: list[str],
    timeouts: Timeouts,
) -> list[FiredJob]:
    """Fire one chunk; when the statement timeout cancels it, halve the statements down to
    one schedule (the CAS makes the retry safe; the cancelled statement wrote nothing).
    Only a single schedule's statement that is still cancelled ends the pass."""
    cap = _cap(conn)
    if cap is not None and len(plans) > cap:
        jobs: list[FiredJob] = []
        for i in range(0, len(plans), cap):
            piece = plans[i:i + cap]
            jobs += _fire_degrading(conn, _batch_params(piece, params["now"]), piece, errors, timeouts)
        return jobs
    began = time.perf_counter()
    try:
        return _fire_bisecting(conn, params, plans, errors, timeouts)
    except psycopg.errors.QueryCanceled as exc:
        if len(plans) == 1:
            raise
        took_ms = (time.perf_counter() - began) * 1000
        half = (len(plans) + 1) // 2
        database = (conn.info.host, conn.info.port, conn.info.dbname)
        _statement_cap[database] = (min(half, cap or half), time.monotonic())
        log.warning("a fire statement of %d schedules was cancelled after %.0f ms (%s): firing in statements "
                    "of at most %d", len(plans), took_ms, _first_line(exc), half)
    return _fire_degrading(conn, params, plans, errors, timeouts)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


# SQLSTATE classes that blame the data of some rows: data exception, integrity, a PL/pgSQL
# RAISE (an operator's trigger), a program limit (an index row too large).
ROW_REFUSALS = ("22", "23", "P0", "54")
REFUSED_ROWS_MAX = 32  # per chunk: past this the refusal is systemic, not a few bad rows


def _fire_isolating(
    conn: psycopg.Connection[Any], params: dict[str, str | None], plans: list[FirePlan],
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
) -> tuple[list[FiredJob], list[str]]:
    """Fire one chunk; if Postgres refuses it for its data, bisect to the refusing rows.

    The SQL guards (FAULT_SQL) keep known poison out of a chunk, so this costs nothing
    for healthy rows: the chunk is one statement, as before. A refusal the guards did not
    foresee (a hand-made trigger, a value no check knows) rolls back that statement only;
    halves are retried (the CAS makes a retry safe) until each refusing schedule is alone
    and skipped, ~2 log2(chunk) statements per bad row. Anything else (a lost connection,
    a cancelled statement, a missing table) or more than REFUSED_ROWS_MAX refusing rows
    still ends the pass at once, as before."""
    errors: list[str] = []
    return _fire_degrading(conn, params, plans, errors, timeouts), errors


def _fire_bisecting(
    conn: psycopg.Connection[Any], params: dict[str, str | None], plans: list[FirePlan], errors: list[str],
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
) -> list[FiredJob]:
    try:
        return _run_batch(conn, params, len(plans), timeouts)
    except psycopg.Error as exc:
        if (exc.sqlstate or "")[:2] not in ROW_REFUSALS or len(errors) >= REFUSED_ROWS_MAX:
            raise
        if len(plans) == 1:
            lines = str(exc).strip().splitlines() or [type(exc).__name__]
            errors.append(f"schedule {plans[0].name!r} skipped: the database refused its fire: {lines[0]!r}")
            return []
    half = len(plans) // 2
    jobs = _fire_bisecting(conn, _batch_params(plans[:half], params["now"]), plans[:half], errors, timeouts)
    return jobs + _fire_bisecting(conn, _batch_params(plans[half:], params["now"]), plans[half:], errors, timeouts)


FIRE_CONNECTIONS = 2  # chunks in flight at once, each on its own connection (S53)


class _BatchSender:
    """Fires the chunks of one pass, one statement (one transaction) each.

    With `overlap`, helper threads execute chunks while the pass thread plans the next:
    planning is now a fraction of a chunk's database time, so with `more` (a source of
    connections) chunk k goes to connection k mod FIRE_CONNECTIONS, two backends working
    at once (a 1M fleet's minute boundary, 12k fires, on a shared 2-core machine:
    1.0-1.3 s -> 0.8-1.2 s a pass). Chunks hold
    disjoint names, lock them with SKIP LOCKED and each keeps its CAS, so concurrent
    chunks never wait on each other and are exact as two racing evaluators are (S11).
    Each connection is used by one thread at a time; results are recorded in send order.
    A failing chunk ends the pass once it is seen, after the chunk already in flight on
    the other connection, which commits or not on its own like any chunk."""

    def __init__(self, conn: psycopg.Connection[Any], result: PassResult, overlap: bool,
                 more: Callable[[], AbstractContextManager[psycopg.Connection[Any]]] | None = None,
                 timeouts: Timeouts = DEFAULT_TIMEOUTS) -> None:
        self.conns = [conn]
        self.timeouts = timeouts
        self.now = result.now
        self.result = result
        self.more = more if overlap else None
        self.slots = FIRE_CONNECTIONS if self.more is not None else 1
        self.extra = ExitStack()  # the connections taken from `more`, given back at close
        self.pool = ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="awa-fire") if overlap else None
        self.pending: deque[tuple[Future[tuple[list[FiredJob], list[str]]], int]] = deque()
        self.sent = 0

    def send(self, plans: list[FirePlan]) -> None:
        plans = sorted(plans, key=lambda p: p.name)
        params = _batch_params(plans, self.now)
        if self.pool is None:
            self._record(_fire_isolating(self.conns[0], params, plans, self.timeouts), len(plans))
            return
        while len(self.pending) >= self.slots:
            self._record_oldest()  # round robin: the oldest chunk held this slot's connection
        slot = self.sent % self.slots
        if slot == len(self.conns):
            assert self.more is not None
            self.conns.append(self.extra.enter_context(self.more()))
        self.pending.append((self.pool.submit(_fire_isolating, self.conns[slot], params, plans, self.timeouts),
                             len(plans)))
        self.sent += 1

    def wait(self) -> None:
        while self.pending:
            self._record_oldest()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True)
        self.extra.close()

    def _record_oldest(self) -> None:
        future, planned = self.pending.popleft()
        self._record(future.result(), planned)

    def _record(self, outcome: tuple[list[FiredJob], list[str]], planned: int) -> None:
        rows, errors = outcome
        self.result.jobs.extend(r for r in rows if r.outcome == "job")
        self.result.skipped.extend((r.name, r.fire_time) for r in rows if r.outcome == "skip")
        self.result.too_old.extend((r.name, r.fire_time) for r in rows if r.outcome == "too_old")
        self.result.replaced.extend((r.name, r.id) for r in rows if r.outcome == "replaced")
        self.result.errors.extend(errors)
        self.result.lost_races += planned - len(errors) - len({r.name for r in rows})


def write_hints(conn: psycopg.Connection[Any], hints: list[tuple[dict[str, Any], datetime]],
                timeouts: Timeouts = DEFAULT_TIMEOUTS) -> None:
    if not hints:
        return
    params = {
        "names": _array(r["name"] for r, _ in hints),
        "expected": _array(r["last_enqueued_at"] for r, _ in hints),
        "next_hint": _array(h for _, h in hints),
        "exprs": _array(r["cron_expr"] for r, _ in hints),
        "zones": _array(r["timezone"] for r, _ in hints),
    }
    with conn.transaction():
        conn.execute(timeouts.fire_sql, prepare=False)
        conn.execute(HINT_SQL, params, prepare=False)  # see fire_batch


def evaluate(
    conn: psycopg.Connection[Any],
    now: datetime | None = None,
    *,
    catch_up_limit: int = CATCH_UP_LIMIT,
    chunk: int = FIRE_CHUNK,
    hint_budget_s: float = HINT_BUDGET_S,
    more: Callable[[], AbstractContextManager[psycopg.Connection[Any]]] | None = None,
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
) -> PassResult:
    """One pass at `now` (DB time when omitted). `conn` must be in autocommit mode, as
    must the connections `more` yields: a pass of several chunks fires on two (_BatchSender).
    Raises PassTimedOut when a statement gives up on its lock or statement timeout."""
    started = time.perf_counter()
    now, groups, rows = _read_due(conn, now, timeouts)
    result = PassResult(now=now)
    result.examined = len(rows)
    plans: list[FirePlan] = []
    planned_fires = 0  # in `plans`: a chunk is bounded by jobs (catch_up: up to 1000 each)
    hints: list[tuple[dict[str, Any], datetime]] = []
    sender = _BatchSender(conn, result, overlap=len(rows) > chunk, more=more, timeouts=timeouts)
    planner = SharedPlans(now, catch_up_limit)
    # S56: calendars are read only by a pass that plans a row naming one, and then only
    # after they changed (CalendarCache: a version probe); before the sender shares `conn`.
    calendars = _calendars(conn, timeouts) if any(r["exclude_calendars"] is not None for r in rows) else None
    try:
        for row in rows:
            try:
                plan, hint = planner.plan(row)
                if plan is not None and has_exclusions(row):
                    plan = drop_excluded(plan, row, calendars, now)
            except Exception as exc:  # S15: a bad row never stops the others
                result.errors.append(f"schedule {row['name']!r} skipped: {exc}")
                continue
            if plan is None:
                if row["next_fire_at"] is None:
                    hints.append((row, hint))
                continue
            plans.append(plan)
            planned_fires += len(plan.fires)
            result.planned += 1
            if planned_fires >= chunk:
                # Fire each chunk as soon as it is planned: with 100k due, the first jobs
                # commit while the rest are still being computed.
                sender.send(plans)
                plans, planned_fires = [], 0
        if plans:
            sender.send(plans)
        sender.wait()
    except TIMEOUT_ERRORS as exc:
        raise PassTimedOut(f"the pass gave up: {_first_line(exc)}", now) from None
    finally:
        sender.close()
    _log_once(conn, result.errors)
    try:
        write_hints(conn, hints, timeouts)
        hinted = result.hinted = write_hint_chunks(conn, groups, started, hint_budget_s, timeouts)
    except TIMEOUT_ERRORS as exc:
        raise PassTimedOut(f"the pass gave up: {_first_line(exc)}", now) from None
    refresh_planner_stats(conn, result.planned + len(hints) + hinted)
    return result


def _read_due(
    conn: psycopg.Connection[Any], now: datetime | None, timeouts: Timeouts
) -> tuple[datetime, Groups, list[dict[str, Any]]]:
    """DB time, the groups of rows without a hint and the due rows (what due_schedules
    reads), in one transaction that carries the timeouts. Two round trips when idle: the
    transaction's start with DB time, then the groups, the due probe and COMMIT pipelined."""
    try:
        return _read_due_with(conn, now, timeouts, DUE_SQL, UNHINTED_SQL)
    except psycopg.errors.UndefinedColumn:
        # A schema rolled back below v025 while this runtime leads (S61): read it without the
        # column it lacks, as the runtime's snapshot does (runtime/reporter.py).
        return _read_due_with(conn, now, timeouts, DUE_SQL_BEFORE_V025, UNHINTED_SQL_BEFORE_V025)


def _read_due_with(
    conn: psycopg.Connection[Any], now: datetime | None, timeouts: Timeouts, due_sql: str, unhinted_sql: str
) -> tuple[datetime, Groups, list[dict[str, Any]]]:
    try:
        cur = conn.execute(timeouts.read_sql, prepare=False)  # BEGIN; timeouts and DB time
        cur.nextset()
        row = cur.fetchone()
        assert row is not None
        now = now or row["now"]
        with conn.pipeline():
            grouped = conn.execute(GROUPS_SQL)
            due = conn.execute(due_sql, {"now": now})
            conn.execute("COMMIT")
        groups = Groups(now)
        for group in grouped.fetchall():
            groups.add(group, CANDIDATE_LOOKBACK)
        rows = due.fetchall()
        if groups:  # rows their group does not decide (S51): a transaction of their own
            with conn.transaction():
                conn.execute(timeouts.fire_sql, prepare=False)
                rows += conn.execute(unhinted_sql, groups.params(CANDIDATE_LOOKBACK), prepare=False).fetchall()
    except BaseException as exc:
        if not conn.closed and not conn.broken and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            try:
                conn.execute("ROLLBACK")
            except psycopg.Error:
                pass  # the connection is dropped by its source
        if isinstance(exc, TIMEOUT_ERRORS):
            raise PassTimedOut(f"the pass gave up: {_first_line(exc)}", now) from None
        raise
    return now, groups, rows


def _calendars(conn: psycopg.Connection[Any], timeouts: Timeouts) -> Calendars:
    """The calendars to judge with, read under the pass's timeouts (S59): a session holding
    a lock on them delays this pass by a lock timeout at most."""
    from awa_tui.engine.calendars.store import CACHE

    with conn.transaction():
        conn.execute(timeouts.fire_sql, prepare=False)
        return CACHE.current(conn)


def write_hint_chunks(conn: psycopg.Connection[Any], groups: Groups, started: float, budget_s: float,
                      timeouts: Timeouts = DEFAULT_TIMEOUTS) -> int:
    """S51: hints of the rows no instant is due for, set-based, after the pass's fires.
    Small chunks, one more only while the pass has twice the last one's time left in its
    budget (so it does not run into the next second's pass; a chunk's cost per row varies
    tenfold on a busy machine, so none is sized from the last); one chunk at least, so
    every pass makes progress. The rest waits for the next pass, which finds it by group."""
    written = 0
    if not (groups.ranges["hint_fired"] or groups.ranges["hint_fresh"]):
        return 0  # nothing to write (write_group_hints' own test): the idle pass opens no transaction
    while True:
        began = time.perf_counter()
        with conn.transaction():
            conn.execute(timeouts.fire_sql, prepare=False)
            n = write_group_hints(conn, groups, FAULT_SQL, CANDIDATE_LOOKBACK, HINT_CHUNK)
        written += n
        took = time.perf_counter() - began
        if n < HINT_CHUNK or budget_s - (time.perf_counter() - started) < 2 * took:
            return written


# S15: a broken row is reported in every PassResult, but logged once until its message
# changes: a poison row must not write a log line every second. Per database, like the
# ANALYZE clock below; a name that passes without error again is forgotten (a broken row
# never gets a hint, so it is fetched every pass while it stays broken).
_logged: dict[tuple[str, int, str], dict[str, str]] = {}
LOGGED_LIMIT = 100000


def _log_once(conn: psycopg.Connection[Any], errors: list[str]) -> None:
    database = (conn.info.host, conn.info.port, conn.info.dbname)
    logged = _logged.get(database)
    if logged is None:
        if not errors:
            return  # the healthy steady state: nothing to do
        logged = _logged[database] = {}
    current: dict[str, str] = {}
    for message in errors:
        name = message.split(" skipped: ", 1)[0]  # "schedule 'name'": the repr is unique
        current[name] = message
        if logged.get(name) != message:
            log.error(message)
    if len(current) > LOGGED_LIMIT:
        current = dict(list(current.items())[:LOGGED_LIMIT])
    if current:
        _logged[database] = current
    else:
        del _logged[database]


ANALYZE_MIN_ROWS = 5000
ANALYZE_EVERY_S = 30.0
_last_analyze: dict[tuple[str, int, str], float] = {}  # database -> time.monotonic() of our last ANALYZE


def refresh_planner_stats(conn: psycopg.Connection[Any], rows_written: int) -> None:
    """ANALYZE the planning columns after a pass that moved many hints (S10).

    The due query is an index probe only while the planner knows how few rows are due.
    Right after a pass that moved thousands of hints (a first pass, a mass fire), the
    statistics still describe the old hints, the probe turns into a sequential scan of
    every schedule (20 ms at 100k instead of 1 ms) until autovacuum gets round to it.
    Three columns of 100k rows analyse in ~20 ms; at most once per ANALYZE_EVERY_S."""
    if rows_written < ANALYZE_MIN_ROWS:
        return
    database = (conn.info.host, conn.info.port, conn.info.dbname)
    if time.monotonic() - _last_analyze.get(database, -ANALYZE_EVERY_S) < ANALYZE_EVERY_S:
        return
    _last_analyze[database] = time.monotonic()
    try:
        # ANALYZE waits behind a running autovacuum of the table (seen: seconds, which
        # delayed the next pass); autovacuum is refreshing the statistics then anyway.
        # A role that does not own the table gets a warning and no statistics: harmless.
        with conn.transaction():
            conn.execute("SET LOCAL lock_timeout = '50ms'")
            conn.execute("ANALYZE awa.cron_jobs (next_fire_at, paused_at, retired_at)")
    except psycopg.Error as exc:
        log.debug("ANALYZE awa.cron_jobs skipped: %s", exc)
