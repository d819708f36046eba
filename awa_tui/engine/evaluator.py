"""One evaluator pass: which fires are due (S13, S14), fired atomically (S11, S12).

A pass reads DB time once (S9), fetches only rows whose stored `next_fire_at` hint is due
or unknown (one indexed probe when idle, S10), computes fires in Python, then CAS-marks
and inserts jobs for a whole chunk of schedules in one statement.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg

from awa_tui.engine.columns import JOB_COPIES, listed, safe_listed
from awa_tui.engine.cron.expression import Fire, iso_utc
from awa_tui.engine.cron.spread import jitter_offset_ms
from awa_tui.engine.schedule import check_stored
from awa_tui.printable import printable_logger

log = printable_logger("awa_tui.evaluator")

CATCH_UP_LIMIT = 1000
FIRE_CHUNK = 5000
FIRST_FIRE_LOOKBACK = timedelta(minutes=1)
ONE_MICROSECOND = timedelta(microseconds=1)

# Why a row cannot fire, as far as SQL can tell (migration v004); schedule.check_stored
# adds the parser's verdict. Column arguments, not the row: the function is inlined into
# plain expressions evaluated in C (measured: ~3 ms per 100k rows), no per-row Python.
FAULT_SQL = (
    "awa.cron_job_fault(c.last_enqueued_at, c.next_fire_at, c.created_at, c.updated_at, "
    "c.paused_at, c.retired_at, c.args, c.metadata, c.priority, c.max_attempts, c.kind, "
    "c.queue, c.tags)"
)

# S15: a poison instant (infinity, a BC date) would fail the whole fetch in Python's
# loader, so every instant goes through awa.safe_ts (NULL when unloadable) and the fault
# column says why; check_stored then skips that row only.
DUE_COLUMNS = (
    safe_listed(("name", "cron_expr", "timezone", "missed_fire_policy", "last_enqueued_at", "next_fire_at",
                 "created_at", "jitter_ms"))
    + f", {FAULT_SQL} AS fault"
)

DUE_SQL = f"""
SELECT {DUE_COLUMNS}
FROM awa.cron_jobs c
WHERE c.paused_at IS NULL AND c.retired_at IS NULL AND c.next_fire_at <= %(now)s
UNION ALL
SELECT {DUE_COLUMNS}
FROM awa.cron_jobs c
WHERE c.paused_at IS NULL AND c.retired_at IS NULL AND c.next_fire_at IS NULL
"""

# Issue 16: f.run_at is a jittered fire's run time, NULL for an unjittered one (runs now).
# S11: rows are locked in name order, skipping any an operator holds (it will be seen
# next pass, in its new state); the CAS and pause/retire guards sit in the UPDATE itself.
# Arrays arrive as literals built by `_array` (see there); `unnest` of a constant array
# lets the planner see the batch size, which it needs to pick hash joins.
FIRE_BATCH_SQL = f"""
WITH plan AS (
    SELECT * FROM unnest(%(names)s::text[], %(expected)s::timestamptz[],
                         %(new_last)s::timestamptz[], %(next_hint)s::timestamptz[],
                         %(exprs)s::text[], %(zones)s::text[])
        AS p(name, expected, new_last, next_hint, cron_expr, timezone)
),
locked AS (
    SELECT c.name FROM awa.cron_jobs c
    WHERE c.name = ANY(%(names)s::text[])
    ORDER BY c.name
    FOR UPDATE SKIP LOCKED
),
mark AS (
    UPDATE awa.cron_jobs c
    SET last_enqueued_at = p.new_last, next_fire_at = p.next_hint
    FROM plan p
    WHERE c.name = p.name
      AND c.name IN (SELECT name FROM locked)
      AND c.last_enqueued_at IS NOT DISTINCT FROM p.expected
      AND c.paused_at IS NULL
      AND c.retired_at IS NULL
      AND c.cron_expr = p.cron_expr AND c.timezone = p.timezone
    RETURNING c.name, {listed(JOB_COPIES, "c")}
),
fires AS (
    SELECT * FROM unnest(%(fire_names)s::text[], %(fire_iso)s::text[], %(fire_run_at)s::timestamptz[])
        WITH ORDINALITY AS f(name, fire_iso, run_at, seq)
)
INSERT INTO awa.jobs (kind, queue, args, state, priority, attempt, max_attempts, metadata, tags, run_at)
SELECT m.kind, m.queue, m.args, 'available', m.priority, 0, m.max_attempts,
       m.metadata || jsonb_build_object('cron_name', m.name, 'cron_fire_time', f.fire_iso),
       m.tags, coalesce(f.run_at, now())
FROM mark m JOIN fires f ON f.name = m.name
ORDER BY f.seq
RETURNING id, metadata ->> 'cron_name' AS name, metadata ->> 'cron_fire_time' AS fire_time
"""

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


def _array(values: Iterable[str | datetime | None]) -> str:
    """A Postgres array literal, every element quoted (names may hold , { } " \\ spaces).

    psycopg dumps a Python list element by element in Python (~11 ms per 5000 strings,
    eight lists per batch); joining one literal is several times cheaper. The statement
    casts it (`::text[]`), so the planner still sees a constant array and its length."""
    seen: dict[object, str] = {}  # a batch repeats the same instants, zones and expressions
    out = []
    for v in values:
        text = seen.get(v)
        if text is None:
            if v is None:
                text = "NULL"
            elif isinstance(v, datetime):
                text = v.isoformat()
            else:
                text = '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
            seen[v] = text
        out.append(text)
    return "{" + ",".join(out) + "}"


@dataclass
class FirePlan:
    name: str
    expected: datetime | None
    fires: list[Fire]
    next_hint: datetime
    cron_expr: str
    timezone: str
    jitter_ms: int = 0  # issue 16: each job's run_at is delayed by [0, jitter_ms)


@dataclass
class FiredJob:
    id: int
    name: str
    fire_time: str


@dataclass
class PassResult:
    now: datetime
    examined: int = 0
    planned: int = 0
    jobs: list[FiredJob] = field(default_factory=list)
    lost_races: int = 0  # schedules whose CAS matched nothing (fired elsewhere, paused...)
    errors: list[str] = field(default_factory=list)

    @property
    def fired(self) -> int:
        return len(self.jobs)


def due_schedules(conn: psycopg.Connection[Any], now: datetime) -> list[dict[str, Any]]:
    return conn.execute(DUE_SQL, {"now": now}).fetchall()


def first_candidate(row: dict[str, Any]) -> datetime:
    """The instant after which fires are new (S13)."""
    if row["last_enqueued_at"] is not None:
        return row["last_enqueued_at"]
    # First fire: only fires in [created_at - 1 minute, now] count.
    return row["created_at"] - FIRST_FIRE_LOOKBACK - ONE_MICROSECOND


def plan_fires(row: dict[str, Any], now: datetime, catch_up_limit: int) -> tuple[FirePlan | None, datetime]:
    """Fires due for one row at `now`, and the row's next hint. Raises on a bad row."""
    cron = check_stored(row)
    hint = row["next_fire_at"] or cron.next_after(first_candidate(row)).at
    if hint > now:
        return None, hint
    last = row["last_enqueued_at"]
    if last is None or row["missed_fire_policy"] == "coalesce":
        # Coalesce and first fire: the most recent due fire, one computation (S13).
        latest = cron.latest_at_or_before(now)
        fires = [latest] if latest is not None and latest.at >= hint else []
    else:
        fires = cron.between(last, now, catch_up_limit)
    if not fires:
        return None, hint
    following = cron.next_after(fires[-1].at).at
    plan = FirePlan(row["name"], last, fires, following, row["cron_expr"], row["timezone"], row["jitter_ms"] or 0)
    return plan, following


def _batch_params(plans: list[FirePlan]) -> dict[str, str]:
    """Parameters of FIRE_BATCH_SQL for plans already sorted by name (lock order)."""
    fire_names: list[str] = []
    fire_iso: list[str] = []
    fire_run_at: list[datetime | None] = []
    for plan in plans:
        for fire in plan.fires:
            fire_names.append(plan.name)
            iso = iso_utc(fire.at)
            fire_iso.append(iso)
            # Issue 16: the job of a jittered fire runs at instant + a stable offset.
            fire_run_at.append(fire.at + timedelta(milliseconds=jitter_offset_ms(plan.name, iso, plan.jitter_ms))
                               if plan.jitter_ms else None)
    return {
        "names": _array(p.name for p in plans),
        "expected": _array(p.expected for p in plans),
        "new_last": _array(p.fires[-1].at for p in plans),
        "next_hint": _array(p.next_hint for p in plans),
        "exprs": _array(p.cron_expr for p in plans),
        "zones": _array(p.timezone for p in plans),
        "fire_names": _array(fire_names),
        "fire_iso": _array(fire_iso),
        "fire_run_at": _array(fire_run_at),
    }


HASH_JOINS_FROM = 500  # plans per batch from which nested loops are switched off


def _run_batch(conn: psycopg.Connection[Any], params: dict[str, str], size: int) -> list[FiredJob]:
    # Never prepared: after ten runs Postgres would switch to a generic plan that cannot
    # see the batch size and turns a 0.1 s chunk into 1 s (bench/README.md, profiles).
    if size < HASH_JOINS_FROM:
        rows = conn.execute(FIRE_BATCH_SQL, params, prepare=False).fetchall()
    else:
        # The CAS join's output is always estimated at ~1 row; with some statistics the
        # planner then nests the `locked` CTE scan inside a loop over it: 5000 x 5000
        # comparisons, 1 s per chunk instead of 0.1 s. Big batches get hash joins only.
        with conn.transaction():
            conn.execute("SET LOCAL enable_nestloop = off")
            rows = conn.execute(FIRE_BATCH_SQL, params, prepare=False).fetchall()
    return [FiredJob(r["id"], r["name"], r["fire_time"]) for r in rows]


def fire_batch(conn: psycopg.Connection[Any], plans: list[FirePlan]) -> list[FiredJob]:
    """CAS-mark every planned schedule and insert its jobs, in one statement (S11)."""
    if not plans:
        return []
    return _run_batch(conn, _batch_params(sorted(plans, key=lambda p: p.name)), len(plans))


# SQLSTATE classes that blame the data of some rows: data exception, integrity, a PL/pgSQL
# RAISE (an operator's trigger), a program limit (an index row too large).
ROW_REFUSALS = ("22", "23", "P0", "54")
REFUSED_ROWS_MAX = 32  # per chunk: past this the refusal is systemic, not a few bad rows


def _fire_isolating(
    conn: psycopg.Connection[Any], params: dict[str, str], plans: list[FirePlan]
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
    return _fire_bisecting(conn, params, plans, errors), errors


def _fire_bisecting(
    conn: psycopg.Connection[Any], params: dict[str, str], plans: list[FirePlan], errors: list[str]
) -> list[FiredJob]:
    try:
        return _run_batch(conn, params, len(plans))
    except psycopg.Error as exc:
        if (exc.sqlstate or "")[:2] not in ROW_REFUSALS or len(errors) >= REFUSED_ROWS_MAX:
            raise
        if len(plans) == 1:
            lines = str(exc).strip().splitlines() or [type(exc).__name__]
            errors.append(f"schedule {plans[0].name!r} skipped: the database refused its fire: {lines[0]!r}")
            return []
    half = len(plans) // 2
    jobs = _fire_bisecting(conn, _batch_params(plans[:half]), plans[:half], errors)
    return jobs + _fire_bisecting(conn, _batch_params(plans[half:]), plans[half:], errors)


class _BatchSender:
    """Fires the chunks of one pass in order, one statement (one transaction) each.

    With `overlap`, a helper thread executes chunk k while the pass thread plans chunk
    k+1: a 100k pass is ~1 s of Python and ~1.6 s of database time, which no longer add
    up. The connection is used by one thread at a time, and chunk k+1 is sent only after
    chunk k succeeded, so a failing chunk still ends the pass at once."""

    def __init__(self, conn: psycopg.Connection[Any], result: PassResult, overlap: bool) -> None:
        self.conn = conn
        self.result = result
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="awa-fire") if overlap else None
        self.pending: tuple[Future[tuple[list[FiredJob], list[str]]], int] | None = None

    def send(self, plans: list[FirePlan]) -> None:
        plans = sorted(plans, key=lambda p: p.name)
        params = _batch_params(plans)
        self.wait()
        if self.pool is None:
            self._record(_fire_isolating(self.conn, params, plans), len(plans))
        else:
            self.pending = (self.pool.submit(_fire_isolating, self.conn, params, plans), len(plans))

    def wait(self) -> None:
        pending, self.pending = self.pending, None
        if pending is not None:
            self._record(pending[0].result(), pending[1])

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True)

    def _record(self, outcome: tuple[list[FiredJob], list[str]], planned: int) -> None:
        jobs, errors = outcome
        self.result.jobs.extend(jobs)
        self.result.errors.extend(errors)
        self.result.lost_races += planned - len(errors) - len({j.name for j in jobs})


def write_hints(conn: psycopg.Connection[Any], hints: list[tuple[dict[str, Any], datetime]]) -> None:
    if not hints:
        return
    params = {
        "names": _array(r["name"] for r, _ in hints),
        "expected": _array(r["last_enqueued_at"] for r, _ in hints),
        "next_hint": _array(h for _, h in hints),
        "exprs": _array(r["cron_expr"] for r, _ in hints),
        "zones": _array(r["timezone"] for r, _ in hints),
    }
    conn.execute(HINT_SQL, params, prepare=False)  # see fire_batch


def evaluate(
    conn: psycopg.Connection[Any],
    now: datetime | None = None,
    *,
    catch_up_limit: int = CATCH_UP_LIMIT,
    chunk: int = FIRE_CHUNK,
) -> PassResult:
    """One pass at `now` (DB time when omitted). `conn` must be in autocommit mode."""
    if now is None:
        row = conn.execute("SELECT clock_timestamp() AS now").fetchone()
        assert row is not None
        now = row["now"]
    result = PassResult(now=now)
    rows = due_schedules(conn, now)
    result.examined = len(rows)
    plans: list[FirePlan] = []
    planned_fires = 0  # in `plans`: a chunk is bounded by jobs (catch_up: up to 1000 each)
    hints: list[tuple[dict[str, Any], datetime]] = []
    sender = _BatchSender(conn, result, overlap=len(rows) > chunk)
    try:
        for row in rows:
            try:
                plan, hint = plan_fires(row, now, catch_up_limit)
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
    finally:
        sender.close()
    _log_once(conn, result.errors)
    write_hints(conn, hints)
    refresh_planner_stats(conn, result.planned + len(hints))
    return result


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
