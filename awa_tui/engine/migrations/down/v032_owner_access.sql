-- Undoes v032_owner_access.sql (`awa-tui migrate --down-to 31` or lower): no team roles.
-- A team's role keeps no privilege on the schema (without row-level security it would see
-- every team's rows): everything granted to it is revoked, the role itself stays (a DBA's).
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT DISTINCT g.role FROM awa.owner_grants g JOIN pg_roles m ON m.rolname = g.role LOOP
        EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA awa FROM %I', r.role);
        EXECUTE format('REVOKE ALL ON FUNCTION awa.begin_action(text, text, jsonb), '
                       'awa.record_event(text, text, jsonb, jsonb, jsonb) FROM %I', r.role);
        EXECUTE format('REVOKE USAGE ON SCHEMA awa FROM %I', r.role);
    END LOOP;
    FOR r IN SELECT p.tablename, p.policyname FROM pg_policies p WHERE p.schemaname = 'awa' LOOP
        EXECUTE format('DROP POLICY %I ON awa.%I', r.policyname, r.tablename);
    END LOOP;
    FOR r IN SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'awa'::regnamespace AND c.relrowsecurity LOOP
        EXECUTE format('ALTER TABLE awa.%I DISABLE ROW LEVEL SECURITY', r.relname);
    END LOOP;
END $$;

-- record_event as v030 left it.
CREATE OR REPLACE FUNCTION awa.record_event(action text, target text, before jsonb, after jsonb, detail jsonb)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
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
    RETURN awa.audit_insert(action, target, before, after, detail);
END;
$$;

DROP FUNCTION awa.target_in_scope(text, text[]);
DROP FUNCTION awa.owner_scope();
DROP FUNCTION awa.owner_scope_of(name);
DROP TABLE awa.owner_grants;
