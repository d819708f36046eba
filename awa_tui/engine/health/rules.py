"""The health rules (S42), evaluated by the leader on an interval in database time.

A pass judges the candidates only: the schedules whose health can differ from the one
recorded (CANDIDATES_SQL says which and why), plus one keyset slice of all names (the
sweep), so its cost follows what changed, not the schedule count. One statement judges
them and writes only the ones whose health changed (with since when and why) plus one
transition row each; a steady pass writes nothing per schedule. The consecutive-failure
count it reads is kept by the job-outcome trigger of migration v008. A second statement
counts the fires enqueued since the last pass into the counters the metrics serve.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from functools import lru_cache
from typing import Any
from uuid import UUID

import psycopg

from awa_tui.engine.core.db import db_now
from awa_tui.engine.core.limits import DEFAULT_MAX_LATENESS_S
from awa_tui.engine.health.models import HealthPass, Transition
from awa_tui.engine.schedules.columns import FAULT_SQL
from awa_tui.engine.schedules.definition import row_fault

# Fire instants kept per schedule for the missed rule (expect_success_within).
RECENT_FIRES = 10
# Names the sweep judges per pass whatever else happened: every schedule is judged at least
# once every ceil(N / SWEEP_ROWS) + 1 passes (100k schedules: 11 passes, 110 s; 1M: 101
# passes, about 17 minutes). Judging costs ~10-20 us a row, so a slice costs a fixed
# ~0.1-0.2 s a pass whatever the schedule count.
SWEEP_ROWS = 10_000
# Transitions older than this are pruned by the same duty.
TRANSITION_RETENTION_DAYS = 30
# awa_fire_lateness_seconds buckets (seconds); the last one is +Inf.
LATENESS_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, float("inf"))

_LATENESS = f"coalesce(c.max_lateness, {DEFAULT_MAX_LATENESS_S})"
# recent_fires is newest first, so the first element at or before the deadline is the one:
# a CASE over the (at most RECENT_FIRES) elements, evaluated in C, no subquery per row.
_DUE_FIRE = "CASE WHEN c.expect_success_within IS NOT NULL THEN CASE {} END END".format(" ".join(
    f"WHEN h.recent_fires[{i}] <= %(now)s - make_interval(secs => c.expect_success_within) "
    f"THEN h.recent_fires[{i}]" for i in range(1, RECENT_FIRES + 1)))

# The sweep's slice: the names after `sweep_lo` up to `sweep_hi` (NULL: from the start, to
# the end), read as a range of the primary key.
_SWEPT = ("(%(sweep_lo)s::text IS NULL OR c.name > %(sweep_lo)s) "
          "AND (%(sweep_hi)s::text IS NULL OR c.name <= %(sweep_hi)s)")

# Each rule's inputs are read once per schedule; the words (reason) are made only for the
# schedules whose health changed, so a steady pass over 100k rows formats nothing.
# `due_fire`: the newest scheduled fire whose expect_success_within has passed at `now`,
# from the instants the leader keeps per schedule (no jobs are read); missed when no job
# completed in time for it or for a later instant (last_ok_fire, kept by the outcome
# trigger).
JUDGE_SQL = f"""
SELECT j.*,
    CASE
        WHEN j.retired THEN 'retired'
        WHEN j.finished_at IS NOT NULL THEN 'finished'  -- past its bounds (S46): not late, not failing
        WHEN j.fault IS NOT NULL THEN 'broken'
        WHEN j.paused THEN 'paused'
        WHEN j.failures > coalesce(j.max_failures, 0) THEN 'failing'
        WHEN j.due_fire > coalesce(j.last_ok_fire, '-infinity') THEN 'missed'
        WHEN j.next_fire_at < %(now)s - make_interval(secs => j.max_lateness) THEN 'late'
        ELSE 'ok'
    END AS health
FROM (
    SELECT c.name, h.health AS old_health, c.retired_at IS NOT NULL AS retired, c.retired_by,
           coalesce({FAULT_SQL}, b.fault) AS fault, c.paused_at IS NOT NULL AS paused, c.paused_by,
           coalesce(h.consecutive_failures, 0) AS failures, c.max_consecutive_failures AS max_failures,
           c.pause_after_failures, c.expect_success_within, {_DUE_FIRE} AS due_fire, h.last_ok_fire,
           c.next_fire_at, {_LATENESS} AS max_lateness, c.finished_at, c.fires_count, c.max_fires
    -- The candidates and the slice as one list of names, then each row by its key: an OR of
    -- the two in one WHERE would read the whole table at 1M rows.
    -- OFFSET 0 keeps each lookup a probe of the key: joined as tables, the planner's guess
    -- of the list's size can make it hash the whole table.
    FROM (SELECT unnest(%(names)s::text[]) AS name UNION SELECT c.name FROM awa.cron_jobs c WHERE {_SWEPT}) k
    CROSS JOIN LATERAL (SELECT * FROM awa.cron_jobs c WHERE c.name = k.name OFFSET 0) c
    LEFT JOIN bad b ON (b.cron_expr, b.timezone, b.policy) = (c.cron_expr, c.timezone, c.missed_fire_policy)
    LEFT JOIN LATERAL (SELECT * FROM awa.cron_health h WHERE h.name = c.name OFFSET 0) h ON true
) j
"""

_UTC = """'YYYY-MM-DD"T"HH24:MI:SS"Z"'"""
REASON_SQL = f"""
    CASE health
        WHEN 'retired' THEN 'retired by ' || coalesce(retired_by, 'unknown')
        WHEN 'broken' THEN fault
        WHEN 'finished' THEN format('finished at %%s: %%s', to_char(finished_at AT TIME ZONE 'UTC', {_UTC}),
            CASE WHEN fires_count >= max_fires THEN format('%%s of max_fires %%s', fires_count, max_fires)
                 ELSE 'past end_at' END)
        WHEN 'paused' THEN CASE WHEN paused_by = 'awa-autopause'
            THEN format('paused by awa-autopause after %%s consecutive failed jobs (pause_after_failures %%s)',
                        failures, pause_after_failures)
            ELSE 'paused by ' || coalesce(paused_by, 'unknown') END
        WHEN 'failing' THEN CASE WHEN max_failures IS NULL THEN 'the last job failed'
            ELSE format('%%s consecutive failed jobs (max_consecutive_failures %%s)', failures, max_failures) END
        WHEN 'missed' THEN format('no success for the fire at %%s within %%s s (expect_success_within)',
                                  to_char(due_fire AT TIME ZONE 'UTC', {_UTC}), expect_success_within)
        WHEN 'late' THEN format('the fire due at %%s was not enqueued within %%s s (max_lateness)',
                                to_char(next_fire_at AT TIME ZONE 'UTC', {_UTC}), max_lateness)
    END"""

RECORD_SQL = f"""
WITH bad AS (
    SELECT * FROM jsonb_to_recordset(%(bad)s::jsonb) AS x(cron_expr text, timezone text, policy text, fault text)
),
judged AS ({JUDGE_SQL}),
-- No row means ok: a schedule gets its row when it first leaves ok (or from a job's
-- outcome), so the first pass over 100k healthy schedules writes nothing per schedule.
changed AS (SELECT name, coalesce(old_health, 'ok') AS old_health, health, {REASON_SQL} AS reason FROM judged
            WHERE coalesce(old_health, 'ok') IS DISTINCT FROM health),
written AS (
    INSERT INTO awa.cron_health AS h (name, health, since, reason, evaluated_at)
    SELECT name, health, %(now)s, reason, %(now)s FROM changed
    ON CONFLICT (name) DO UPDATE SET health = EXCLUDED.health, since = EXCLUDED.since,
        reason = EXCLUDED.reason, evaluated_at = EXCLUDED.evaluated_at
),
logged AS (
    INSERT INTO awa.health_transitions (name, at, from_health, to_health, reason)
    SELECT name, %(now)s, old_health, health, reason FROM changed
)
SELECT (SELECT count(*) FROM judged) AS judged,
       (SELECT coalesce(jsonb_agg(jsonb_build_object('name', name, 'old_health', old_health, 'health', health,
                                                     'reason', reason) ORDER BY name), '[]') FROM changed) AS changes
"""

# The schedules whose health can differ from the one recorded, each by the only ways it
# can change (a name may come from several; the judge sees it once):
# - recorded unhealthy: it may recover or turn another way (cron_health_unhealthy_idx);
#   not paused, retired or finished: those leave only by an audited change (resume,
#   restore, a definition or bounds edit, by our code or by hand, S20), named below, so a
#   fleet with 10% paused does not judge them all every pass;
# - late by time alone: next_fire_at older than its max_lateness, read through the due
#   index (paused, retired, finished are never late; max_lateness >= 1 s by constraint,
#   so the index condition is exact and the row's own bound filters);
# - failed jobs counted: the next failure may make it failing (cron_health_failures_idx;
#   a success resets the count, and a failing schedule is recorded unhealthy anyway);
# - missed by time alone: its next expect_success_within deadline (a recent fire + the
#   bound, kept in cron_health.expect_due_at, v016) has passed (cron_health_expect_due_idx);
#   the fires set it, each pass that judges a schedule moves it to the next one;
# - named by the audit trail since the last pass (every pause, resume, retire, restore,
#   redefinition, expectation or bounds change, by our code or by hand);
# - `named`: those the pass's fires name (a fire may finish it or add a missed instant).
# The sweep's slice is judged beside them (_SWEPT); its triples come from SWEEP_TRIPLES_SQL.
# What none of these sees is a hand edit of an unaudited column (a hint, an instant) or a
# row inserted by hand: the sweep judges it within its bound.
CANDIDATES_SQL = f"""
WITH cand AS (
    SELECT name FROM awa.cron_health WHERE health NOT IN ('ok', 'paused', 'retired', 'finished')
    UNION SELECT name FROM awa.cron_jobs c
        WHERE c.paused_at IS NULL AND c.retired_at IS NULL AND c.finished_at IS NULL
          AND c.next_fire_at < %(now)s - interval '1 second'
          AND c.next_fire_at < %(now)s - make_interval(secs => {_LATENESS})
    UNION SELECT name FROM awa.cron_health WHERE consecutive_failures > 0
    UNION SELECT name FROM awa.cron_health WHERE expect_due_at <= %(now)s
    UNION SELECT target FROM awa.audit_log WHERE id > %(audit_from)s AND id <= %(audit_to)s
    UNION SELECT unnest(%(named)s::text[])
)
SELECT c.*
FROM cand CROSS JOIN LATERAL (  -- a probe of the key per name (OFFSET 0: never a hash of the table)
    SELECT c.name, c.cron_expr, c.timezone, c.missed_fire_policy, c.retired_at IS NOT NULL AS retired
    FROM awa.cron_jobs c WHERE c.name = cand.name OFFSET 0) c
"""

# The pass's positions, locked for the pass (FIRES_SQL locks the same row). One pass reads
# at most `audit_batch` audit entries: a bulk change (a million schedules made at run time,
# a bulk pause) is judged over several short passes, each run at once after the last
# (`audit_behind`), not in one transaction that holds the leader for a minute.
POSITIONS_SQL = """
SELECT m.audit_seen_id, m.sweep_after, least(t.last, m.audit_seen_id + %(audit_batch)s) AS audit_to,
       t.last > m.audit_seen_id + %(audit_batch)s AS audit_behind
FROM awa.health_meta m, LATERAL (SELECT coalesce(max(id), m.audit_seen_id) AS last FROM awa.audit_log) t
WHERE singleton FOR UPDATE OF m
"""
AUDIT_BATCH = 20_000
# The sweep's last name: the n-th after `after` (none: the slice runs to the end).
SWEEP_END_SQL = ("SELECT c.name FROM awa.cron_jobs c WHERE %(sweep_lo)s::text IS NULL OR c.name > %(sweep_lo)s "
                 "ORDER BY c.name OFFSET %(n)s - 1 LIMIT 1")
SWEEP_TRIPLES_SQL = f"""
SELECT DISTINCT c.cron_expr, c.timezone, c.missed_fire_policy, false AS retired
FROM awa.cron_jobs c WHERE c.retired_at IS NULL AND {_SWEPT}
"""
SAVE_POSITIONS_SQL = "UPDATE awa.health_meta SET audit_seen_id = %(audit)s, sweep_after = %(after)s WHERE singleton"

# Fires enqueued since the last pass (job ids above the watermark), counted once into the
# per-owner/queue/verdict counters and the per-queue lateness histogram; each schedule's
# last fire lateness is kept for its metric.
FIRES_SQL = f"""
WITH meta AS (SELECT jobs_seen_id FROM awa.health_meta WHERE singleton FOR UPDATE),
fresh AS (
    SELECT j.id, j.queue, j.metadata ->> 'cron_name' AS name,
           coalesce(j.metadata ->> 'triggered_manually' = 'true', false) AS manual,
           f.fire, extract(epoch FROM awa.safe_ts(j.created_at) - f.fire)::float8 AS lateness
    FROM awa.jobs j CROSS JOIN meta
    CROSS JOIN LATERAL (SELECT awa.try_timestamptz(j.metadata ->> 'cron_fire_time') AS fire) f
    WHERE j.id > meta.jobs_seen_id AND j.metadata ? 'cron_name'
),
judged AS (
    SELECT f.*, coalesce(c.owner, '') AS owner, c.name IS NOT NULL AS known, c.expect_success_within,
           CASE WHEN f.manual THEN 'manual'
                WHEN f.lateness > {_LATENESS} THEN 'late'
                ELSE 'on_time' END AS verdict
    FROM fresh f LEFT JOIN awa.cron_jobs c ON c.name = f.name
),
stats AS (
    INSERT INTO awa.fire_stats AS s (owner, queue, verdict, fires)
    SELECT owner, queue, verdict, count(*) FROM judged GROUP BY owner, queue, verdict
    ON CONFLICT (owner, queue, verdict) DO UPDATE SET fires = s.fires + EXCLUDED.fires
),
hist AS (
    INSERT INTO awa.fire_lateness AS l (queue, le, fires, total)
    SELECT j.queue, b.le, count(*), sum(j.lateness)
    FROM judged j
    CROSS JOIN LATERAL (SELECT min(le) AS le FROM unnest(%(buckets)s::float8[]) le WHERE j.lateness <= le) b
    WHERE NOT j.manual AND j.lateness IS NOT NULL
    GROUP BY j.queue, b.le
    ON CONFLICT (queue, le) DO UPDATE SET fires = l.fires + EXCLUDED.fires, total = l.total + EXCLUDED.total
),
scheduled AS (
    SELECT j.name, (array_agg(j.fire ORDER BY j.fire DESC))[1:{RECENT_FIRES}] AS fires,
           (array_agg(j.lateness ORDER BY j.id DESC))[1] AS lateness, min(j.expect_success_within) AS expect
    FROM judged j WHERE NOT j.manual AND j.fire IS NOT NULL AND j.known GROUP BY j.name
),
last AS (
    -- The oldest new fire kept is the first new deadline (v016); least() keeps an earlier
    -- one still pending (NULLs aside).
    INSERT INTO awa.cron_health AS h (name, recent_fires, last_lateness, expect_due_at)
    SELECT name, fires, lateness, fires[cardinality(fires)] + make_interval(secs => expect) FROM scheduled
    ON CONFLICT (name) DO UPDATE SET
        recent_fires = (EXCLUDED.recent_fires || h.recent_fires)[1:{RECENT_FIRES}],
        last_lateness = EXCLUDED.last_lateness,
        expect_due_at = least(h.expect_due_at, EXCLUDED.expect_due_at)
),
seen AS (
    UPDATE awa.health_meta m SET jobs_seen_id = greatest(m.jobs_seen_id, (SELECT max(id) FROM fresh))
    WHERE m.singleton AND EXISTS (SELECT 1 FROM fresh)
)
SELECT count(*) AS fires, coalesce(array_agg(DISTINCT name) FILTER (WHERE known), '{{}}') AS names FROM judged
"""

# After a pass judged them at `now`: each candidate's next expect_success_within deadline,
# the first of its recent fires' still ahead (none: NULL), so a schedule is judged for the
# missed rule once per deadline, not every pass (v016). Candidates include every audited
# change, so an edited bound moves its deadline too. Written only where it moved.
ADVANCE_DEADLINES_SQL = """
UPDATE awa.cron_health h SET expect_due_at = d.due
FROM (
    SELECT hh.name, (SELECT min(f + make_interval(secs => c.expect_success_within)) FROM unnest(hh.recent_fires) f
                     WHERE f + make_interval(secs => c.expect_success_within) > %(now)s) AS due
    FROM awa.cron_health hh JOIN awa.cron_jobs c ON c.name = hh.name
    WHERE hh.name = ANY(%(names)s::text[])
) d
WHERE h.name = d.name AND h.expect_due_at IS DISTINCT FROM d.due
"""

META_SQL = """
UPDATE awa.health_meta SET evaluated_at = %(now)s, instance_id = %(instance)s, pass_seconds = %(seconds)s
WHERE singleton
"""

PRUNE_TRANSITIONS_SQL = (
    f"DELETE FROM awa.health_transitions WHERE at < %(now)s - interval '{TRANSITION_RETENTION_DAYS} days'"
)


@lru_cache(maxsize=65_536)
def _triple_fault(cron_expr: str, timezone: str, policy: str) -> str | None:
    """Why the parser refuses this (expression, zone, policy), or None. A pure function
    of the text, so the verdict is kept for the process (BROKEN, S15)."""
    return row_fault({"cron_expr": cron_expr, "timezone": timezone, "missed_fire_policy": policy, "fault": None})


def _bad_triples(rows: list[dict[str, Any]]) -> str:
    """The candidates' triples the parser refuses, with why; retired rows are judged
    retired whatever their text."""
    triples = {(r["cron_expr"], r["timezone"], r["missed_fire_policy"]) for r in rows if not r["retired"]}
    bad = [{"cron_expr": e, "timezone": z, "policy": p, "fault": fault}
           for e, z, p in triples if (fault := _triple_fault(e, z, p))]
    return json.dumps(bad)


def _sweep(conn: psycopg.Connection[Any], after: str | None, rows: int) -> dict[str, str | None]:
    """The next `rows` names after `after` (from the start when None) as a range; the next
    pass starts after its end, back at the start once the slice reaches the end."""
    end = conn.execute(SWEEP_END_SQL, {"sweep_lo": after, "n": rows}).fetchone()
    return {"sweep_lo": after, "sweep_hi": end["name"] if end else None}


def evaluate_health(
    conn: psycopg.Connection[Any], now: datetime | None = None, *, instance_id: UUID | None = None,
    sweep: int = SWEEP_ROWS, audit_batch: int = AUDIT_BATCH,
) -> HealthPass:
    """Judge at `now` (DB time when omitted) every schedule whose health can have changed
    since the last pass, plus the sweep's next `sweep` names; record what changed, count
    the fires since the last pass; one transaction."""
    started = time.monotonic()
    with conn.transaction():
        # The judge's hashes (a sweep slice's worth of rows) stay in memory.
        conn.execute("SET LOCAL work_mem = '32MB'")
        now = now or db_now(conn)
        positions = conn.execute(POSITIONS_SQL, {"audit_batch": audit_batch}).fetchone()
        if positions is None:
            raise RuntimeError("awa.health_meta has no row: run `awa-tui migrate`")
        # Fires first: the missed rule reads the instants they add, and they name candidates.
        fires = conn.execute(FIRES_SQL, {"buckets": list(LATENESS_BUCKETS)}).fetchone()
        swept = _sweep(conn, positions["sweep_after"], sweep)
        candidates = conn.execute(CANDIDATES_SQL, {
            "now": now, "audit_from": positions["audit_seen_id"], "audit_to": positions["audit_to"],
            "named": list(fires["names"] if fires else []),
        }).fetchall()
        names = [c["name"] for c in candidates]
        triples = candidates + conn.execute(SWEEP_TRIPLES_SQL, swept).fetchall()
        params = {"now": now, "bad": _bad_triples(triples), "names": names, **swept}
        record = conn.execute(RECORD_SQL, params).fetchone()
        rows = record["changes"] if record else []
        conn.execute(ADVANCE_DEADLINES_SQL, {"now": now, "names": names})
        conn.execute(SAVE_POSITIONS_SQL, {"audit": positions["audit_to"], "after": swept["sweep_hi"]})
        conn.execute(PRUNE_TRANSITIONS_SQL, {"now": now})
        seconds = time.monotonic() - started
        conn.execute(META_SQL, {"now": now, "instance": instance_id, "seconds": seconds})
    return HealthPass(
        now=now,
        transitions=[Transition(r["name"], now, r["old_health"], r["health"], r["reason"]) for r in rows],
        fires_counted=fires["fires"] if fires else 0,
        seconds=seconds,
        judged=record["judged"] if record else 0,
        audit_behind=bool(positions["audit_behind"]),
    )
