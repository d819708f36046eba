-- v010: spreading schedules (H, jitter) and operator overrides (issue 16).
--
-- cron_expr keeps the expression every reader fires from: with H it is stored resolved
-- for the row's name, and cron_written keeps the text as written (NULL: no H). jitter_ms
-- delays each fire's job by a value in [0, jitter_ms) (engine/cron/spread.py).
--
-- An operator override writes the effective values into the main columns (so the fire
-- path, which reads and compares them, is unchanged) and keeps the code's values of the
-- columns it replaced in `overridden`; sync and reconciliation write the code's side
-- there while the override lasts, and `cron reset` moves it back.

ALTER TABLE awa.cron_jobs
    ADD COLUMN cron_written text,
    ADD COLUMN jitter_ms bigint NOT NULL DEFAULT 0
        CONSTRAINT cron_jobs_jitter_ms_range CHECK (jitter_ms >= 0 AND jitter_ms <= 31622400000),
    ADD COLUMN overridden jsonb
        CONSTRAINT cron_jobs_overridden_object CHECK (overridden IS NULL OR jsonb_typeof(overridden) = 'object');

-- The schedule audit trigger of v006, with the new definition columns, and the names our
-- code gives an override and its reset (a definition change like any other).
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
    ELSIF OLD.paused_at IS DISTINCT FROM NEW.paused_at OR OLD.paused_by IS DISTINCT FROM NEW.paused_by THEN
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
            'paused_at', OLD.paused_at, 'paused_by', OLD.paused_by, 'last_enqueued_at', OLD.last_enqueued_at);
        after := jsonb_build_object(
            'owner', NEW.owner, 'retired_at', NEW.retired_at, 'retired_by', NEW.retired_by,
            'paused_at', NEW.paused_at, 'paused_by', NEW.paused_by, 'last_enqueued_at', NEW.last_enqueued_at);
        IF changed <> '{}'::jsonb THEN
            SELECT before || jsonb_object_agg(k, def_old -> k), after || jsonb_object_agg(k, def_new -> k)
              INTO before, after FROM jsonb_object_keys(changed) AS k;
        END IF;
    END IF;
    PERFORM awa.audit_insert(action, NEW.name, before, after, detail);
    RETURN NULL;
END;
$$;

DROP TRIGGER cron_jobs_audit ON awa.cron_jobs;
CREATE TRIGGER cron_jobs_audit
    AFTER UPDATE OF paused_at, paused_by, retired_at, retired_by, owner,
                    cron_expr, timezone, kind, queue, args, priority, max_attempts, tags, metadata,
                    missed_fire_policy, max_lateness, expect_success_within, max_consecutive_failures,
                    pause_after_failures, cron_written, jitter_ms, overridden
    ON awa.cron_jobs
    FOR EACH ROW
    WHEN (
        (OLD.paused_at, OLD.paused_by, OLD.retired_at, OLD.retired_by, OLD.owner)
            IS DISTINCT FROM (NEW.paused_at, NEW.paused_by, NEW.retired_at, NEW.retired_by, NEW.owner)
        OR (OLD.cron_expr, OLD.timezone, OLD.kind, OLD.queue, OLD.args, OLD.priority, OLD.max_attempts,
            OLD.tags, OLD.metadata, OLD.missed_fire_policy, OLD.max_lateness, OLD.expect_success_within, OLD.max_consecutive_failures, OLD.pause_after_failures, OLD.cron_written, OLD.jitter_ms, OLD.overridden)
            IS DISTINCT FROM
           (NEW.cron_expr, NEW.timezone, NEW.kind, NEW.queue, NEW.args, NEW.priority, NEW.max_attempts,
            NEW.tags, NEW.metadata, NEW.missed_fire_policy, NEW.max_lateness, NEW.expect_success_within, NEW.max_consecutive_failures, NEW.pause_after_failures, NEW.cron_written, NEW.jitter_ms, NEW.overridden)
    )
    EXECUTE FUNCTION awa.cron_jobs_audit();

-- The update fence of v002, with the new definition columns, and one more way through:
-- an operator's override of an owned row, or its reset (declared by begin_action). Code
-- still reaches an owned row through its owner's reconciliation only.
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

