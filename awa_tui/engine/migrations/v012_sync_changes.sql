-- v012: a note of every change to what sync compares, so that a steady sync is one small
-- query instead of a compare of every registered definition (S50, issue 18).
--
-- A runtime remembers the snapshot in which it last found awa.cron_jobs in agreement with
-- its registry. Its next sync asks which names were noted by a transaction that snapshot
-- does not see: none of its own names means nothing to compare and nothing to write; some
-- means a compare of just those names. Rows are noted by the transaction id that wrote
-- them (insert only: writers never wait for each other here, whatever order they lock
-- schedule rows in).
--
-- What is noted: a change of a row's name, definition, override, owner or retirement (the
-- columns sync reads), a delete, a TRUNCATE (name NULL: every name). An insert is not: a
-- name a runtime registers exists once it has synced, so it can only be inserted again
-- after a delete, which is noted. The fire path (last_enqueued_at, next_fire_at,
-- fires_count, finished_at) and pauses update none of the listed columns, so they never
-- enter these triggers (UPDATE OF ... is evaluated in C, as in v006).

CREATE TABLE awa.cron_jobs_changes (
    xid  xid8        NOT NULL DEFAULT pg_current_xact_id(),
    name text,                                   -- NULL: every name (TRUNCATE)
    at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cron_jobs_changes_xid_idx ON awa.cron_jobs_changes (xid);

-- The newest transaction id whose notes were pruned: a remembered snapshot that does not
-- see all of them (its xmin not past this) can no longer be answered, and compares all.
CREATE TABLE awa.cron_jobs_changes_pruned (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    upto xid8    NOT NULL
);
INSERT INTO awa.cron_jobs_changes_pruned (upto) VALUES ('0');

CREATE FUNCTION awa.cron_jobs_note_update() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO awa.cron_jobs_changes (name) VALUES (OLD.name);
    IF NEW.name IS DISTINCT FROM OLD.name THEN
        INSERT INTO awa.cron_jobs_changes (name) VALUES (NEW.name);
    END IF;
    RETURN NULL;
END;
$$;

CREATE FUNCTION awa.cron_jobs_note_delete() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO awa.cron_jobs_changes (name) SELECT name FROM gone;
    RETURN NULL;
END;
$$;

CREATE FUNCTION awa.cron_jobs_note_truncate() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO awa.cron_jobs_changes (name) VALUES (NULL);
    RETURN NULL;
END;
$$;

-- AFTER, so an update the fence suppressed (S33) is not noted; WHEN, so a write of the
-- same values (an UPSERT's no-op) is not either. The list is the name, every definition
-- column (engine/schedules/columns.py DEFINITION; a test checks that they agree), the override and
-- the two columns that make sync leave a row alone.
CREATE TRIGGER cron_jobs_note_update
    AFTER UPDATE OF name, cron_expr, timezone, kind, queue, args, priority, max_attempts, tags, metadata,
                    missed_fire_policy, max_lateness, expect_success_within, max_consecutive_failures,
                    pause_after_failures, overlap, start_at, end_at, max_fires, cron_written, jitter_ms,
                    overridden, owner, retired_at
    ON awa.cron_jobs
    FOR EACH ROW
    WHEN ((OLD.name, OLD.cron_expr, OLD.timezone, OLD.kind, OLD.queue, OLD.args, OLD.priority, OLD.max_attempts,
           OLD.tags, OLD.metadata, OLD.missed_fire_policy, OLD.max_lateness, OLD.expect_success_within,
           OLD.max_consecutive_failures, OLD.pause_after_failures, OLD.overlap, OLD.start_at, OLD.end_at,
           OLD.max_fires, OLD.cron_written, OLD.jitter_ms, OLD.overridden, OLD.owner, OLD.retired_at)
          IS DISTINCT FROM
          (NEW.name, NEW.cron_expr, NEW.timezone, NEW.kind, NEW.queue, NEW.args, NEW.priority, NEW.max_attempts,
           NEW.tags, NEW.metadata, NEW.missed_fire_policy, NEW.max_lateness, NEW.expect_success_within,
           NEW.max_consecutive_failures, NEW.pause_after_failures, NEW.overlap, NEW.start_at, NEW.end_at,
           NEW.max_fires, NEW.cron_written, NEW.jitter_ms, NEW.overridden, NEW.owner, NEW.retired_at))
    EXECUTE FUNCTION awa.cron_jobs_note_update();

-- One statement-level note per delete statement, whatever it removes (cron remove, a bulk
-- delete by hand).
CREATE TRIGGER cron_jobs_note_delete
    AFTER DELETE ON awa.cron_jobs
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION awa.cron_jobs_note_delete();

CREATE TRIGGER cron_jobs_note_truncate
    AFTER TRUNCATE ON awa.cron_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION awa.cron_jobs_note_truncate();

-- Notes older than `keep` are dropped by the runtimes' syncs (any role that syncs may call
-- this; it writes nothing else). Returns how many were dropped.
CREATE FUNCTION awa.prune_cron_jobs_changes(keep interval) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    newest xid8;
    dropped bigint;
BEGIN
    WITH gone AS (DELETE FROM awa.cron_jobs_changes WHERE at < now() - keep RETURNING xid)
    SELECT max(xid), count(*) INTO newest, dropped FROM gone;
    IF dropped > 0 THEN
        UPDATE awa.cron_jobs_changes_pruned SET upto = greatest(upto, newest);
    END IF;
    RETURN dropped;
END;
$$;
