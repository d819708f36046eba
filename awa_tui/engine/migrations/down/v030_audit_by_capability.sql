-- Undoes v030_audit_by_capability.sql: owners_audit as v006 wrote it (the engine's labels
-- skip the audit) and record_event's events as v009 listed them (no alert_test).
CREATE OR REPLACE FUNCTION awa.owners_audit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF coalesce(current_setting('awa.operator', true), '') <> ''
       OR coalesce(current_setting('awa.manager', true), '') <> ''
       OR coalesce(current_setting('awa.label', true), '') <> '' THEN
        RETURN NULL;  -- written by the engine under its context
    END IF;
    PERFORM awa.audit_insert(
        CASE TG_OP WHEN 'INSERT' THEN 'owner_create' WHEN 'DELETE' THEN 'owner_delete' ELSE 'owner_edit' END,
        'owner:' || CASE WHEN TG_OP = 'DELETE' THEN OLD.owner ELSE NEW.owner END,
        CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE to_jsonb(OLD) - 'created_at' - 'updated_at' END,
        CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE to_jsonb(NEW) - 'created_at' - 'updated_at' END,
        awa.audit_context_detail());
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION awa.record_event(action text, target text, before jsonb, after jsonb, detail jsonb)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF action NOT IN ('trigger', 'queue_drain', 'retire_owner', 'restore_owner',
                      'job_retry', 'job_cancel', 'jobs_prune', 'backfill') THEN
        RAISE EXCEPTION 'awa.record_event: % is not an event (state changes are audited by the database)', action
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF coalesce(current_setting('awa.action', true), '') <> action THEN
        RAISE EXCEPTION 'awa.record_event: call awa.begin_action(operator, %, ...) first', action
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN awa.audit_insert(action, target, before, after, detail);
END;
$$;
