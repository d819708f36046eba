-- Undoes v021_fence_by_role.sql (`awa-tui migrate --down-to 20` or lower): the fence keyed
-- on the awa.operator and awa.manager settings again (v010's), the audit gate as v006 made
-- it, no capabilities, and EXECUTE on the SECURITY DEFINER functions back to what each had
-- before: PUBLIC's default where v021 took it away. The blocker statement texts v021
-- scrubbed from the runtimes' snapshots stay gone (a release before it reads those
-- snapshots without them).

-- The audit gate as v006 defined it (not SECURITY DEFINER: it writes no grant).
CREATE OR REPLACE FUNCTION awa.begin_action(label text, action text, detail jsonb DEFAULT '{}'::jsonb)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF coalesce(label, '') = '' OR coalesce(action, '') = '' THEN
        RAISE EXCEPTION 'awa.begin_action: an operator label and an action are required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM set_config('awa.operator', label, true);
    PERFORM set_config('awa.action', action, true);
    PERFORM set_config('awa.detail', coalesce(detail, '{}'::jsonb)::text, true);
END;
$$;

-- The fence as v010 defined it, keyed on the settings.
CREATE OR REPLACE FUNCTION awa.cron_jobs_fence() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    operator_ctx text := coalesce(current_setting('awa.operator', true), '');
    manager_ctx  text := coalesce(current_setting('awa.manager', true), '');
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
            RETURN NULL;  -- reviving a tombstone without the operator context: no-op
        END IF;
        RAISE EXCEPTION 'schedule %: changing owner or retirement requires the operator context (use awa-tui)',
            OLD.name USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF OLD.retired_at IS NOT NULL THEN
        -- A tombstone never fires and is never redefined. Only an operator may change
        -- its pause bookkeeping (pause is kept across restore, S28).
        IF operator_ctx <> '' AND NOT redefined
           AND NEW.last_enqueued_at IS NOT DISTINCT FROM OLD.last_enqueued_at
           AND NEW.next_fire_at IS NOT DISTINCT FROM OLD.next_fire_at THEN
            RETURN NEW;
        END IF;
        RETURN NULL;
    END IF;
    IF redefined AND OLD.owner IS NOT NULL AND operator_ctx <> ''
       AND current_setting('awa.action', true) IN ('override', 'override_reset') THEN
        RETURN NEW;  -- issue 16: an operator's override of an owned row (or its reset)
    END IF;
    IF redefined AND OLD.owner IS NOT NULL AND manager_ctx IS DISTINCT FROM OLD.owner THEN
        RETURN NULL;  -- S5: an additive or older UPSERT of an owned row is a quiet no-op
    END IF;
    RETURN NEW;
END;
$$;

-- The runtime role's explicit grants of the sync notes' pruning and of awa.may_lead (v021's,
-- or `db grants` of a release with v021) go; PUBLIC's EXECUTE comes back below, as before.
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT DISTINCT p.oid::regprocedure AS f, a.grantee::regrole AS role
             FROM pg_proc p, aclexplode(p.proacl) a
             WHERE p.oid IN ('awa.prune_cron_jobs_changes(interval)'::regprocedure, 'awa.may_lead(uuid)'::regprocedure)
               AND a.grantee <> 0 AND a.grantee <> p.proowner
    LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM %s', r.f, r.role);
    END LOOP;
END $$;

-- Every function v021 revoked from PUBLIC that had PUBLIC's EXECUTE before it (the ones
-- earlier migrations revoked themselves, begin_action, record_event, audit_insert and the
-- cron_health_* triggers, keep theirs revoked).
GRANT EXECUTE ON FUNCTION awa.calendars_audit() TO PUBLIC;
GRANT EXECUTE ON FUNCTION awa.calendars_bump() TO PUBLIC;
GRANT EXECUTE ON FUNCTION awa.cron_jobs_audit() TO PUBLIC;
GRANT EXECUTE ON FUNCTION awa.cron_jobs_audit_exclusions() TO PUBLIC;
GRANT EXECUTE ON FUNCTION awa.cron_jobs_audit_what_fires() TO PUBLIC;
GRANT EXECUTE ON FUNCTION awa.cron_jobs_fence() TO PUBLIC;
GRANT EXECUTE ON FUNCTION awa.cron_jobs_note_delete() TO PUBLIC;
GRANT EXECUTE ON FUNCTION awa.cron_jobs_note_truncate() TO PUBLIC;
GRANT EXECUTE ON FUNCTION awa.cron_jobs_note_update() TO PUBLIC;
GRANT EXECUTE ON FUNCTION awa.leader_terms_record() TO PUBLIC;
GRANT EXECUTE ON FUNCTION awa.may_lead(uuid) TO PUBLIC;
GRANT EXECUTE ON FUNCTION awa.owners_audit() TO PUBLIC;
GRANT EXECUTE ON FUNCTION awa.prune_cron_jobs_changes(interval) TO PUBLIC;
GRANT EXECUTE ON FUNCTION awa.queue_meta_audit() TO PUBLIC;

DROP FUNCTION awa.begin_reconcile(text);
DROP FUNCTION awa.fence_capability(text);
DROP FUNCTION awa.fence_grant(text, text);
DROP TABLE awa.fence_grants;
