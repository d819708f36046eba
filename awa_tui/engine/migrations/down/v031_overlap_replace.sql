-- Undoes v031_overlap_replace.sql (`awa-tui migrate --down-to 30` or lower): no `replace`
-- overlap policy. A schedule that had it keeps one job at a time the nearest way an earlier
-- release knows: `skip` (the due instant does not fire while a job is still going); the
-- change is audited as a redefinition. Jobs already replaced stay cancelled, their records
-- as written.
SELECT awa.begin_action('awa-migrate', 'redefine', jsonb_build_object('reason', 'migrate down: no overlap replace'));
UPDATE awa.cron_jobs SET overlap = 'skip' WHERE overlap = 'replace';

-- The release before this one leads again.
UPDATE awa.release_policy SET min_leader_protocol = least(min_leader_protocol, 3), updated_at = now()
WHERE singleton;

-- The guard as v025 left it.
CREATE OR REPLACE FUNCTION awa.cron_jobs_what_fires_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.overlap NOT IN ('allow', 'skip', 'buffer_one') THEN
        RAISE EXCEPTION 'overlap: must be ''allow'', ''skip'' or ''buffer_one'', got %', awa.escaped(NEW.overlap)
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.max_fires < 1 THEN
        RAISE EXCEPTION 'max_fires: must be an integer 1..2147483647, got %', NEW.max_fires
            USING ERRCODE = 'check_violation';
    END IF;
    IF NOT (awa.ts_loadable(NEW.start_at) AND awa.ts_loadable(NEW.end_at)) THEN
        RAISE EXCEPTION 'start_at/end_at: outside the supported range 0001-01-03..9999-12-29 UTC, got % .. %',
            NEW.start_at, NEW.end_at USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.start_at > NEW.end_at THEN
        RAISE EXCEPTION 'start_at: % is after end_at %', NEW.start_at, NEW.end_at
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.catchup_window < 1 THEN
        RAISE EXCEPTION 'catchup_window: must be a positive number of seconds, got %', NEW.catchup_window
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$;
