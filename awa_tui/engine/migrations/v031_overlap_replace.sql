-- v031: the overlap policy `replace`: a due instant whose schedule still has a job waiting
-- or running fires, and the fire statement (engine/firing/evaluator.py FIRE_BATCH_SQL)
-- cancels that job in the same statement: a waiting one at once (cancelled, finalized), a
-- running one by asking its runtime (cancel_requested_at, as an operator's cancel does). The
-- new job's metadata names the jobs it replaced (`cron_replaced`), each replaced job names
-- its replacement (`cron_replaced_by`).

-- The guard (v009's, v025's columns) accepts the new value.
-- include: functions/cron_jobs_what_fires_guard.sql

-- A leader of an earlier release would fire a `replace` schedule as `allow`, never cancelling
-- (S61): from here only runtimes of protocol 4 lead; earlier ones keep syncing and working
-- jobs. `awa-tui migrate --leaders-from 3` lets them lead again before a rollback.
UPDATE awa.release_policy SET min_leader_protocol = greatest(min_leader_protocol, 4), updated_at = now()
WHERE singleton;
