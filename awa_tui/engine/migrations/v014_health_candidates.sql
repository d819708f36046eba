-- v014: the leader's health duty judges what can change, not every schedule (S42).
--
-- Each pass judges the candidates only (rules.py): the unhealthy, the late, those with a
-- failure count or a dead-man's switch, the names the audit trail and the pass's fires
-- name, and one keyset slice of all names (the sweep) so anything else, a row edited by
-- hand, is still judged within a bounded time. The two positions are kept here, so a new
-- leader goes on where the last one stopped.
ALTER TABLE awa.health_meta
    ADD COLUMN audit_seen_id bigint NOT NULL DEFAULT 0,  -- audit rows read up to this id
    ADD COLUMN sweep_after   text;                       -- the sweep's last name; NULL: from the start
-- What happened before is already judged by the passes that ran before this migration.
UPDATE awa.health_meta SET audit_seen_id = (SELECT coalesce(max(id), 0) FROM awa.audit_log);

-- The candidates read through small partial indexes: schedules with failed jobs counted
-- (one may turn failing at its next failure) and schedules with expect_success_within
-- (one may turn missed by time alone).
CREATE INDEX cron_health_failures_idx ON awa.cron_health (name) WHERE consecutive_failures > 0;
CREATE INDEX cron_jobs_expect_success_idx ON awa.cron_jobs (name) WHERE expect_success_within IS NOT NULL;
