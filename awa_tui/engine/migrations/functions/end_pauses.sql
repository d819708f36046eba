-- The leader's automatic resume of pauses whose end has come (S65): at most p_limit rows,
-- oldest end first, skipping rows an operator holds (the next round gets them).
CREATE OR REPLACE FUNCTION awa.end_pauses(p_now timestamptz DEFAULT NULL, p_limit integer DEFAULT 1000,
                                          p_runtime text DEFAULT NULL)
RETURNS TABLE (name text, paused_until timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := coalesce(p_now, now());
BEGIN
    -- Nothing to end: no audit context, no write (the common case, one probe of the index).
    -- The earliest end, read without a parameter: compared with `t` in the query, the cached
    -- generic plan that PL/pgSQL switches to after five calls scanned the whole table
    -- (13 ms a second at 100,000 schedules).
    IF coalesce((SELECT c.paused_until FROM awa.cron_jobs c WHERE c.paused_until IS NOT NULL
                 ORDER BY c.paused_until LIMIT 1) > t, true) THEN
        RETURN;
    END IF;
    -- The resume is audited like an operator's, by the automatic actor, with the runtime
    -- that ended it; the audit trigger writes each row's before/after (S20).
    PERFORM awa.begin_action('awa-autoresume', 'resume', jsonb_build_object(
        'automatic', true, 'reason', 'the pause reached its end', 'runtime', p_runtime));
    RETURN QUERY
    UPDATE awa.cron_jobs c SET paused_at = NULL, paused_by = NULL, paused_until = NULL, pause_reason = NULL
    FROM (SELECT d.name, d.paused_until FROM awa.cron_jobs d
          WHERE d.paused_until <= t AND d.paused_at IS NOT NULL
          ORDER BY d.paused_until, d.name
          LIMIT greatest(p_limit, 1)
          FOR UPDATE SKIP LOCKED) e
    WHERE c.name = e.name
    RETURNING c.name, e.paused_until;
END;
$$;
