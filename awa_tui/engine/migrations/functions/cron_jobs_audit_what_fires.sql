CREATE OR REPLACE FUNCTION awa.cron_jobs_audit_what_fires() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    old_def jsonb := jsonb_build_object('overlap', OLD.overlap, 'start_at', OLD.start_at, 'end_at', OLD.end_at,
                                        'max_fires', OLD.max_fires, 'catchup_window', OLD.catchup_window);
    new_def jsonb := jsonb_build_object('overlap', NEW.overlap, 'start_at', NEW.start_at, 'end_at', NEW.end_at,
                                        'max_fires', NEW.max_fires, 'catchup_window', NEW.catchup_window);
    before jsonb;
    after jsonb;
BEGIN
    SELECT jsonb_object_agg(k, old_def -> k), jsonb_object_agg(k, new_def -> k) INTO before, after
    FROM jsonb_object_keys(new_def) AS k WHERE old_def -> k IS DISTINCT FROM new_def -> k;
    PERFORM awa.audit_insert(
        CASE WHEN current_setting('awa.action', true) = 'sync_definition' THEN 'sync_definition' ELSE 'redefine' END,
        NEW.name, before, after, awa.audit_context_detail());
    RETURN NULL;
END;
$$;
