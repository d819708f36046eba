-- Undoes v025_pause_until_catchup.sql (`awa-tui migrate --down-to 24` or lower): no pause
-- ends or reasons, no catch-up windows. A schedule paused until a time stays paused (its end
-- is dropped with the column: resume it by hand); a schedule with a catch-up window fires as
-- before it. The 'too_old' records of awa.fire_skips go (a release before v025 would read
-- them as skipped_overlap).
DELETE FROM awa.fire_skips WHERE reason = 'too_old';

-- The release before this one leads again.
UPDATE awa.release_policy SET min_leader_protocol = least(min_leader_protocol, 2), updated_at = now()
WHERE singleton;

DROP FUNCTION awa.end_pauses(timestamptz, integer, text);

DROP TRIGGER cron_jobs_pause_window ON awa.cron_jobs;
DROP FUNCTION awa.cron_jobs_pause_window();

-- The steady sync's note as v018 made it.
DROP TRIGGER cron_jobs_note_update ON awa.cron_jobs;
CREATE TRIGGER cron_jobs_note_update
    AFTER UPDATE OF name, cron_expr, timezone, kind, queue, args, priority, max_attempts, tags, metadata,
                    missed_fire_policy, max_lateness, expect_success_within, max_consecutive_failures,
                    pause_after_failures, overlap, start_at, end_at, max_fires, cron_written, jitter_ms,
                    exclude_dates, exclude_calendars, overridden, owner, retired_at
    ON awa.cron_jobs
    FOR EACH ROW
    WHEN ((OLD.name, OLD.cron_expr, OLD.timezone, OLD.kind, OLD.queue, OLD.args, OLD.priority, OLD.max_attempts,
           OLD.tags, OLD.metadata, OLD.missed_fire_policy, OLD.max_lateness, OLD.expect_success_within,
           OLD.max_consecutive_failures, OLD.pause_after_failures, OLD.overlap, OLD.start_at, OLD.end_at,
           OLD.max_fires, OLD.cron_written, OLD.jitter_ms, OLD.exclude_dates, OLD.exclude_calendars,
           OLD.overridden, OLD.owner, OLD.retired_at)
          IS DISTINCT FROM
          (NEW.name, NEW.cron_expr, NEW.timezone, NEW.kind, NEW.queue, NEW.args, NEW.priority, NEW.max_attempts,
           NEW.tags, NEW.metadata, NEW.missed_fire_policy, NEW.max_lateness, NEW.expect_success_within,
           NEW.max_consecutive_failures, NEW.pause_after_failures, NEW.overlap, NEW.start_at, NEW.end_at,
           NEW.max_fires, NEW.cron_written, NEW.jitter_ms, NEW.exclude_dates, NEW.exclude_calendars,
           NEW.overridden, NEW.owner, NEW.retired_at))
    EXECUTE FUNCTION awa.cron_jobs_note_update();

-- The schedule audit trigger as v010 made it.
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

-- The what-fires audit and guard as v009 made them.
CREATE OR REPLACE FUNCTION awa.cron_jobs_audit_what_fires() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    old_def jsonb := jsonb_build_object('overlap', OLD.overlap, 'start_at', OLD.start_at, 'end_at', OLD.end_at,
                                        'max_fires', OLD.max_fires);
    new_def jsonb := jsonb_build_object('overlap', NEW.overlap, 'start_at', NEW.start_at, 'end_at', NEW.end_at,
                                        'max_fires', NEW.max_fires);
    before jsonb;
    after jsonb;
BEGIN
    SELECT jsonb_object_agg(k, old_def -> k), jsonb_object_agg(k, new_def -> k) INTO before, after
    FROM jsonb_object_keys(new_def) AS k WHERE old_def -> k IS DISTINCT FROM new_def -> k;
    PERFORM awa.audit_insert(
        CASE WHEN current_setting('awa.action', true) = 'sync_definition' THEN 'sync_definition' ELSE 'redefine' END,
        NEW.name, before, after, awa.audit_context_detail());
    RETURN NULL;
END;
$$;
DROP TRIGGER cron_jobs_audit_what_fires ON awa.cron_jobs;
CREATE TRIGGER cron_jobs_audit_what_fires
    AFTER UPDATE OF overlap, start_at, end_at, max_fires ON awa.cron_jobs
    FOR EACH ROW
    WHEN ((OLD.overlap, OLD.start_at, OLD.end_at, OLD.max_fires)
          IS DISTINCT FROM (NEW.overlap, NEW.start_at, NEW.end_at, NEW.max_fires))
    EXECUTE FUNCTION awa.cron_jobs_audit_what_fires();
CREATE OR REPLACE FUNCTION awa.cron_jobs_what_fires_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.overlap NOT IN ('allow', 'skip', 'buffer_one') THEN
        RAISE EXCEPTION 'overlap: must be ''allow'', ''skip'' or ''buffer_one'', got %', awa.escaped(NEW.overlap)
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.max_fires < 1 THEN
        RAISE EXCEPTION 'max_fires: must be an integer 1..2147483647, got %', NEW.max_fires
            USING ERRCODE = 'check_violation';
    END IF;
    IF NOT (awa.ts_loadable(NEW.start_at) AND awa.ts_loadable(NEW.end_at)) THEN
        RAISE EXCEPTION 'start_at/end_at: outside the supported range 0001-01-03..9999-12-29 UTC, got % .. %',
            NEW.start_at, NEW.end_at USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.start_at > NEW.end_at THEN
        RAISE EXCEPTION 'start_at: % is after end_at %', NEW.start_at, NEW.end_at
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$;
DROP TRIGGER cron_jobs_what_fires_guard_insert ON awa.cron_jobs;
DROP TRIGGER cron_jobs_what_fires_guard_update ON awa.cron_jobs;
CREATE TRIGGER cron_jobs_what_fires_guard_insert
    BEFORE INSERT ON awa.cron_jobs
    FOR EACH ROW
    WHEN (NEW.overlap <> 'allow' OR NEW.start_at IS NOT NULL OR NEW.end_at IS NOT NULL OR NEW.max_fires IS NOT NULL)
    EXECUTE FUNCTION awa.cron_jobs_what_fires_guard();
CREATE TRIGGER cron_jobs_what_fires_guard_update
    BEFORE UPDATE OF overlap, start_at, end_at, max_fires ON awa.cron_jobs
    FOR EACH ROW
    WHEN ((OLD.overlap, OLD.start_at, OLD.end_at, OLD.max_fires)
          IS DISTINCT FROM (NEW.overlap, NEW.start_at, NEW.end_at, NEW.max_fires))
    EXECUTE FUNCTION awa.cron_jobs_what_fires_guard();

DROP INDEX awa.cron_jobs_pause_ends_idx;
ALTER TABLE awa.cron_jobs
    DROP COLUMN paused_until,
    DROP COLUMN pause_reason,
    DROP COLUMN catchup_window;
