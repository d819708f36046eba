-- v007: the fire ledger, job outcomes, retention.
--
-- A verdict for every due instant is derived at read time from what history already holds
-- exactly: the jobs (one per fire, stamped with its instant), pause/retire intervals (the
-- audit trail), and leadership intervals (recorded here, one row per term). Nothing is
-- written per fire beyond the job itself. What this migration adds is what history did not
-- keep: who led and when (runtime snapshots are pruned after a day), and, once old jobs
-- are pruned, up to which instant a schedule's jobs may be missing (so an old verdict
-- reads "unknown (pruned)" instead of a wrong "not fired").

-- One row per leadership term, extended on every renewal. Written only by the trigger
-- below (SECURITY DEFINER): no role writes it directly.
CREATE TABLE awa.leader_terms (
    term        bigint PRIMARY KEY,
    instance_id uuid,
    acquired_at timestamptz NOT NULL,
    -- End of leadership: the lease's last expiry, cut short by a release or by the next
    -- term's acquisition.
    held_until  timestamptz NOT NULL
);
CREATE INDEX leader_terms_span_idx ON awa.leader_terms (acquired_at, held_until);

-- Since when leadership is recorded: before it, "no leader" cannot be told.
CREATE TABLE awa.ledger_meta (
    singleton         boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    leadership_since  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO awa.ledger_meta DEFAULT VALUES;

-- Per schedule: the latest fire instant among its pruned jobs. A due instant at or before
-- it that has no job may have had one: its verdict is unknown, not "not fired".
CREATE TABLE awa.ledger_pruned (
    cron_name      text PRIMARY KEY,
    pruned_through timestamptz NOT NULL,
    pruned_jobs    bigint NOT NULL DEFAULT 0
);

CREATE FUNCTION awa.leader_terms_record() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NEW.acquired_at IS NULL OR NEW.expires_at IS NULL THEN
        RETURN NULL;
    END IF;
    IF NEW.term IS DISTINCT FROM OLD.term THEN
        -- A new term ends the previous one no later than now.
        UPDATE awa.leader_terms SET held_until = least(held_until, NEW.acquired_at)
        WHERE term = OLD.term;
        INSERT INTO awa.leader_terms (term, instance_id, acquired_at, held_until)
        VALUES (NEW.term, NEW.instance_id, NEW.acquired_at, NEW.expires_at)
        ON CONFLICT (term) DO UPDATE SET instance_id = EXCLUDED.instance_id,
            acquired_at = EXCLUDED.acquired_at, held_until = EXCLUDED.held_until;
    ELSE
        UPDATE awa.leader_terms SET held_until = NEW.expires_at WHERE term = NEW.term;
    END IF;
    RETURN NULL;
END;
$$;

-- Renewals (every second) enter the function; the WHEN clause keeps other updates out.
CREATE TRIGGER leader_terms_record
    AFTER UPDATE OF term, expires_at ON awa.leader_lease
    FOR EACH ROW
    WHEN ((OLD.term, OLD.expires_at) IS DISTINCT FROM (NEW.term, NEW.expires_at))
    EXECUTE FUNCTION awa.leader_terms_record();

-- The term that holds the lease now (if any) is recorded from now on.
INSERT INTO awa.leader_terms (term, instance_id, acquired_at, held_until)
SELECT l.term, l.instance_id, greatest(l.acquired_at, now()), l.expires_at
FROM awa.leader_lease l
WHERE l.acquired_at IS NOT NULL AND l.expires_at IS NOT NULL AND l.expires_at > now();

-- Retention scans finished jobs oldest first; waiting and running jobs are not in it, so
-- the fire path's insert (state available) never maintains this index.
CREATE INDEX jobs_finished_idx ON awa.jobs (finalized_at, id)
    WHERE state IN ('completed', 'discarded', 'cancelled');

-- Operator actions on jobs change no audited row: they are events.
CREATE OR REPLACE FUNCTION awa.record_event(action text, target text, before jsonb, after jsonb, detail jsonb)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF action NOT IN ('trigger', 'queue_drain', 'retire_owner', 'restore_owner',
                      'job_retry', 'job_cancel', 'jobs_prune') THEN
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

-- Audit search by operator, action and time.
CREATE INDEX audit_log_at_idx ON awa.audit_log (at, id);
