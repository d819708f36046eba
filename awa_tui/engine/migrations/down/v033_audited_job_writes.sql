-- Undoes v033_audited_job_writes.sql (`awa-tui migrate --down-to 32` or lower): the roles
-- that were granted the job functions get back the direct writes on awa.jobs they held
-- before (the operator's INSERT, DELETE and UPDATE of state, run_at, finalized_at, and the
-- prune's INSERT and UPDATE of awa.ledger_pruned, DELETE of awa.fire_skips; a team's INSERT
-- and that UPDATE), the functions go, record_event scopes by the login again.
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT DISTINCT a.grantee::regrole AS role FROM pg_proc p, aclexplode(p.proacl) a
             WHERE p.oid = 'awa.trigger_job(text, jsonb)'::regprocedure AND a.privilege_type = 'EXECUTE'
               AND a.grantee <> 0 AND a.grantee <> p.proowner
    LOOP
        IF EXISTS (SELECT 1 FROM awa.owner_grants g WHERE g.role = r.role::text) THEN
            EXECUTE format('GRANT INSERT, UPDATE (state, finalized_at, run_at) ON awa.jobs TO %s', r.role);
        ELSIF NOT has_function_privilege(r.role::oid, 'awa.begin_reconcile(text)', 'EXECUTE') THEN
            EXECUTE format('GRANT INSERT, DELETE, UPDATE (state, finalized_at, run_at) ON awa.jobs TO %s', r.role);
            EXECUTE format('GRANT INSERT, UPDATE ON awa.ledger_pruned TO %s', r.role);
            EXECUTE format('GRANT DELETE ON awa.fire_skips TO %s', r.role);
        END IF;
    END LOOP;
END $$;

DROP FUNCTION awa.trigger_job(text, jsonb);
DROP FUNCTION awa.backfill_jobs(text, text[], jsonb);
DROP FUNCTION awa.retry_job(bigint);
DROP FUNCTION awa.cancel_job(bigint);
DROP FUNCTION awa.drain_queue(text);
DROP FUNCTION awa.prune_jobs(timestamptz, integer, integer, timestamptz, bigint, jsonb);

-- record_event as v032 left it.
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

DROP FUNCTION awa.action_label(text);
DROP FUNCTION awa.check_target(text);
DROP FUNCTION awa.caller_scope();
