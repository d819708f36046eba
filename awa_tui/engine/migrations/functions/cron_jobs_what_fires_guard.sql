CREATE OR REPLACE FUNCTION awa.cron_jobs_what_fires_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.overlap NOT IN ('allow', 'skip', 'buffer_one', 'replace') THEN
        RAISE EXCEPTION 'overlap: must be ''allow'', ''skip'', ''buffer_one'' or ''replace'', got %',
            awa.escaped(NEW.overlap)
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
