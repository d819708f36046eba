CREATE OR REPLACE FUNCTION awa.cron_jobs_pause_window() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- A pause's end and reason belong to that pause: whoever resumes (a release that does
    -- not know these columns too), they go with it.
    NEW.paused_until := NULL;
    NEW.pause_reason := NULL;
    RETURN NEW;
END;
$$;
