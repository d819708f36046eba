-- Undoes v035_audited_job_writes.sql (`awa-tui migrate --down-to 34` or lower): the roles
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

-- The fence and its trigger as v021 and v010 left them.
CREATE OR REPLACE FUNCTION awa.cron_jobs_fence() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    operator_ctx text := awa.fence_capability('operator');
    manager_ctx  text := awa.fence_capability('manager');
    redefined boolean :=
        (NEW.cron_expr, NEW.timezone, NEW.kind, NEW.queue, NEW.args, NEW.priority,
         NEW.max_attempts, NEW.tags, NEW.metadata, NEW.missed_fire_policy,
         NEW.max_lateness, NEW.expect_success_within, NEW.max_consecutive_failures,
         NEW.pause_after_failures, NEW.cron_written, NEW.jitter_ms, NEW.overridden)
        IS DISTINCT FROM
        (OLD.cron_expr, OLD.timezone, OLD.kind, OLD.queue, OLD.args, OLD.priority,
         OLD.max_attempts, OLD.tags, OLD.metadata, OLD.missed_fire_policy,
         OLD.max_lateness, OLD.expect_success_within, OLD.max_consecutive_failures,
         OLD.pause_after_failures, OLD.cron_written, OLD.jitter_ms, OLD.overridden);
    lifecycle boolean :=
        NEW.retired_at IS DISTINCT FROM OLD.retired_at
        OR NEW.retired_by IS DISTINCT FROM OLD.retired_by
        OR NEW.owner IS DISTINCT FROM OLD.owner;
BEGIN
    IF lifecycle THEN
        IF operator_ctx <> '' THEN
            IF redefined THEN
                RAISE EXCEPTION 'schedule %: a lifecycle change must not redefine it', OLD.name;
            END IF;
            RETURN NEW;  -- adopt, transfer, retire, restore (audited by the engine)
        END IF;
        IF manager_ctx <> '' AND manager_ctx = OLD.owner AND NEW.owner = OLD.owner
           AND OLD.retired_at IS NULL AND NEW.retired_at IS NOT NULL AND NOT redefined THEN
            RETURN NEW;  -- automatic retirement by the owner's reconciliation (S26)
        END IF;
        IF OLD.retired_at IS NOT NULL THEN
            RETURN NULL;  -- reviving a tombstone without the operator's capability: no-op
        END IF;
        RAISE EXCEPTION 'schedule %: changing owner or retirement requires an operator action (use awa-tui)',
            OLD.name USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF OLD.retired_at IS NOT NULL THEN
        IF operator_ctx <> '' AND NOT redefined
           AND NEW.last_enqueued_at IS NOT DISTINCT FROM OLD.last_enqueued_at
           AND NEW.next_fire_at IS NOT DISTINCT FROM OLD.next_fire_at THEN
            RETURN NEW;
        END IF;
        RETURN NULL;
    END IF;
    IF redefined AND OLD.owner IS NOT NULL AND operator_ctx <> ''
       AND current_setting('awa.action', true) IN ('override', 'override_reset') THEN
        RETURN NEW;  -- an operator's override of an owned row (or its reset)
    END IF;
    IF redefined AND OLD.owner IS NOT NULL AND manager_ctx IS DISTINCT FROM OLD.owner THEN
        RETURN NULL;  -- S5: an additive or older UPSERT of an owned row is a quiet no-op
    END IF;
    RETURN NEW;
END;
$$;

DROP TRIGGER cron_jobs_fence ON awa.cron_jobs;
CREATE TRIGGER cron_jobs_fence
    BEFORE UPDATE ON awa.cron_jobs
    FOR EACH ROW
    WHEN (
        OLD.retired_at IS NOT NULL
        OR NEW.retired_at IS NOT NULL
        OR NEW.retired_by IS DISTINCT FROM OLD.retired_by
        OR NEW.owner IS DISTINCT FROM OLD.owner
        OR (OLD.owner IS NOT NULL
            AND (NEW.cron_expr, NEW.timezone, NEW.kind, NEW.queue, NEW.args, NEW.priority,
                 NEW.max_attempts, NEW.tags, NEW.metadata, NEW.missed_fire_policy,
                 NEW.max_lateness, NEW.expect_success_within, NEW.max_consecutive_failures,
                 NEW.pause_after_failures, NEW.cron_written, NEW.jitter_ms, NEW.overridden)
                IS DISTINCT FROM
                (OLD.cron_expr, OLD.timezone, OLD.kind, OLD.queue, OLD.args, OLD.priority,
                 OLD.max_attempts, OLD.tags, OLD.metadata, OLD.missed_fire_policy,
                 OLD.max_lateness, OLD.expect_success_within, OLD.max_consecutive_failures,
                 OLD.pause_after_failures, OLD.cron_written, OLD.jitter_ms, OLD.overridden))
    )
    EXECUTE FUNCTION awa.cron_jobs_fence();

DROP FUNCTION awa.action_label(text);
DROP FUNCTION awa.check_target(text);
DROP FUNCTION awa.caller_scope();
