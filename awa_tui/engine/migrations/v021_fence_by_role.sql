-- v021: privilege from what a session is, never from a setting it can make.
--
-- The update fence of awa.cron_jobs (v002, v010) let a change of owner or retirement
-- through when the session had set `awa.operator` or `awa.manager`: settings any session
-- may set. It now asks for a capability only this schema's SECURITY DEFINER code writes,
-- for the length of one transaction: awa.begin_action (the audit gate, EXECUTE granted to
-- the operator role) grants the operator's, awa.begin_reconcile (granted to the runtime
-- role) an owner's reconciliation. The settings stay, as labels for the audit trail only.

-- One row per (session, transaction, kind). Nobody but the owner writes it; a row of a
-- finished transaction matches nothing (xid8 never repeats) and is cleared by the next
-- grant of the same backend.
CREATE TABLE awa.fence_grants (
    backend_pid integer NOT NULL,
    xact        xid8    NOT NULL,
    kind        text    NOT NULL CONSTRAINT fence_grants_kind CHECK (kind IN ('operator', 'manager')),
    value       text    NOT NULL,
    PRIMARY KEY (backend_pid, xact, kind)
);
REVOKE ALL ON awa.fence_grants FROM PUBLIC;

CREATE FUNCTION awa.fence_grant(capability text, holder text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM awa.fence_grants g WHERE g.backend_pid = pg_backend_pid() AND g.xact <> pg_current_xact_id();
    INSERT INTO awa.fence_grants (backend_pid, xact, kind, value)
    VALUES (pg_backend_pid(), pg_current_xact_id(), capability, holder)
    ON CONFLICT (backend_pid, xact, kind) DO UPDATE SET value = EXCLUDED.value;
END;
$$;

-- The capability of this transaction of this session, '' when none.
CREATE FUNCTION awa.fence_capability(wanted text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce((SELECT g.value FROM awa.fence_grants g
                     WHERE g.backend_pid = pg_backend_pid() AND g.xact = pg_current_xact_id_if_assigned()
                       AND g.kind = wanted), '')
$$;

-- The audit gate, as before, and now the operator's capability. SECURITY DEFINER so it
-- can write the grant; who may call it is its EXECUTE privilege (the operator role).
CREATE OR REPLACE FUNCTION awa.begin_action(label text, action text, detail jsonb DEFAULT '{}'::jsonb)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF coalesce(label, '') = '' OR coalesce(action, '') = '' THEN
        RAISE EXCEPTION 'awa.begin_action: an operator label and an action are required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM set_config('awa.operator', label, true);
    PERFORM set_config('awa.action', action, true);
    PERFORM set_config('awa.detail', coalesce(detail, '{}'::jsonb)::text, true);
    PERFORM awa.fence_grant('operator', label);
END;
$$;

-- An owner's reconciliation (S25, S26): it may redefine and retire that owner's rows in
-- this transaction. Granted to the runtime role.
CREATE FUNCTION awa.begin_reconcile(owner text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF coalesce(owner, '') = '' THEN
        RAISE EXCEPTION 'awa.begin_reconcile: an owner is required' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM set_config('awa.manager', owner, true);
    PERFORM awa.fence_grant('manager', owner);
END;
$$;

-- The fence of v010, keyed on the capabilities instead of the settings.
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

-- Every SECURITY DEFINER function is granted explicitly (`awa-tui db grants`), none to
-- PUBLIC. Trigger functions need no EXECUTE to fire.
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT p.oid::regprocedure AS f FROM pg_proc p
             WHERE p.pronamespace = 'awa'::regnamespace AND p.prosecdef
    LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', r.f);
    END LOOP;
END $$;

-- A layout applied before this version keeps working without being applied again: its
-- runtime role (the grantee of INSERT on awa.cron_jobs) may reconcile, prune the sync notes
-- and ask whether it may lead (the election's own functions call awa.may_lead as the
-- runtime), and whoever was granted the audit gate keeps it.
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT DISTINCT a.grantee::regrole AS role FROM pg_class c, aclexplode(c.relacl) a
             WHERE c.oid = 'awa.cron_jobs'::regclass AND a.privilege_type = 'INSERT'
               AND a.grantee <> 0 AND a.grantee <> c.relowner
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION awa.begin_reconcile(text), '
                       'awa.prune_cron_jobs_changes(interval), awa.may_lead(uuid) TO %s', r.role);
    END LOOP;
END $$;

-- Blocker reports written before this version carried the blocking session's statement
-- text ("query"), which may hold another role's secret: drop it from every snapshot.
UPDATE awa.runtime_instances
SET recent_passes = (
    SELECT jsonb_agg(CASE WHEN jsonb_typeof(p -> 'blockers') = 'array'
                          THEN jsonb_set(p, '{blockers}', (SELECT coalesce(jsonb_agg(
                                   CASE WHEN jsonb_typeof(b) = 'object' THEN b - 'query' ELSE b END), '[]'::jsonb)
                               FROM jsonb_array_elements(p -> 'blockers') b))
                          ELSE p END)
    FROM jsonb_array_elements(recent_passes) p)
WHERE jsonb_typeof(recent_passes) = 'array' AND recent_passes::text LIKE '%"query"%';
