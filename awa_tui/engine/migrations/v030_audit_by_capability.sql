-- v030: the audit trail of owner rows keyed on what the session is, not on labels.
--
-- awa.owners_audit (v006) left a change of an owner's certificate or agreement clock
-- unaudited when the session had set `awa.operator`, `awa.manager` or `awa.label`:
-- settings any session may set, so a hand edit that hurries a retirement could go
-- unrecorded. It now skips only the engine's own writes: under the operator's capability
-- (awa.begin_action) or the reconciliation capability of that very owner
-- (awa.begin_reconcile), both granted by this schema's SECURITY DEFINER code for one
-- transaction (v021). Every other change is audited, labels or not.
CREATE OR REPLACE FUNCTION awa.owners_audit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    row_owner text := CASE WHEN TG_OP = 'DELETE' THEN OLD.owner ELSE NEW.owner END;
BEGIN
    IF awa.fence_capability('operator') <> '' OR awa.fence_capability('manager') = row_owner THEN
        RETURN NULL;  -- written by the engine under a capability of this transaction
    END IF;
    PERFORM awa.audit_insert(
        CASE TG_OP WHEN 'INSERT' THEN 'owner_create' WHEN 'DELETE' THEN 'owner_delete' ELSE 'owner_edit' END,
        'owner:' || row_owner,
        CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE to_jsonb(OLD) - 'created_at' - 'updated_at' END,
        CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE to_jsonb(NEW) - 'created_at' - 'updated_at' END,
        awa.audit_context_detail());
    RETURN NULL;
END;
$$;

-- `awa-tui alerts test SINK` pages a sink and changes no row: an event of its own in the
-- audit trail (who tested which sink, and what the sink answered).
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
