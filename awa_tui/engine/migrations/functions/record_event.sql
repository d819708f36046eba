CREATE OR REPLACE FUNCTION awa.record_event(action text, target text, before jsonb, after jsonb, detail jsonb)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    -- Runs as the owner, past row-level security: a team's role (v032) is checked here.
    -- The login's scope (session_user) narrowed by the role it took with SET ROLE (the
    -- `role` setting, which this function does not change): a superuser's SET ROLE into a
    -- team's role is that team's, a SET ROLE to a wider role widens nothing. The same as
    -- awa.caller_scope() (v035), written out so that this body works from v032 on.
    login text[] := awa.owner_scope_of(session_user);
    taken text[] := CASE WHEN current_setting('role') = 'none' THEN NULL
                         ELSE awa.owner_scope_of(current_setting('role')::name) END;
    scope text[] := CASE WHEN login IS NULL THEN taken WHEN taken IS NULL THEN login
                         ELSE ARRAY(SELECT unnest(login) INTERSECT SELECT unnest(taken) ORDER BY 1) END;
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
