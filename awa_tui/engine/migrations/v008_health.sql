-- v008: expectations, health, pause on failure, metrics kept in the database (S41, S42).
--
-- Expectations are definition columns (declared in code beside the schedule, synced like
-- the rest of the definition). Health is evaluated by the leader on an interval and kept
-- per schedule with since when and why; transitions are appended to their own table.
-- The consecutive-failure count is kept by a trigger on job outcomes (the worker's path,
-- never the fire path), which also pauses a schedule after `pause_after_failures`.

-- Seconds (max_lateness, expect_success_within) and counts; NULL = not declared
-- (max_lateness then means 60 s). A hand-written zero or negative value is refused with
-- the constraint's name, like registration refuses it.
ALTER TABLE awa.cron_jobs
    ADD COLUMN max_lateness             integer CONSTRAINT cron_jobs_max_lateness_positive CHECK (max_lateness > 0),
    ADD COLUMN expect_success_within    integer CONSTRAINT cron_jobs_expect_success_within_positive
                                                CHECK (expect_success_within > 0),
    ADD COLUMN max_consecutive_failures integer CONSTRAINT cron_jobs_max_consecutive_failures_positive
                                                CHECK (max_consecutive_failures > 0),
    ADD COLUMN pause_after_failures     integer CONSTRAINT cron_jobs_pause_after_failures_positive
                                                CHECK (pause_after_failures > 0);

-- Which schema version each runtime runs (the fleet check of `awa-tui check`).
ALTER TABLE awa.runtime_instances ADD COLUMN schema_version integer;

-- One row per schedule: its health at the leader's last evaluation (since when, why), the
-- consecutive-failure count, and the per-schedule values the metrics serve. No foreign
-- key: a KEY SHARE lock on the schedule row would wait behind every fire.
CREATE TABLE awa.cron_health (
    name                 text PRIMARY KEY,
    health               text NOT NULL DEFAULT 'ok',
    since                timestamptz NOT NULL DEFAULT now(),
    reason               text,
    consecutive_failures integer NOT NULL DEFAULT 0,
    last_failure_at      timestamptz,
    last_success_at      timestamptz,
    last_lateness        double precision,  -- seconds: the last fire's job created_at - its instant
    -- The missed rule (expect_success_within) without reading jobs on every pass: the last
    -- scheduled fire instants (newest first, at most 10; kept by the leader from new jobs)
    -- and the newest instant whose job completed within expect_success_within (kept by
    -- the outcome trigger).
    recent_fires         timestamptz[] NOT NULL DEFAULT '{}',
    last_ok_fire         timestamptz,
    evaluated_at         timestamptz
);
-- `awa-tui check` and the console's header read the unhealthy ones only.
CREATE INDEX cron_health_unhealthy_idx ON awa.cron_health (health) WHERE health <> 'ok';

-- Every change of health, appended by the leader: since when, from what, why.
CREATE TABLE awa.health_transitions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL,
    at          timestamptz NOT NULL,
    from_health text,
    to_health   text NOT NULL,
    reason      text
);
CREATE INDEX health_transitions_name_idx ON awa.health_transitions (name, id);
CREATE INDEX health_transitions_at_idx ON awa.health_transitions (at);

-- The leader's last health evaluation, and the fire counters every runtime serves.
CREATE TABLE awa.health_meta (
    singleton     boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    evaluated_at  timestamptz,
    instance_id   uuid,
    pass_seconds  double precision,
    jobs_seen_id  bigint NOT NULL DEFAULT 0  -- fires counted into fire_stats up to this job id
);
INSERT INTO awa.health_meta (jobs_seen_id) SELECT coalesce(max(id), 0) FROM awa.jobs;

-- awa_schedule_fires_total{owner, queue, verdict} and awa_fire_lateness_seconds{queue}:
-- counters kept by the leader, so any runtime serves the same numbers.
CREATE TABLE awa.fire_stats (
    owner   text NOT NULL,  -- '' for schedules without an owner
    queue   text NOT NULL,
    verdict text NOT NULL,  -- on_time | late | manual
    fires   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (owner, queue, verdict)
);
CREATE TABLE awa.fire_lateness (
    queue  text NOT NULL,
    le     double precision NOT NULL,  -- bucket upper bound in seconds ('Infinity' for +Inf)
    fires  bigint NOT NULL DEFAULT 0,  -- fires in this bucket alone (not cumulative)
    total  double precision NOT NULL DEFAULT 0,  -- sum of their lateness, seconds
    PRIMARY KEY (queue, le)
);

-- The consecutive-failure count, per finished job: a failed job (discarded: no attempt
-- left) adds one, a completed job resets it. At `pause_after_failures` the schedule pauses
-- itself as awa-autopause, audited by the cron_jobs trigger with the reason as detail.
CREATE FUNCTION awa.cron_health_outcome() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    sched text := NEW.metadata ->> 'cron_name';
    fails integer;
    bound integer;
    saved_operator text;
    saved_action text;
    saved_detail text;
BEGIN
    IF NEW.state = 'completed' THEN
        INSERT INTO awa.cron_health AS h (name, consecutive_failures, last_success_at, last_ok_fire)
        SELECT c.name, 0, NEW.finalized_at,
               CASE WHEN c.expect_success_within IS NULL
                         OR coalesce(NEW.metadata ->> 'triggered_manually' = 'true', false) THEN NULL
                    WHEN NEW.finalized_at <= awa.try_timestamptz(NEW.metadata ->> 'cron_fire_time')
                                             + make_interval(secs => c.expect_success_within)
                    THEN awa.try_timestamptz(NEW.metadata ->> 'cron_fire_time') END
        FROM awa.cron_jobs c WHERE c.name = sched
        ON CONFLICT (name) DO UPDATE SET consecutive_failures = 0,
            last_success_at = greatest(h.last_success_at, EXCLUDED.last_success_at),
            last_ok_fire = greatest(h.last_ok_fire, EXCLUDED.last_ok_fire);
        RETURN NULL;
    END IF;
    INSERT INTO awa.cron_health AS h (name, consecutive_failures, last_failure_at)
    SELECT c.name, 1, NEW.finalized_at FROM awa.cron_jobs c WHERE c.name = sched
    ON CONFLICT (name) DO UPDATE SET consecutive_failures = h.consecutive_failures + 1,
        last_failure_at = greatest(h.last_failure_at, EXCLUDED.last_failure_at)
    RETURNING consecutive_failures INTO fails;
    SELECT c.pause_after_failures INTO bound FROM awa.cron_jobs c
    WHERE c.name = sched AND c.paused_at IS NULL AND c.retired_at IS NULL;
    IF bound IS NULL OR fails IS NULL OR fails < bound THEN
        RETURN NULL;
    END IF;
    -- Declare the actor for the audit trigger, then give the worker's transaction its own
    -- context back (it may finish more jobs in the same transaction).
    saved_operator := current_setting('awa.operator', true);
    saved_action := current_setting('awa.action', true);
    saved_detail := current_setting('awa.detail', true);
    PERFORM awa.begin_action('awa-autopause', 'pause', jsonb_build_object(
        'reason', format('%s consecutive failed jobs (pause_after_failures %s)', fails, bound),
        'job_id', NEW.id));
    UPDATE awa.cron_jobs SET paused_at = now(), paused_by = 'awa-autopause'
    WHERE name = sched AND paused_at IS NULL AND retired_at IS NULL;
    PERFORM set_config('awa.operator', coalesce(saved_operator, ''), true);
    PERFORM set_config('awa.action', coalesce(saved_action, ''), true);
    PERFORM set_config('awa.detail', coalesce(saved_detail, ''), true);
    RETURN NULL;
END;
$$;

CREATE TRIGGER jobs_cron_health_outcome
    AFTER UPDATE OF state ON awa.jobs
    FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state AND NEW.state IN ('completed', 'discarded')
          AND NEW.metadata ? 'cron_name')
    EXECUTE FUNCTION awa.cron_health_outcome();

-- Resuming a schedule starts its count again.
CREATE FUNCTION awa.cron_health_resume() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE awa.cron_health SET consecutive_failures = 0 WHERE name = NEW.name AND consecutive_failures <> 0;
    RETURN NULL;
END;
$$;

CREATE TRIGGER cron_jobs_health_resume
    AFTER UPDATE OF paused_at ON awa.cron_jobs
    FOR EACH ROW
    WHEN (OLD.paused_at IS NOT NULL AND NEW.paused_at IS NULL)
    EXECUTE FUNCTION awa.cron_health_resume();

-- --- the expectations are definition columns: fenced and audited like the others ------------
-- The fence (v002) and the audit trigger (v006) list the definition columns; both are
-- redefined here with the four expectation columns added, nothing else changed. A later
-- definition column extends the same lists.

CREATE OR REPLACE FUNCTION awa.cron_jobs_fence() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    operator_ctx text := coalesce(current_setting('awa.operator', true), '');
    manager_ctx  text := coalesce(current_setting('awa.manager', true), '');
    redefined boolean :=
        (NEW.cron_expr, NEW.timezone, NEW.kind, NEW.queue, NEW.args, NEW.priority,
         NEW.max_attempts, NEW.tags, NEW.metadata, NEW.missed_fire_policy,
         NEW.max_lateness, NEW.expect_success_within, NEW.max_consecutive_failures, NEW.pause_after_failures)
        IS DISTINCT FROM
        (OLD.cron_expr, OLD.timezone, OLD.kind, OLD.queue, OLD.args, OLD.priority,
         OLD.max_attempts, OLD.tags, OLD.metadata, OLD.missed_fire_policy,
         OLD.max_lateness, OLD.expect_success_within, OLD.max_consecutive_failures, OLD.pause_after_failures);
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
         NEW.max_lateness, NEW.expect_success_within, NEW.max_consecutive_failures, NEW.pause_after_failures)
                IS DISTINCT FROM
                (OLD.cron_expr, OLD.timezone, OLD.kind, OLD.queue, OLD.args, OLD.priority,
                 OLD.max_attempts, OLD.tags, OLD.metadata, OLD.missed_fire_policy,
         OLD.max_lateness, OLD.expect_success_within, OLD.max_consecutive_failures, OLD.pause_after_failures))
    )
    EXECUTE FUNCTION awa.cron_jobs_fence();

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
        'max_lateness', OLD.max_lateness,
        'expect_success_within', OLD.expect_success_within,
        'max_consecutive_failures', OLD.max_consecutive_failures,
        'pause_after_failures', OLD.pause_after_failures);
    def_new := jsonb_build_object(
        'cron_expr', NEW.cron_expr, 'timezone', NEW.timezone, 'kind', NEW.kind, 'queue', NEW.queue,
        'args', NEW.args, 'priority', NEW.priority, 'max_attempts', NEW.max_attempts,
        'tags', to_jsonb(NEW.tags), 'metadata', NEW.metadata, 'missed_fire_policy', NEW.missed_fire_policy,
        'max_lateness', NEW.max_lateness,
        'expect_success_within', NEW.expect_success_within,
        'max_consecutive_failures', NEW.max_consecutive_failures,
        'pause_after_failures', NEW.pause_after_failures);
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
        OR (kinds[1] = 'redefine' AND declared = 'sync_definition')) THEN
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

-- AFTER, so a change the fence suppressed (RETURN NULL) is not recorded, and the row is
-- recorded as it was finally written (after every BEFORE trigger).
DROP TRIGGER cron_jobs_audit ON awa.cron_jobs;
CREATE TRIGGER cron_jobs_audit
    AFTER UPDATE OF paused_at, paused_by, retired_at, retired_by, owner,
                    cron_expr, timezone, kind, queue, args, priority, max_attempts, tags, metadata,
                    missed_fire_policy, max_lateness, expect_success_within, max_consecutive_failures, pause_after_failures
    ON awa.cron_jobs
    FOR EACH ROW
    WHEN (
        (OLD.paused_at, OLD.paused_by, OLD.retired_at, OLD.retired_by, OLD.owner)
            IS DISTINCT FROM (NEW.paused_at, NEW.paused_by, NEW.retired_at, NEW.retired_by, NEW.owner)
        OR (OLD.cron_expr, OLD.timezone, OLD.kind, OLD.queue, OLD.args, OLD.priority, OLD.max_attempts,
            OLD.tags, OLD.metadata, OLD.missed_fire_policy,
         OLD.max_lateness, OLD.expect_success_within, OLD.max_consecutive_failures, OLD.pause_after_failures)
            IS DISTINCT FROM
           (NEW.cron_expr, NEW.timezone, NEW.kind, NEW.queue, NEW.args, NEW.priority, NEW.max_attempts,
            NEW.tags, NEW.metadata, NEW.missed_fire_policy,
         NEW.max_lateness, NEW.expect_success_within, NEW.max_consecutive_failures, NEW.pause_after_failures)
    )
    EXECUTE FUNCTION awa.cron_jobs_audit();

-- A removed schedule takes its health with it (the transitions stay, as history).
CREATE FUNCTION awa.cron_health_remove() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM awa.cron_health WHERE name = OLD.name;
    RETURN NULL;
END;
$$;

CREATE TRIGGER cron_jobs_health_remove
    AFTER DELETE ON awa.cron_jobs
    FOR EACH ROW EXECUTE FUNCTION awa.cron_health_remove();

REVOKE EXECUTE ON FUNCTION awa.cron_health_outcome() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION awa.cron_health_remove() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION awa.cron_health_resume() FROM PUBLIC;
