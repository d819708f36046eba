-- v018: exclusions and named calendars (S56).
--
-- A schedule may name dates (inclusive ranges of days in its own zone) and calendars on
-- which it never fires. Both are definition columns (engine/schedules/columns.py): sync writes and
-- compares them, a change of them is a redefinition (audited) and is noted for the steady
-- sync (v012). Their content is judged by the engine's parser (S15), not here: the checks
-- below only keep the shape a reader can rely on.

ALTER TABLE awa.cron_jobs
    ADD COLUMN exclude_dates jsonb
        CONSTRAINT cron_jobs_exclude_dates_array CHECK (exclude_dates IS NULL OR jsonb_typeof(exclude_dates) = 'array'),
    ADD COLUMN exclude_calendars jsonb
        CONSTRAINT cron_jobs_exclude_calendars_array
        CHECK (exclude_calendars IS NULL OR jsonb_typeof(exclude_calendars) = 'array');

-- A named set of dates, shared by many schedules and edited without a deploy:
-- `dates` is [[start, end], ...] of ISO dates, inclusive, sorted.
CREATE TABLE awa.calendars (
    name       text        PRIMARY KEY
        CONSTRAINT calendars_name_format CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    dates      jsonb       NOT NULL
        CONSTRAINT calendars_dates_array CHECK (jsonb_typeof(dates) = 'array'),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The evaluator's cheap probe: it re-reads calendars only when this number moved (one
-- row, one primary-key read), never per pass per schedule. Bumped by the statement
-- trigger below on any change of awa.calendars, whoever makes it.
CREATE TABLE awa.calendars_version (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    version bigint  NOT NULL
);
INSERT INTO awa.calendars_version (version) VALUES (0);

CREATE FUNCTION awa.calendars_bump() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE awa.calendars_version SET version = version + 1;
    RETURN NULL;
END;
$$;
CREATE TRIGGER calendars_bump
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON awa.calendars
    FOR EACH STATEMENT EXECUTE FUNCTION awa.calendars_bump();

-- Every change of a calendar is audited like the other operator-controlled state (v006):
-- the dates before and after, under the declared operator or the login that wrote it.
CREATE FUNCTION awa.calendars_audit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM awa.audit_insert(
        CASE TG_OP WHEN 'INSERT' THEN 'calendar_create' WHEN 'DELETE' THEN 'calendar_delete' ELSE 'calendar_edit' END,
        'calendar:' || CASE WHEN TG_OP = 'DELETE' THEN OLD.name ELSE NEW.name END,
        CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE jsonb_build_object('dates', OLD.dates) END,
        CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE jsonb_build_object('dates', NEW.dates) END,
        awa.audit_context_detail());
    RETURN NULL;
END;
$$;
CREATE TRIGGER calendars_audit
    AFTER INSERT OR DELETE ON awa.calendars
    FOR EACH ROW EXECUTE FUNCTION awa.calendars_audit();
CREATE TRIGGER calendars_audit_update
    AFTER UPDATE OF name, dates ON awa.calendars
    FOR EACH ROW WHEN ((OLD.name, OLD.dates) IS DISTINCT FROM (NEW.name, NEW.dates))
    EXECUTE FUNCTION awa.calendars_audit();

-- A change of a schedule's exclusions is a redefinition, audited like v009's columns.
CREATE FUNCTION awa.cron_jobs_audit_exclusions() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    old_def jsonb := jsonb_build_object('exclude_dates', OLD.exclude_dates, 'exclude_calendars', OLD.exclude_calendars);
    new_def jsonb := jsonb_build_object('exclude_dates', NEW.exclude_dates, 'exclude_calendars', NEW.exclude_calendars);
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
CREATE TRIGGER cron_jobs_audit_exclusions
    AFTER UPDATE OF exclude_dates, exclude_calendars ON awa.cron_jobs
    FOR EACH ROW
    WHEN ((OLD.exclude_dates, OLD.exclude_calendars) IS DISTINCT FROM (NEW.exclude_dates, NEW.exclude_calendars))
    EXECUTE FUNCTION awa.cron_jobs_audit_exclusions();

-- The steady sync's note (v012), with the two new definition columns.
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
