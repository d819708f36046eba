-- v025: a pause with an end and a reason (S65), and the catch-up window (S66).
--
-- paused_until / pause_reason belong to the pause in force: an operator sets them with the
-- pause (or edits them by pausing again), and they go with the pause whoever resumes it. The
-- leader resumes a pause whose end has come through awa.end_pauses (one probe of a small
-- partial index, on the duties thread, never in the fire statement), audited as a resume by
-- `awa-autoresume`.
--
-- catchup_window is a definition column (declared by `periodic(...)`, written by sync):
-- how old, in seconds, a due instant may be when the leader fires it; older ones are
-- skipped and the fire statement records the newest of them in awa.fire_skips with reason
-- 'too_old' (the ledger's skipped_too_old).

ALTER TABLE awa.cron_jobs
    ADD COLUMN paused_until   timestamptz,
    ADD COLUMN pause_reason   text,
    ADD COLUMN catchup_window integer;

-- The pauses the leader must end: only rows with an end are in it (a handful).
CREATE INDEX cron_jobs_pause_ends_idx ON awa.cron_jobs (paused_until) WHERE paused_until IS NOT NULL;

-- A hand-written catch-up window registration would refuse, refused with the same words
-- (v009's guard, one more column; a trigger, not a CHECK, so the fire's UPDATE skips it).
-- include: functions/cron_jobs_what_fires_guard.sql
DROP TRIGGER cron_jobs_what_fires_guard_insert ON awa.cron_jobs;
DROP TRIGGER cron_jobs_what_fires_guard_update ON awa.cron_jobs;
CREATE TRIGGER cron_jobs_what_fires_guard_insert
    BEFORE INSERT ON awa.cron_jobs
    FOR EACH ROW
    WHEN (NEW.overlap <> 'allow' OR NEW.start_at IS NOT NULL OR NEW.end_at IS NOT NULL OR NEW.max_fires IS NOT NULL
          OR NEW.catchup_window IS NOT NULL)
    EXECUTE FUNCTION awa.cron_jobs_what_fires_guard();
CREATE TRIGGER cron_jobs_what_fires_guard_update
    BEFORE UPDATE OF overlap, start_at, end_at, max_fires, catchup_window ON awa.cron_jobs
    FOR EACH ROW
    WHEN ((OLD.overlap, OLD.start_at, OLD.end_at, OLD.max_fires, OLD.catchup_window)
          IS DISTINCT FROM (NEW.overlap, NEW.start_at, NEW.end_at, NEW.max_fires, NEW.catchup_window))
    EXECUTE FUNCTION awa.cron_jobs_what_fires_guard();

-- A change of the window is audited like the other what-fires columns (v009).
-- include: functions/cron_jobs_audit_what_fires.sql
DROP TRIGGER cron_jobs_audit_what_fires ON awa.cron_jobs;
CREATE TRIGGER cron_jobs_audit_what_fires
    AFTER UPDATE OF overlap, start_at, end_at, max_fires, catchup_window ON awa.cron_jobs
    FOR EACH ROW
    WHEN ((OLD.overlap, OLD.start_at, OLD.end_at, OLD.max_fires, OLD.catchup_window)
          IS DISTINCT FROM (NEW.overlap, NEW.start_at, NEW.end_at, NEW.max_fires, NEW.catchup_window))
    EXECUTE FUNCTION awa.cron_jobs_audit_what_fires();

-- The schedule audit trigger (v010's) sees a pause's end and reason: setting them with a
-- pause is part of the `pause`, changing them on a paused schedule is a `pause_edit`.
-- include: functions/cron_jobs_audit.sql
DROP TRIGGER cron_jobs_audit ON awa.cron_jobs;
CREATE TRIGGER cron_jobs_audit
    AFTER UPDATE OF paused_at, paused_by, paused_until, pause_reason, retired_at, retired_by, owner,
                    cron_expr, timezone, kind, queue, args, priority, max_attempts, tags, metadata,
                    missed_fire_policy, max_lateness, expect_success_within, max_consecutive_failures,
                    pause_after_failures, cron_written, jitter_ms, overridden
    ON awa.cron_jobs
    FOR EACH ROW
    WHEN (
        (OLD.paused_at, OLD.paused_by, OLD.paused_until, OLD.pause_reason, OLD.retired_at, OLD.retired_by, OLD.owner)
            IS DISTINCT FROM
        (NEW.paused_at, NEW.paused_by, NEW.paused_until, NEW.pause_reason, NEW.retired_at, NEW.retired_by, NEW.owner)
        OR (OLD.cron_expr, OLD.timezone, OLD.kind, OLD.queue, OLD.args, OLD.priority, OLD.max_attempts,
            OLD.tags, OLD.metadata, OLD.missed_fire_policy, OLD.max_lateness, OLD.expect_success_within,
            OLD.max_consecutive_failures, OLD.pause_after_failures, OLD.cron_written, OLD.jitter_ms, OLD.overridden)
            IS DISTINCT FROM
           (NEW.cron_expr, NEW.timezone, NEW.kind, NEW.queue, NEW.args, NEW.priority, NEW.max_attempts,
            NEW.tags, NEW.metadata, NEW.missed_fire_policy, NEW.max_lateness, NEW.expect_success_within,
            NEW.max_consecutive_failures, NEW.pause_after_failures, NEW.cron_written, NEW.jitter_ms, NEW.overridden)
    )
    EXECUTE FUNCTION awa.cron_jobs_audit();

-- A resume by any path (a release older than this one too) ends the pause's window.
-- include: functions/cron_jobs_pause_window.sql
CREATE TRIGGER cron_jobs_pause_window
    BEFORE UPDATE OF paused_at, paused_until, pause_reason ON awa.cron_jobs
    FOR EACH ROW
    WHEN (NEW.paused_at IS NULL AND (NEW.paused_until IS NOT NULL OR NEW.pause_reason IS NOT NULL))
    EXECUTE FUNCTION awa.cron_jobs_pause_window();

-- The steady sync's note (v012, v018), with the new definition column.
DROP TRIGGER cron_jobs_note_update ON awa.cron_jobs;
CREATE TRIGGER cron_jobs_note_update
    AFTER UPDATE OF name, cron_expr, timezone, kind, queue, args, priority, max_attempts, tags, metadata,
                    missed_fire_policy, max_lateness, expect_success_within, max_consecutive_failures,
                    pause_after_failures, overlap, start_at, end_at, max_fires, cron_written, jitter_ms,
                    exclude_dates, exclude_calendars, catchup_window, overridden, owner, retired_at
    ON awa.cron_jobs
    FOR EACH ROW
    WHEN ((OLD.name, OLD.cron_expr, OLD.timezone, OLD.kind, OLD.queue, OLD.args, OLD.priority, OLD.max_attempts,
           OLD.tags, OLD.metadata, OLD.missed_fire_policy, OLD.max_lateness, OLD.expect_success_within,
           OLD.max_consecutive_failures, OLD.pause_after_failures, OLD.overlap, OLD.start_at, OLD.end_at,
           OLD.max_fires, OLD.cron_written, OLD.jitter_ms, OLD.exclude_dates, OLD.exclude_calendars,
           OLD.catchup_window, OLD.overridden, OLD.owner, OLD.retired_at)
          IS DISTINCT FROM
          (NEW.name, NEW.cron_expr, NEW.timezone, NEW.kind, NEW.queue, NEW.args, NEW.priority, NEW.max_attempts,
           NEW.tags, NEW.metadata, NEW.missed_fire_policy, NEW.max_lateness, NEW.expect_success_within,
           NEW.max_consecutive_failures, NEW.pause_after_failures, NEW.overlap, NEW.start_at, NEW.end_at,
           NEW.max_fires, NEW.cron_written, NEW.jitter_ms, NEW.exclude_dates, NEW.exclude_calendars,
           NEW.catchup_window, NEW.overridden, NEW.owner, NEW.retired_at))
    EXECUTE FUNCTION awa.cron_jobs_note_update();

-- include: functions/end_pauses.sql
REVOKE EXECUTE ON FUNCTION awa.end_pauses(timestamptz, integer, text) FROM PUBLIC;

-- A role layout applied before this version keeps working without being applied again:
-- whoever may write a schedule's pause may write its end and reason, whoever syncs
-- definitions may write the new one, and the runtime role (the grantee of INSERT on
-- awa.cron_jobs) may end pauses.
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT DISTINCT a.grantee::regrole AS role FROM pg_attribute att, aclexplode(att.attacl) a
             WHERE att.attrelid = 'awa.cron_jobs'::regclass AND att.attname = 'paused_at'
               AND a.privilege_type = 'UPDATE' AND a.grantee <> 0
    LOOP
        EXECUTE format('GRANT UPDATE (paused_until, pause_reason) ON awa.cron_jobs TO %s', r.role);
    END LOOP;
    FOR r IN SELECT DISTINCT a.grantee::regrole AS role FROM pg_attribute att, aclexplode(att.attacl) a
             WHERE att.attrelid = 'awa.cron_jobs'::regclass AND att.attname = 'cron_expr'
               AND a.privilege_type = 'UPDATE' AND a.grantee <> 0
    LOOP
        EXECUTE format('GRANT UPDATE (catchup_window) ON awa.cron_jobs TO %s', r.role);
    END LOOP;
    FOR r IN SELECT DISTINCT a.grantee::regrole AS role FROM pg_class c, aclexplode(c.relacl) a
             WHERE c.oid = 'awa.cron_jobs'::regclass AND a.privilege_type = 'INSERT'
               AND a.grantee <> 0 AND a.grantee <> c.relowner
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION awa.end_pauses(timestamptz, integer, text) TO %s', r.role);
    END LOOP;
END $$;

-- A leader of an earlier release would fire instants older than a catch-up window and never
-- end a pause (S61): from here only runtimes of protocol 3 lead; earlier ones keep syncing
-- and working jobs. `awa-tui migrate --leaders-from 2` lets them lead again before a rollback.
UPDATE awa.release_policy SET min_leader_protocol = greatest(min_leader_protocol, 3), updated_at = now()
WHERE singleton;
