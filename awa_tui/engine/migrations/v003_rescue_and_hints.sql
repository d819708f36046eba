-- v003: which runtime claimed a running job (so the leader can rescue jobs stranded by a
-- dead worker), and a reset of the next-fire hint when a row's timing is edited by hand.

ALTER TABLE awa.jobs ADD COLUMN claimed_by uuid;
CREATE INDEX jobs_running_idx ON awa.jobs (claimed_by) WHERE state = 'running';

-- The hint (next_fire_at) is derived from cron_expr and timezone; our own writers reset
-- it, but a hand-written UPDATE would leave a stale one. The WHEN clause keeps fires
-- (which never change these columns) from even entering the function.
CREATE FUNCTION awa.cron_jobs_reset_hint() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.next_fire_at := NULL;
    RETURN NEW;
END;
$$;

CREATE TRIGGER cron_jobs_reset_hint
    BEFORE UPDATE OF cron_expr, timezone ON awa.cron_jobs
    FOR EACH ROW
    WHEN (OLD.cron_expr IS DISTINCT FROM NEW.cron_expr OR OLD.timezone IS DISTINCT FROM NEW.timezone)
    EXECUTE FUNCTION awa.cron_jobs_reset_hint();
