-- Undoing v024 (`awa-tui migrate --down-to 23` or lower): the creation audit of run-time
-- schedules and the column that marks them go, and a deletion is audited row by row again
-- (v006's trigger; the entries are the same). Their rows stay, as plain schedules of
-- their owners (a release before v024 knows no other kind); what they were is kept in
-- the audit trail's `create` entries.
DROP TRIGGER cron_jobs_audit_delete ON awa.cron_jobs;
DROP FUNCTION awa.cron_jobs_audit_remove();
CREATE TRIGGER cron_jobs_audit_delete
    AFTER DELETE ON awa.cron_jobs
    FOR EACH ROW EXECUTE FUNCTION awa.cron_jobs_audit();
DROP TRIGGER cron_jobs_audit_create ON awa.cron_jobs;
DROP TRIGGER cron_jobs_audit_origin ON awa.cron_jobs;
DROP FUNCTION awa.cron_jobs_audit_origin();
DROP FUNCTION awa.cron_jobs_audit_create();
ALTER TABLE awa.cron_jobs DROP COLUMN origin;
