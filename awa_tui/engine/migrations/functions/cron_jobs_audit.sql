CREATE OR REPLACE FUNCTION awa.cron_jobs_audit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    declared text := nullif(current_setting('awa.action', true), '');
    kinds text[] := '{}';
    action text;
    before jsonb;
    after jsonb;
    detail jsonb := awa.audit_context_detail();
    def_old jsonb;
    def_new jsonb;
    changed jsonb := '{}'::jsonb;
    col text;
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM awa.audit_insert('remove', OLD.name, to_jsonb(OLD), NULL, detail);
        RETURN NULL;
    END IF;
    IF OLD.paused_at IS NULL AND NEW.paused_at IS NOT NULL THEN
        kinds := kinds || 'pause'::text;
    ELSIF OLD.paused_at IS NOT NULL AND NEW.paused_at IS NULL THEN
        kinds := kinds || 'resume'::text;
    ELSIF OLD.paused_at IS DISTINCT FROM NEW.paused_at OR OLD.paused_by IS DISTINCT FROM NEW.paused_by
          OR OLD.paused_until IS DISTINCT FROM NEW.paused_until OR OLD.pause_reason IS DISTINCT FROM NEW.pause_reason THEN
        kinds := kinds || 'pause_edit'::text;
    END IF;
    IF OLD.retired_at IS NULL AND NEW.retired_at IS NOT NULL THEN
        kinds := kinds || 'retire'::text;
    ELSIF OLD.retired_at IS NOT NULL AND NEW.retired_at IS NULL THEN
        kinds := kinds || 'restore'::text;
    ELSIF OLD.retired_at IS DISTINCT FROM NEW.retired_at OR OLD.retired_by IS DISTINCT FROM NEW.retired_by THEN
        kinds := kinds || 'retire_edit'::text;
    END IF;
    IF OLD.owner IS NULL AND NEW.owner IS NOT NULL THEN
        kinds := kinds || 'adopt'::text;
        detail := detail || jsonb_build_object('owner', NEW.owner);
    ELSIF OLD.owner IS NOT NULL AND NEW.owner IS NULL THEN
        kinds := kinds || 'disown'::text;
        detail := detail || jsonb_build_object('from_owner', OLD.owner);
    ELSIF OLD.owner IS DISTINCT FROM NEW.owner THEN
        kinds := kinds || 'transfer'::text;
        detail := detail || jsonb_build_object('from_owner', OLD.owner, 'to_owner', NEW.owner);
    END IF;
    def_old := jsonb_build_object(
        'cron_expr', OLD.cron_expr, 'timezone', OLD.timezone, 'kind', OLD.kind, 'queue', OLD.queue,
        'args', OLD.args, 'priority', OLD.priority, 'max_attempts', OLD.max_attempts,
        'tags', to_jsonb(OLD.tags), 'metadata', OLD.metadata, 'missed_fire_policy', OLD.missed_fire_policy,
        'max_lateness', OLD.max_lateness, 'expect_success_within', OLD.expect_success_within,
        'max_consecutive_failures', OLD.max_consecutive_failures,
        'pause_after_failures', OLD.pause_after_failures,
        'cron_written', OLD.cron_written, 'jitter_ms', OLD.jitter_ms, 'overridden', OLD.overridden);
    def_new := jsonb_build_object(
        'cron_expr', NEW.cron_expr, 'timezone', NEW.timezone, 'kind', NEW.kind, 'queue', NEW.queue,
        'args', NEW.args, 'priority', NEW.priority, 'max_attempts', NEW.max_attempts,
        'tags', to_jsonb(NEW.tags), 'metadata', NEW.metadata, 'missed_fire_policy', NEW.missed_fire_policy,
        'max_lateness', NEW.max_lateness, 'expect_success_within', NEW.expect_success_within,
        'max_consecutive_failures', NEW.max_consecutive_failures,
        'pause_after_failures', NEW.pause_after_failures,
        'cron_written', NEW.cron_written, 'jitter_ms', NEW.jitter_ms, 'overridden', NEW.overridden);
    FOR col IN SELECT jsonb_object_keys(def_new) LOOP
        IF def_old -> col IS DISTINCT FROM def_new -> col THEN
            changed := changed || jsonb_build_object(col, true);
        END IF;
    END LOOP;
    IF changed <> '{}'::jsonb THEN
        kinds := kinds || 'redefine'::text;
    END IF;
    IF cardinality(kinds) = 0 THEN
        RETURN NULL;  -- the WHEN clause let through a no-op (e.g. paused_by rewritten as is)
    END IF;
    -- Our code names what it did; a declared name is kept only when it describes this
    -- very change, so a hand-set GUC can pick a synonym but never disguise the change.
    action := array_to_string(kinds, '+');
    IF declared IS NOT NULL AND cardinality(kinds) = 1 AND (
        declared = kinds[1]
        OR (kinds[1] = 'retire' AND declared IN ('retire_owner', 'auto_retire'))
        OR (kinds[1] = 'restore' AND declared = 'restore_owner')
        OR (kinds[1] = 'redefine' AND declared IN ('sync_definition', 'override', 'override_reset'))) THEN
        action := declared;
    END IF;
    IF kinds = ARRAY['redefine'] THEN
        -- A definition change: just the columns that changed, like the plan shows them.
        SELECT jsonb_object_agg(k, def_old -> k), jsonb_object_agg(k, def_new -> k)
          INTO before, after FROM jsonb_object_keys(changed) AS k;
    ELSE
        before := jsonb_build_object(
            'owner', OLD.owner, 'retired_at', OLD.retired_at, 'retired_by', OLD.retired_by,
            'paused_at', OLD.paused_at, 'paused_by', OLD.paused_by, 'last_enqueued_at', OLD.last_enqueued_at,
            'paused_until', OLD.paused_until, 'pause_reason', OLD.pause_reason);
        after := jsonb_build_object(
            'owner', NEW.owner, 'retired_at', NEW.retired_at, 'retired_by', NEW.retired_by,
            'paused_at', NEW.paused_at, 'paused_by', NEW.paused_by, 'last_enqueued_at', NEW.last_enqueued_at,
            'paused_until', NEW.paused_until, 'pause_reason', NEW.pause_reason);
        IF changed <> '{}'::jsonb THEN
            SELECT before || jsonb_object_agg(k, def_old -> k), after || jsonb_object_agg(k, def_new -> k)
              INTO before, after FROM jsonb_object_keys(changed) AS k;
        END IF;
    END IF;
    PERFORM awa.audit_insert(action, NEW.name, before, after, detail);
    RETURN NULL;
END;
$$;
