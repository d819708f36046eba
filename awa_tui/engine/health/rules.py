"""The health rules (S42), evaluated by the leader on an interval in database time.

One statement judges every schedule and writes only the ones whose health changed (with
since when and why) plus one transition row each; a steady pass writes nothing per
schedule. The consecutive-failure count it reads is kept by the job-outcome trigger of
migration v008. A second statement counts the fires enqueued since the last pass into
the counters the metrics serve.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg

from awa_tui.engine.db import db_now
from awa_tui.engine.evaluator import FAULT_SQL
from awa_tui.engine.health.models import HealthPass, Transition
from awa_tui.engine.schedule import DEFAULT_MAX_LATENESS_S, row_fault

# The leader evaluates health at this cadence (so health changed by time passing alone,
# late or missed, is caught within it).
HEALTH_INTERVAL_S = 10.0
# Fire instants kept per schedule for the missed rule (expect_success_within).
RECENT_FIRES = 10
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
    FROM awa.cron_jobs c
    LEFT JOIN bad b ON (b.cron_expr, b.timezone, b.policy) = (c.cron_expr, c.timezone, c.missed_fire_policy)
    LEFT JOIN awa.cron_health h ON h.name = c.name
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
SELECT name, old_health, health, reason FROM changed
"""

# The definition parts only the engine's parser can judge, once per distinct triple.
TRIPLES_SQL = "SELECT DISTINCT cron_expr, timezone, missed_fire_policy FROM awa.cron_jobs WHERE retired_at IS NULL"

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
    SELECT f.*, coalesce(c.owner, '') AS owner, c.name IS NOT NULL AS known,
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
    SELECT j.name, array_agg(j.fire ORDER BY j.fire DESC) AS fires,
           (array_agg(j.lateness ORDER BY j.id DESC))[1] AS lateness
    FROM judged j WHERE NOT j.manual AND j.fire IS NOT NULL AND j.known GROUP BY j.name
),
last AS (
    INSERT INTO awa.cron_health AS h (name, recent_fires, last_lateness)
    SELECT name, fires[1:{RECENT_FIRES}], lateness FROM scheduled
    ON CONFLICT (name) DO UPDATE SET
        recent_fires = (EXCLUDED.recent_fires || h.recent_fires)[1:{RECENT_FIRES}],
        last_lateness = EXCLUDED.last_lateness
),
seen AS (
    UPDATE awa.health_meta m SET jobs_seen_id = greatest(m.jobs_seen_id, (SELECT max(id) FROM fresh))
    WHERE m.singleton AND EXISTS (SELECT 1 FROM fresh)
)
SELECT count(*) AS fires FROM judged
"""

META_SQL = """
UPDATE awa.health_meta SET evaluated_at = %(now)s, instance_id = %(instance)s, pass_seconds = %(seconds)s
WHERE singleton
"""

PRUNE_TRANSITIONS_SQL = (
    f"DELETE FROM awa.health_transitions WHERE at < %(now)s - interval '{TRANSITION_RETENTION_DAYS} days'"
)


def _bad_triples(conn: psycopg.Connection[Any]) -> str:
    """The (expression, zone, policy) triples the parser refuses, with why (BROKEN, S15)."""
    bad = []
    for row in conn.execute(TRIPLES_SQL).fetchall():
        fault = row_fault({**row, "fault": None})
        if fault:
            bad.append({"cron_expr": row["cron_expr"], "timezone": row["timezone"],
                        "policy": row["missed_fire_policy"], "fault": fault})
    return json.dumps(bad)


def evaluate_health(
    conn: psycopg.Connection[Any], now: datetime | None = None, *, instance_id: UUID | None = None
) -> HealthPass:
    """Judge every schedule at `now` (DB time when omitted), record what changed, count
    the fires since the last pass; one transaction."""
    started = time.monotonic()
    with conn.transaction():
        # The judging join holds every schedule's health row in one hash: in memory, not in
        # temporary files, at 100k schedules.
        conn.execute("SET LOCAL work_mem = '32MB'")
        now = now or db_now(conn)
        # Fires first: the missed rule reads the instants they add.
        fires = conn.execute(FIRES_SQL, {"buckets": list(LATENESS_BUCKETS)}).fetchone()
        bad = _bad_triples(conn)
        rows = conn.execute(RECORD_SQL, {"now": now, "bad": bad}).fetchall()
        conn.execute(PRUNE_TRANSITIONS_SQL, {"now": now})
        seconds = time.monotonic() - started
        conn.execute(META_SQL, {"now": now, "instance": instance_id, "seconds": seconds})
    return HealthPass(
        now=now,
        transitions=[Transition(r["name"], now, r["old_health"], r["health"], r["reason"]) for r in rows],
        fires_counted=fires["fires"] if fires else 0,
        seconds=seconds,
    )
