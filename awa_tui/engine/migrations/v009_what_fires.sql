-- v009: what fires: overlap policy, bounds (start_at, end_at, max_fires), backfill.
--
-- Overlap and bounds are definition columns (declared by `periodic(...)`, written by
-- sync). The fire statement (engine/firing/evaluator.py FIRE_BATCH_SQL) decides the overlap of
-- each due instant while it holds the schedule's row lock, counts the scheduled fires in
-- `fires_count`, and stamps `finished_at` when the schedule is past its end or its count.

ALTER TABLE awa.cron_jobs
    ADD COLUMN overlap     text NOT NULL DEFAULT 'allow',
    ADD COLUMN start_at    timestamptz,
    ADD COLUMN end_at      timestamptz,
    ADD COLUMN max_fires   integer,
    -- Scheduled fires enqueued so far (manual triggers and backfills are not counted).
    ADD COLUMN fires_count bigint NOT NULL DEFAULT 0,
    -- Past end_at or max_fires: nothing more fires. Read by the health checks.
    ADD COLUMN finished_at timestamptz;

-- Hand-written values registration would refuse, refused with the same words. A trigger,
-- not CHECK constraints (see v004): a CHECK is evaluated on every UPDATE, the fire's too;
-- these WHEN clauses see only inserts and edits of the four columns.
CREATE FUNCTION awa.cron_jobs_what_fires_guard() RETURNS trigger
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

-- A finished schedule is no longer due: the due probes leave it out (S10 stays one probe).
DROP INDEX awa.cron_jobs_due_idx;
DROP INDEX awa.cron_jobs_unplanned_idx;
CREATE INDEX cron_jobs_due_idx ON awa.cron_jobs (next_fire_at)
    WHERE paused_at IS NULL AND retired_at IS NULL AND finished_at IS NULL;
CREATE INDEX cron_jobs_unplanned_idx ON awa.cron_jobs (name)
    WHERE next_fire_at IS NULL AND paused_at IS NULL AND retired_at IS NULL AND finished_at IS NULL;

-- Changed bounds reopen the question: not finished any more, hint recomputed next pass.
CREATE FUNCTION awa.cron_jobs_bounds_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.finished_at := NULL;
    NEW.next_fire_at := NULL;
    RETURN NEW;
END;
$$;
CREATE TRIGGER cron_jobs_bounds_changed
    BEFORE UPDATE OF start_at, end_at, max_fires ON awa.cron_jobs
    FOR EACH ROW
    WHEN ((OLD.start_at, OLD.end_at, OLD.max_fires) IS DISTINCT FROM (NEW.start_at, NEW.end_at, NEW.max_fires))
    EXECUTE FUNCTION awa.cron_jobs_bounds_changed();

-- A change of these definition columns is audited like any redefinition (v006 audits the
-- others): the columns that changed, before and after, under the declared sync label.
CREATE FUNCTION awa.cron_jobs_audit_what_fires() RETURNS trigger
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
CREATE TRIGGER cron_jobs_audit_what_fires
    AFTER UPDATE OF overlap, start_at, end_at, max_fires ON awa.cron_jobs
    FOR EACH ROW
    WHEN ((OLD.overlap, OLD.start_at, OLD.end_at, OLD.max_fires)
          IS DISTINCT FROM (NEW.overlap, NEW.start_at, NEW.end_at, NEW.max_fires))
    EXECUTE FUNCTION awa.cron_jobs_audit_what_fires();

-- An instant as definitions carry it in JSON (Schedule.definition): UTC, microseconds,
-- in any session time zone, so stored and declared bounds compare as text.
CREATE FUNCTION awa.instant_text(t timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"') $$;

-- The overlap check: a schedule's waiting and running jobs, a few rows per schedule
-- (finished jobs are not in it), probed once per guarded schedule per fire statement.
CREATE INDEX jobs_cron_active_idx ON awa.jobs ((metadata ->> 'cron_name'), state)
    WHERE state IN ('available', 'running', 'retryable') AND metadata ? 'cron_name';

-- Instants the fire statement decided not to enqueue because of the overlap policy. No
-- job records them, and the jobs that overlapped finish and are pruned: without this row
-- the ledger could not tell `skipped_overlap` from `no_leader` or `pending` afterwards.
CREATE TABLE awa.fire_skips (
    cron_name  text NOT NULL,
    fire_time  timestamptz NOT NULL,
    reason     text NOT NULL DEFAULT 'overlap',
    skipped_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cron_name, fire_time)
);
CREATE INDEX fire_skips_at_idx ON awa.fire_skips (skipped_at);

-- Backfill is an operator event (its jobs change no audited row).
CREATE OR REPLACE FUNCTION awa.record_event(action text, target text, before jsonb, after jsonb, detail jsonb)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF action NOT IN ('trigger', 'queue_drain', 'retire_owner', 'restore_owner',
                      'job_retry', 'job_cancel', 'jobs_prune', 'backfill') THEN
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
REVOKE EXECUTE ON FUNCTION awa.record_event(text, text, jsonb, jsonb, jsonb) FROM PUBLIC;
