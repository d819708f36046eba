-- v015: a sync writes each inserted row's next-fire hint (S52), so the hint of a row that
-- never fired is no longer NULL until its first pass. A hand-written UPDATE of the
-- instants the hint derives from (last_enqueued_at, and created_at for a row that never
-- fired) now resets it, as v003 does for cron_expr and timezone: without this, hand-moving
-- last_enqueued_at back (to replay fires) would wait for the stale hint. The fire path
-- always writes a new hint with a new last_enqueued_at, so the WHEN clause keeps it from
-- entering the function.
CREATE TRIGGER cron_jobs_reset_hint_instants
    BEFORE UPDATE OF last_enqueued_at, created_at ON awa.cron_jobs
    FOR EACH ROW
    WHEN ((OLD.last_enqueued_at, OLD.created_at) IS DISTINCT FROM (NEW.last_enqueued_at, NEW.created_at)
          AND NEW.next_fire_at IS NOT NULL AND NEW.next_fire_at IS NOT DISTINCT FROM OLD.next_fire_at)
    EXECUTE FUNCTION awa.cron_jobs_reset_hint();
