"""A verdict for every due instant of a schedule, derived from what history holds.

Nothing is written per fire besides the job: the ledger is computed at read time from
- the schedule's definition over time (the audit trail's redefinitions): its due instants;
- its jobs (each fired job carries the instant it was fired for): `fired`, `manual`;
- its pause and retirement intervals (the audit trail, written by the database):
  `skipped_paused`, `skipped_retired`;
- leadership terms (awa.leader_terms, one row per term, v007): `no_leader`;
- the later fire an unfired instant was folded into: `coalesced`;
- backfill jobs (metadata `backfill`): `backfilled`; instants the overlap policy kept out
  (awa.fire_skips, written by the fire statement, v009): `skipped_overlap`;
- the schedule's exclusions (S56), its dates and its calendars as they stand now:
  `skipped_excluded`, naming the rule;
- the catch-up window (S66): the fire statement records in awa.fire_skips (reason
  'too_old') the newest instant a pass skipped as too old; every unfired instant up to it
  since the fire before is `skipped_too_old`;
- bounds (v009): instants before start_at, after end_at, or after the schedule finished
  are not due at all;
- what retention pruned (awa.ledger_pruned) and since when leadership is recorded
  (awa.ledger_meta): `unknown`, never a guess.
Precedence, first match wins: fired (or backfilled), skipped_overlap, skipped_excluded,
skipped_too_old, skipped_retired, skipped_paused, unknown, no_leader, coalesced, pending.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import psycopg

from awa_tui.engine.core.db import db_now
from awa_tui.engine.core.errors import NotFound, ValidationError
from awa_tui.engine.cron.expression import compile_cron, next_fire
from awa_tui.engine.firing.evaluator import FIRST_FIRE_LOOKBACK
from awa_tui.engine.ledger.models import (
    BACKFILLED,
    COALESCED,
    FIRED,
    IMPORTED,
    MANUAL,
    NO_LEADER,
    PENDING,
    SKIPPED_EXCLUDED,
    SKIPPED_OVERLAP,
    SKIPPED_PAUSED,
    SKIPPED_RETIRED,
    SKIPPED_TOO_OLD,
    UNKNOWN,
    Verdict,
    job_result,
    stored_instant,
)
from awa_tui.engine.ledger.states import replaced_ids

ONE_US = timedelta(microseconds=1)
MAX_INSTANTS = 10000
FOLD_LOOKBACK = 200
# Job ids grow with created_at, but a fire's transaction may start (its created_at) a
# little before an id handed out to a concurrent one: the window of jobs read is widened
# by this much so such a job is never missed.
ID_ORDER_SLACK = timedelta(hours=1)


@dataclass(frozen=True)
class Interval:
    start: datetime | None  # None: since before anything recorded
    end: datetime | None  # None: still open
    by: str | None

    def covers(self, t: datetime) -> bool:
        return (self.start is None or self.start <= t) and (self.end is None or t < self.end)


@dataclass(frozen=True)
class Segment:
    """The definition in force over [start, end)."""

    start: datetime | None
    end: datetime | None
    cron_expr: str
    timezone: str
    anchor: datetime | None = None  # an interval's start_at (the schedule's current one)


@dataclass(frozen=True)
class Term:
    acquired_at: datetime
    held_until: datetime


SCHEDULE_SQL = """
SELECT name, cron_expr, timezone, queue, missed_fire_policy, awa.safe_ts(created_at) AS created_at,
       awa.safe_ts(paused_at) AS paused_at, paused_by, awa.safe_ts(paused_until) AS paused_until, pause_reason,
       awa.safe_ts(retired_at) AS retired_at, retired_by,
       awa.safe_ts(last_enqueued_at) AS last_enqueued_at,
       start_at, end_at, finished_at, exclude_dates, exclude_calendars, catchup_window
FROM awa.cron_jobs WHERE name = %s
"""

HISTORY_SQL = """
SELECT id, at, action, operator, before, after FROM awa.audit_log
WHERE target = %(name)s AND at >= %(born)s ORDER BY id
"""


def _intervals(history: list[dict[str, Any]], key: str, current_at: datetime | None,
               current_by: str | None) -> list[Interval]:
    """Intervals where `<key>_at` was set, from the audit rows that carry the column."""
    at_key, by_key = f"{key}_at", f"{key}_by"
    rows = [h for h in history if isinstance(h["before"], dict) and isinstance(h["after"], dict)
            and at_key in h["before"] and at_key in h["after"]]
    out: list[Interval] = []
    open_start: datetime | None = None
    open_by: str | None = None
    is_open = False
    if rows and rows[0]["before"].get(at_key) is not None:
        is_open, open_start, open_by = True, stored_instant(rows[0]["before"][at_key]), rows[0]["before"].get(by_key)
    for h in rows:
        now_set = h["after"].get(at_key) is not None
        if now_set and not is_open:
            is_open, open_start, open_by = True, h["at"], h["after"].get(by_key)
        elif not now_set and is_open:
            out.append(Interval(open_start, h["at"], open_by))
            is_open = False
    if is_open:
        out.append(Interval(open_start, None, open_by))
    elif current_at is not None:  # set without an audit row (before the trail, by hand)
        out.append(Interval(current_at, None, current_by))
    return out


def definition_segments(history: list[dict[str, Any]], expr: str, zone: str,
                        anchor: datetime | None = None) -> list[Segment]:
    """Definitions over time, oldest first, from redefinitions in the audit trail. `anchor`
    (the row's start_at) places an interval's instants in every segment."""
    changes = [h for h in history if isinstance(h["before"], dict) and isinstance(h["after"], dict)
               and ("cron_expr" in h["after"] or "timezone" in h["after"])]
    segments: list[Segment] = []
    end: datetime | None = None
    for h in reversed(changes):
        segments.append(Segment(h["at"], end, expr, zone, anchor))
        expr = h["before"].get("cron_expr", expr) if isinstance(h["before"].get("cron_expr", expr), str) else expr
        zone = h["before"].get("timezone", zone) if isinstance(h["before"].get("timezone", zone), str) else zone
        end = h["at"]
    segments.append(Segment(None, end, expr, zone, anchor))
    segments.reverse()
    return segments


def _segment_at(segments: list[Segment], t: datetime) -> Segment:
    for seg in reversed(segments):
        if seg.start is None or seg.start <= t:
            return seg
    return segments[0]


def due_instants(segments: list[Segment], lo: datetime, hi: datetime, limit: int) -> tuple[list[datetime], bool]:
    """The last `limit` due instants in [lo, hi], ascending; and whether older ones exist."""
    out: list[datetime] = []
    cursor = hi
    while cursor >= lo:
        seg = _segment_at(segments, cursor)
        try:
            fire = compile_cron(seg.cron_expr, seg.timezone, seg.anchor).latest_at_or_before(cursor)
        except (ValidationError, ValueError, OverflowError):
            fire = None  # a definition that cannot be computed has no instants
        if fire is None or (seg.start is not None and fire.at < seg.start):
            if seg.start is None:
                break
            cursor = seg.start - ONE_US
            continue
        if fire.at < lo:
            break
        if len(out) == limit:
            out.reverse()
            return out, True
        out.append(fire.at)
        cursor = fire.at - ONE_US
    out.reverse()
    return out, False


def next_due(segments: list[Segment], after: datetime) -> datetime | None:
    seg = segments[-1]
    try:
        return next_fire(seg.cron_expr, seg.timezone, max(after, seg.start or after), seg.anchor).at
    except (ValidationError, ValueError, OverflowError):
        return None


# The columns of a schedule's job the verdicts read (one definition for the ledger and
# for the strips of a page, strips.py).
FIRE_TIME_COLUMN = "awa.try_timestamptz(j.metadata ->> 'cron_fire_time') AS fire_time"
JOB_COLUMNS = (
    "j.id, j.state, awa.safe_ts(j.created_at) AS created_at, "
    f"{FIRE_TIME_COLUMN}, "
    "coalesce(j.metadata ->> 'triggered_manually' = 'true', false) AS manual, "
    "coalesce(j.metadata ->> 'backfill' = 'true', false) AS backfill, "
    "j.metadata ->> 'backfilled_by' AS backfilled_by, "
    "j.metadata ->> 'triggered_by' AS triggered_by, j.queue, "
    "CASE WHEN jsonb_typeof(j.errors) = 'array' THEN j.errors -> -1 ->> 'error' END AS error, "
    # The overlap policy replace (v031): the jobs a fire cancelled, the job that cancelled it.
    "CASE WHEN jsonb_typeof(j.metadata -> 'cron_replaced') = 'array' THEN j.metadata -> 'cron_replaced' END "
    "AS replaced, "
    "CASE WHEN jsonb_typeof(j.metadata -> 'cron_replaced_by') = 'number' "
    "THEN (j.metadata ->> 'cron_replaced_by')::bigint END AS replaced_by"
)


def _jobs(conn: psycopg.Connection[Any], name: str, lo: datetime) -> list[dict[str, Any]]:
    """The schedule's jobs created since `lo` (and a little before, see ID_ORDER_SLACK)."""
    # Walking the (cron_name, id) index backwards stops at the first job older than the
    # window, so this reads the window's jobs only, however long the history kept.
    boundary = conn.execute(
        "SELECT id FROM awa.jobs WHERE metadata ? 'cron_name' AND metadata ->> 'cron_name' = %s "
        "AND created_at < %s ORDER BY metadata ->> 'cron_name' DESC, id DESC LIMIT 1",
        (name, lo - ID_ORDER_SLACK),
    ).fetchone()
    return conn.execute(
        f"SELECT {JOB_COLUMNS} "
        "FROM awa.jobs j WHERE j.metadata ? 'cron_name' AND j.metadata ->> 'cron_name' = %s AND j.id > %s "
        "ORDER BY j.id",
        (name, boundary["id"] if boundary else 0),
    ).fetchall()


def leader_terms(conn: psycopg.Connection[Any], lo: datetime, hi: datetime) -> list[Term]:
    """Terms overlapping [lo, hi], plus the last one before and the first one after (the
    ends of a gap)."""
    rows = conn.execute(
        "(SELECT acquired_at, held_until FROM awa.leader_terms WHERE held_until > %(lo)s AND acquired_at <= %(hi)s)"
        " UNION (SELECT acquired_at, held_until FROM awa.leader_terms WHERE held_until <= %(lo)s"
        "        ORDER BY held_until DESC LIMIT 1)"
        " UNION (SELECT acquired_at, held_until FROM awa.leader_terms WHERE acquired_at > %(hi)s"
        "        ORDER BY acquired_at LIMIT 1)"
        " ORDER BY 1",
        {"lo": lo, "hi": hi},
    ).fetchall()
    return [Term(r["acquired_at"], r["held_until"]) for r in rows]


def _gap(terms: list[Term], t: datetime) -> tuple[bool, datetime | None, datetime | None]:
    """(led at t?, the last leadership ending before t, the next beginning after t)."""
    before: datetime | None = None
    after: datetime | None = None
    for term in terms:
        if term.acquired_at <= t < term.held_until:
            return True, None, None
        if term.held_until <= t:
            before = term.held_until if before is None else max(before, term.held_until)
        elif term.acquired_at > t and (after is None or term.acquired_at < after):
            after = term.acquired_at
    return False, before, after


def schedule_history(conn: psycopg.Connection[Any], name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The schedule's row and its audit rows since it was created (this incarnation's)."""
    row = conn.execute(SCHEDULE_SQL, (name,)).fetchone()
    if row is None:
        raise NotFound(f"unknown schedule {name!r}")
    history = conn.execute(HISTORY_SQL, {"name": name, "born": row["created_at"] - FIRST_FIRE_LOOKBACK}).fetchall()
    return row, history


@dataclass(frozen=True)
class Window:
    """The due instants a read judges: `instants` ascending (the ones before `shown_from`
    only count folds), and the span [shown_from, hi] whose verdicts are returned."""

    segments: list[Segment]
    instants: list[datetime]
    shown_from: datetime
    hi: datetime
    paused: list[Interval]
    retired: list[Interval]

    @property
    def lo(self) -> datetime:
        """The oldest instant judged: jobs, terms and skips are read from here."""
        return self.instants[0] if self.instants else self.hi


@dataclass(frozen=True)
class Evidence:
    """What decides a schedule's verdicts over a window, however it was read."""

    jobs: list[dict[str, Any]]  # JOB_COLUMNS rows in id order, created since the window's lo
    terms: list[Term]
    skipped: set[datetime]  # awa.fire_skips instants within the window (the overlap policy's)
    leadership_since: datetime | None
    pruned_through: datetime | None
    queue_paused_by: str | None = None  # the schedule's queue is paused (by whom)
    excluded: dict[datetime, str] | None = None  # S56: instant -> the rule excluding it
    # S66: the newest instant of each pass that skipped some as too old -> when it did, ascending
    too_old: dict[datetime, datetime] | None = None


def split_skips(rows: list[dict[str, Any]]) -> tuple[set[datetime], dict[datetime, datetime]]:
    """awa.fire_skips rows (fire_time, reason, skipped_at): the overlap policy's instants,
    and the catch-up window's records (instant -> when), ascending."""
    overlap = {r["fire_time"] for r in rows if r["reason"] != "too_old"}
    stale = dict(sorted((r["fire_time"], r["skipped_at"]) for r in rows if r["reason"] == "too_old"))
    return overlap, stale


def too_old_record(t: datetime, ev: Evidence, fire_times: list[datetime]) -> tuple[datetime, datetime] | None:
    """S66: the catch-up window's record covering unfired instant `t` (its instant, when it
    was written): the first one at or after `t` with no fire between them. A pass that
    skips as too old consumes every instant up to the one it records, so nothing fired there."""
    if not ev.too_old:
        return None
    marks = list(ev.too_old)
    i = bisect_left(marks, t)
    if i == len(marks):
        return None
    mark = marks[i]
    j = bisect_left(fire_times, t)
    if j < len(fire_times) and fire_times[j] <= mark:
        return None
    return mark, ev.too_old[mark]


def excluded_instants(row: dict[str, Any], instants: list[datetime], calendars: Any) -> dict[datetime, str]:
    """The instants the row's exclusions (S56) leave out, with the rule of each, against
    `calendars` (calendars.Calendars, None when the row names none). A row whose
    exclusions cannot be read (S15) excludes nothing here: the evaluator reports it."""
    from awa_tui.engine.cron.expression import parse_timezone
    from awa_tui.engine.schedules.exclusions import exclusions_of

    try:
        rules = exclusions_of(row, calendars.days if calendars else {}, calendars.broken if calendars else None)
        if rules is None:
            return {}
        zone = parse_timezone(row["timezone"])
    except ValidationError:
        return {}
    return {t: rule for t in instants if (rule := rules.rule_for(t, zone)) is not None}


def calendars_for(conn: psycopg.Connection[Any], rows: list[dict[str, Any]]) -> Any:
    """The calendars (CalendarCache) when one of `rows` names one, else None: no read."""
    if not any(r.get("exclude_calendars") is not None for r in rows):
        return None
    from awa_tui.engine.calendars.store import CACHE

    return CACHE.current(conn)


def born(row: dict[str, Any]) -> datetime:
    """Where the schedule's due instants begin: the first fire counts from a little before
    its creation (S13)."""
    return row["created_at"] - FIRST_FIRE_LOOKBACK


def bounded(row: dict[str, Any], lo: datetime, hi: datetime) -> tuple[datetime, datetime]:
    """[lo, hi] cut to the schedule's bounds (v009): no instant before start_at or after
    end_at is due, nor one after the last fire of a schedule finished by its count."""
    if row["start_at"] is not None:
        lo = max(lo, row["start_at"])
    if row["end_at"] is not None:
        hi = min(hi, row["end_at"])
    if row["finished_at"] is not None:
        hi = min(hi, row["last_enqueued_at"] or row["created_at"])
    return lo, hi


def window(row: dict[str, Any], history: list[dict[str, Any]], lo: datetime, hi: datetime, limit: int,
           lookback: int, instants: list[datetime] | None = None) -> Window:
    """The last `limit` due instants in [lo, hi] to show, with `lookback` more before them
    judged for their folds. `instants`, when given, are the schedule's last due instants
    at or before its bounded hi, ascending (computed once for many rows, strips.py)."""
    segments = definition_segments(history, row["cron_expr"], row["timezone"], row["start_at"])
    first, last = bounded(row, born(row), hi)
    if instants is None:
        instants = due_instants(segments, first, last, limit + lookback)[0] if first <= last else []
    instants = [t for t in instants if first <= t <= last]
    shown = [t for t in instants if t >= lo][-limit:]
    if shown:
        instants = instants[max(0, instants.index(shown[0]) - lookback):]
    return Window(segments, instants, shown[0] if shown else hi, hi,
                  paused=_intervals(history, "paused", row["paused_at"], row["paused_by"]),
                  retired=_intervals(history, "retired", row["retired_at"], row["retired_by"]))


def fired_jobs(ev: Evidence) -> dict[datetime, dict[str, Any]]:
    """The jobs fired for an instant (manual triggers are not), by that instant."""
    return {j["fire_time"]: j for j in ev.jobs if not j["manual"] and j["fire_time"] is not None}


def decide(row: dict[str, Any], win: Window, ev: Evidence,
           fired: dict[datetime, dict[str, Any]]) -> Iterator[tuple[datetime, str, Any, bool]]:
    """The one definition of every verdict: (instant, verdict, what decided it, extra) for
    each due instant of the window, oldest first, then each job fired for an instant the
    definition does not produce (a hand-made row, a redefinition racing its audit row:
    it did fire; `extra`). What decided it: the job (fired, backfilled), the pause or
    retirement, the reason (unknown), (gap from, gap until, later fire) for no_leader, the
    later fire (coalesced). The ledger (judge) and the page's strips (strips.py) both read
    their verdicts here."""
    fire_times = sorted(fired)
    # S66: a backfill later fills instants a pass skipped as too old; only the scheduler's
    # own fires end the span a too-old record covers.
    scheduled = [f for f in fire_times if not fired[f]["backfill"]] if ev.too_old else fire_times
    for t in win.instants:
        job = fired.get(t)
        if job is not None:
            yield t, BACKFILLED if job["backfill"] else FIRED, job, False
            continue
        if t in ev.skipped:
            yield t, SKIPPED_OVERLAP, None, False
            continue
        rule = ev.excluded.get(t) if ev.excluded else None
        if rule is not None:
            yield t, SKIPPED_EXCLUDED, rule, False
            continue
        if t < row["created_at"]:
            continue  # the first fire's lookback (S13): only an instant that fired counts
        stale = too_old_record(t, ev, scheduled)
        if stale is not None:
            yield t, SKIPPED_TOO_OLD, stale, False
            continue
        hit = next((i for i in win.retired if i.covers(t)), None)
        if hit is not None:
            yield t, SKIPPED_RETIRED, hit, False
            continue
        hit = next((i for i in win.paused if i.covers(t)), None)
        if hit is not None:
            yield t, SKIPPED_PAUSED, hit, False
            continue
        if ev.pruned_through is not None and t <= ev.pruned_through:
            yield t, UNKNOWN, "pruned", False
            continue
        if ev.leadership_since is None or t < ev.leadership_since:
            yield t, UNKNOWN, "before the ledger recorded leadership", False
            continue
        later = bisect_right(fire_times, t)
        into = fire_times[later] if later < len(fire_times) else None
        led, gap_from, gap_until = _gap(ev.terms, t)
        if not led:
            yield t, NO_LEADER, (gap_from, gap_until, into), False
        elif into is not None:
            yield t, COALESCED, into, False
        else:
            yield t, PENDING, None, False
    known = set(win.instants)
    for t, job in fired.items():
        if t not in known and win.shown_from <= t <= win.hi:
            yield t, BACKFILLED if job["backfill"] else FIRED, job, True


def judge(name: str, row: dict[str, Any], win: Window, ev: Evidence) -> list[Verdict]:
    """The verdicts of the window's shown instants (decide), oldest first, with what the
    ledger tells of each, and the manual triggers interleaved."""
    jobs, shown_from, hi = ev.jobs, win.shown_from, win.hi
    fired = fired_jobs(ev)
    out: list[Verdict] = []
    extras: list[Verdict] = []
    for t, verdict, why, extra in decide(row, win, ev, fired):
        if verdict in (FIRED, BACKFILLED):
            job = why
            lateness = (job["created_at"] - t).total_seconds() if job["created_at"] else None
            error = job["error"] if job["state"] in ("retryable", "discarded") else None
            if extra:
                extras.append(Verdict(name, t, verdict, job_id=job["id"], job_state=job["state"],
                                      result=job_result(job["state"]), queue=job["queue"], lateness_s=lateness,
                                      error=error))
                continue
            waiting = job["state"] in ("available", "retryable")
            out.append(Verdict(
                name, t, verdict, job_id=job["id"], by=job["backfilled_by"], job_state=job["state"],
                result=job_result(job["state"]), lateness_s=lateness, error=error, queue=job["queue"],
                queue_paused_by=ev.queue_paused_by if waiting and job["queue"] == row["queue"] else None,
                replaced=replaced_ids(job.get("replaced")), replaced_by=job.get("replaced_by")))
        elif verdict in (SKIPPED_RETIRED, SKIPPED_PAUSED):
            out.append(Verdict(name, t, verdict, by=why.by, since=why.start))
        elif verdict == SKIPPED_TOO_OLD:
            out.append(Verdict(name, t, verdict, since=why[1], catchup_window_s=row.get("catchup_window")))
        elif verdict in (UNKNOWN, SKIPPED_EXCLUDED):
            out.append(Verdict(name, t, verdict, reason=why))
        elif verdict == NO_LEADER:
            out.append(Verdict(name, t, verdict, gap_from=why[0], gap_until=why[1], into=why[2]))
        elif verdict == COALESCED:
            out.append(Verdict(name, t, verdict, into=why))
        else:
            out.append(Verdict(name, t, verdict))
    out = [v for v in _count_folds(out, fired) if v.instant >= shown_from] + extras
    for j in jobs:
        if j["manual"] and j["created_at"] is not None and shown_from <= j["created_at"] <= hi:
            out.append(Verdict(name, j["created_at"], MANUAL, job_id=j["id"], job_state=j["state"],
                               result=job_result(j["state"]), by=j["triggered_by"], queue=j["queue"],
                               error=j["error"] if j["state"] in ("retryable", "discarded") else None))
    out.sort(key=lambda v: v.instant)
    return out


# The runs another scheduler made before the import (S68) come before every job awa fires
# for the schedule (the import writes them first), so they are the first of its jobs by id:
# reading that many from the start of the (cron_name, id) index finds them all, and when the
# first job is not one (no import, or retention took them) one index probe says so.
IMPORTED_RUNS_SQL = """
WITH first_job AS (
  SELECT j.metadata ? 'imported_from' AS imported FROM awa.jobs j
  WHERE j.metadata ? 'cron_name' AND j.metadata ->> 'cron_name' = %(name)s
  ORDER BY j.metadata ->> 'cron_name', j.id LIMIT 1
)
SELECT id, state, fire_time, source, error FROM (
  SELECT j.id, j.state, awa.try_timestamptz(j.metadata ->> 'cron_fire_time') AS fire_time,
         j.metadata ->> 'imported_from' AS source,
         CASE WHEN jsonb_typeof(j.errors) = 'array' THEN j.errors -> -1 ->> 'error' END AS error
  FROM awa.jobs j
  WHERE coalesce((SELECT imported FROM first_job), false)
    AND j.metadata ? 'cron_name' AND j.metadata ->> 'cron_name' = %(name)s
  ORDER BY j.metadata ->> 'cron_name', j.id LIMIT %(scan)s
) first_jobs
WHERE source IS NOT NULL AND fire_time IS NOT NULL AND fire_time < %(before)s
  AND (%(since)s::timestamptz IS NULL OR fire_time >= %(since)s) AND fire_time <= %(until)s
ORDER BY fire_time DESC LIMIT %(limit)s
"""
IMPORTED_RUNS_SCAN = 1000  # the most runs an import carries per job (imports/pg_cron.py HISTORY_LIMIT)


def imported_runs(conn: psycopg.Connection[Any], name: str, before: datetime, since: datetime | None,
                  until: datetime, limit: int) -> list[Verdict]:
    """The last `limit` runs of the scheduler the schedule was imported from, at instants in
    [since, until] before `before` (where its own due instants begin), oldest first."""
    rows = conn.execute(IMPORTED_RUNS_SQL, {"name": name, "scan": IMPORTED_RUNS_SCAN, "before": before,
                                            "since": since, "until": until, "limit": limit}).fetchall()
    return [Verdict(name, r["fire_time"], IMPORTED, job_id=r["id"], job_state=r["state"],
                    result=job_result(r["state"]), reason=r["source"],
                    error=r["error"] if r["state"] in ("retryable", "discarded") else None)
            for r in reversed(rows)]


def leadership_since(conn: psycopg.Connection[Any]) -> datetime | None:
    meta = conn.execute("SELECT leadership_since FROM awa.ledger_meta").fetchone()
    return meta["leadership_since"] if meta else None


def ledger(
    conn: psycopg.Connection[Any],
    name: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    now: datetime | None = None,
) -> list[Verdict]:
    """Verdicts of the schedule's last `limit` due instants in [since, until] (until: now),
    oldest first, with its manual triggers in that span interleaved, and before its first
    due instant the runs carried over from the scheduler it was imported from (S68)."""
    if not isinstance(limit, int) or not 1 <= limit <= MAX_INSTANTS:
        raise ValidationError(f"limit: expected 1..{MAX_INSTANTS} instants, got {limit!r}")
    if since is not None and until is not None and since > until:
        raise ValidationError(f"range: since {since.isoformat()} is after until {until.isoformat()}")
    now = now or db_now(conn)
    row, history = schedule_history(conn, name)
    hi = min(until, now) if until is not None else now
    lo = max(since, born(row)) if since is not None else born(row)
    before = imported_runs(conn, name, born(row), since, hi, limit) if since is None or since < born(row) else []
    if hi < lo:
        return before
    # FOLD_LOOKBACK more instants are judged than shown, so an instant folded into a fire
    # is counted with the ones before the window that were folded into the same fire.
    win = window(row, history, lo, hi, limit, FOLD_LOOKBACK)
    mark = conn.execute("SELECT pruned_through FROM awa.ledger_pruned WHERE cron_name = %s", (name,)).fetchone()
    queue = conn.execute("SELECT paused, paused_by FROM awa.queue_meta WHERE queue = %s", (row["queue"],)).fetchone()
    # Up to now, not hi: a record of the catch-up window may follow the instants it covers.
    skipped, stale = split_skips(conn.execute(
        "SELECT fire_time, reason, skipped_at FROM awa.fire_skips WHERE cron_name = %s AND fire_time >= %s "
        "AND fire_time <= %s", (name, win.lo, now)).fetchall()) if win.instants else (set(), {})
    evidence = Evidence(
        jobs=_jobs(conn, name, win.lo), terms=leader_terms(conn, win.lo, hi) if win.instants else [], skipped=skipped,
        leadership_since=leadership_since(conn), pruned_through=mark["pruned_through"] if mark else None,
        queue_paused_by=(queue["paused_by"] or "?") if queue and queue["paused"] else None,
        excluded=excluded_instants(row, win.instants, calendars_for(conn, [row])), too_old=stale)
    judged = judge(name, row, win, evidence)
    room = limit - sum(v.verdict != MANUAL for v in judged)  # the imported runs fill what is left of `limit`
    return before[max(0, len(before) - room):] + judged if before and room > 0 else judged


def _count_folds(verdicts: list[Verdict], fired: dict[datetime, dict[str, Any]]) -> list[Verdict]:
    """Number the instants folded into each later fire, on them and on the fire's entry."""
    folds: dict[datetime, int] = {}
    for v in verdicts:
        if v.into is not None:
            folds[v.into] = folds.get(v.into, 0) + 1
    if not folds:
        return verdicts
    return [replace(v, folded=folds[v.into]) if v.into is not None
            else replace(v, folded=folds.get(v.instant, 0)) if v.verdict == FIRED else v
            for v in verdicts]


def outcome_strip(conn: psycopg.Connection[Any], name: str, *, count: int = 20,
                  now: datetime | None = None) -> list[Verdict]:
    """The last `count` due instants (no manual entries): the console's outcome strip."""
    # Only its own due instants, as the schedules panel's strips (strips.py): no manual
    # triggers, no runs of the scheduler it was imported from.
    return [v for v in ledger(conn, name, limit=count, now=now) if v.verdict not in (MANUAL, IMPORTED)][-count:]
