CREATE OR REPLACE FUNCTION awa.record_event(action text, target text, before jsonb, after jsonb, detail jsonb)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    -- Runs as the owner, past row-level security: a team's role (v032) is checked here.
    -- The login's scope (session_user): a SET ROLE to an unscoped role widens nothing.
    scope text[] := awa.owner_scope_of(session_user);
BEGIN
    IF action NOT IN ('trigger', 'queue_drain', 'retire_owner', 'restore_owner',
                      'job_retry', 'job_cancel', 'jobs_prune', 'backfill', 'alert_test') THEN
        RAISE EXCEPTION 'awa.record_event: % is not an event (state changes are audited by the database)', action
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF coalesce(current_setting('awa.action', true), '') <> action THEN
        RAISE EXCEPTION 'awa.record_event: call awa.begin_action(operator, %, ...) first', action
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF scope IS NOT NULL AND NOT awa.target_in_scope(target, scope) THEN
        RAISE EXCEPTION 'your role may act only on the schedules of %, not on %',
            array_to_string(scope, ', '), awa.escaped(target)
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN awa.audit_insert(action, target, before, after, detail);
END;
$$;
