-- v035: an operator's (and a team's) changes to jobs go through audited functions.
--
-- Until now the operator role and a team's role held INSERT, UPDATE and DELETE on awa.jobs
-- so that awa-tui could trigger, backfill, retry, cancel, drain and prune, each action then
-- writing its audit event. The same grants let plain SQL insert a job of any kind with a
-- forged `triggered_by`, cancel it or delete history with nothing in awa.audit_log. Those
-- grants are revoked: each action is a SECURITY DEFINER function below that does the write
-- and its one audit row together, only after the audit gate (awa.begin_action) for that
-- very action, and only on the targets the caller's role may act on (v032). The runtime
-- keeps its own grants: the fire statement and the worker write as before, no trigger on
-- awa.jobs was added, so the fire path is unchanged.
--
-- The audit gate's scope is now the login's narrowed by the role it took with SET ROLE
-- (awa.caller_scope): a superuser's SET ROLE into a team's role acts as that team.
-- include: functions/caller_scope.sql
-- include: functions/check_target.sql
-- include: functions/action_label.sql
-- include: functions/record_event.sql

-- The issue's other half ("Why" 2): the operator role could UPDATE an unowned schedule's
-- arguments and cron expression by hand (audited as a redefinition, not marked overridden),
-- though it may not redefine. The fence now also sees an unowned row's change of the
-- definition columns an operator may write (its override's), and refuses it but from a role
-- that syncs (INSERT on awa.cron_jobs: the runtime) or an operator's override. The fire
-- statement changes none of them: for an unowned row its WHEN clause compares seven columns
-- more (an owned row's compares seventeen, as before), and the fence is not called.
-- include: functions/cron_jobs_fence.sql
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
        OR (OLD.owner IS NULL
            AND (NEW.cron_expr, NEW.timezone, NEW.queue, NEW.args, NEW.priority, NEW.cron_written, NEW.overridden)
                IS DISTINCT FROM
                (OLD.cron_expr, OLD.timezone, OLD.queue, OLD.args, OLD.priority, OLD.cron_written, OLD.overridden))
    )
    EXECUTE FUNCTION awa.cron_jobs_fence();

-- A job now for a schedule (S17), of the schedule's kind, queue and arguments; refused for a
-- retired one. `triggered_by` is the operator who passed the gate.
CREATE FUNCTION awa.trigger_job(schedule text, detail jsonb DEFAULT '{}'::jsonb) RETURNS SETOF awa.jobs
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    label text := awa.action_label('trigger');
    c awa.cron_jobs;
    job awa.jobs;
BEGIN
    PERFORM awa.check_target(schedule);
    SELECT * INTO c FROM awa.cron_jobs WHERE name = schedule FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'schedule % not found', awa.escaped(schedule) USING ERRCODE = 'no_data_found';
    END IF;
    IF c.retired_at IS NOT NULL THEN
        RAISE EXCEPTION 'schedule % is retired; restore it before triggering', awa.escaped(schedule)
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    INSERT INTO awa.jobs (kind, queue, args, state, priority, attempt, max_attempts, metadata, tags)
    VALUES (c.kind, c.queue, c.args, 'available', c.priority, 0, c.max_attempts,
            c.metadata || jsonb_build_object('cron_name', c.name, 'triggered_manually', true, 'triggered_by', label),
            c.tags)
    RETURNING * INTO job;
    PERFORM awa.audit_insert('trigger', schedule, NULL, jsonb_build_object('job_id', job.id), detail);
    RETURN NEXT job;
END;
$$;

-- A backfill's jobs (S59): one per instant given (ISO-8601, in order), marked as backfilled by
-- the operator who passed the gate; one audit event for them all (`detail` says the range).
CREATE FUNCTION awa.backfill_jobs(schedule text, fires text[], detail jsonb DEFAULT '{}'::jsonb)
RETURNS SETOF bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    label text := awa.action_label('backfill');
    c awa.cron_jobs;
    ids bigint[];
BEGIN
    PERFORM awa.check_target(schedule);
    SELECT * INTO c FROM awa.cron_jobs WHERE name = schedule FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'schedule % not found', awa.escaped(schedule) USING ERRCODE = 'no_data_found';
    END IF;
    IF c.retired_at IS NOT NULL THEN
        RAISE EXCEPTION 'schedule % is retired; restore it before a backfill', awa.escaped(schedule)
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    WITH made AS (
        INSERT INTO awa.jobs (kind, queue, args, state, priority, attempt, max_attempts, metadata, tags)
        SELECT c.kind, c.queue, c.args, 'available', c.priority, 0, c.max_attempts,
               c.metadata || jsonb_build_object('cron_name', c.name, 'cron_fire_time', f.fire_iso,
                                                'backfill', true, 'backfilled_by', label),
               c.tags
        FROM unnest(coalesce(fires, '{}'::text[])) WITH ORDINALITY AS f(fire_iso, seq)
        ORDER BY f.seq
        RETURNING id
    )
    SELECT coalesce(array_agg(made.id ORDER BY made.id), '{}') INTO ids FROM made;
    PERFORM awa.audit_insert('backfill', schedule, NULL,
                             jsonb_build_object('count', cardinality(ids)), detail);
    RETURN QUERY SELECT unnest(ids);
END;
$$;

-- Run a failed, discarded or cancelled job again, now (one more attempt).
CREATE FUNCTION awa.retry_job(job_id bigint) RETURNS SETOF awa.jobs
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    label text := awa.action_label('job_retry');
    job awa.jobs;
    was text;
BEGIN
    PERFORM awa.check_target('job:' || job_id);
    SELECT * INTO job FROM awa.jobs WHERE id = job_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % not found', job_id USING ERRCODE = 'no_data_found';
    END IF;
    was := job.state;
    IF was NOT IN ('retryable', 'discarded', 'cancelled') THEN
        RAISE EXCEPTION 'job % cannot be retried (state %)', job_id, was
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    UPDATE awa.jobs SET state = 'available', run_at = now(), finalized_at = NULL WHERE id = job_id
    RETURNING * INTO job;
    PERFORM awa.audit_insert('job_retry', 'job:' || job_id, jsonb_build_object('state', was),
                             jsonb_build_object('state', 'available'),
                             jsonb_build_object('schedule', job.metadata ->> 'cron_name', 'queue', job.queue));
    RETURN NEXT job;
END;
$$;

-- Cancel a job: a waiting one at once, a running one by asking its runtime.
CREATE FUNCTION awa.cancel_job(job_id bigint) RETURNS SETOF awa.jobs
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    label text := awa.action_label('job_cancel');
    job awa.jobs;
    was text;
BEGIN
    PERFORM awa.check_target('job:' || job_id);
    SELECT * INTO job FROM awa.jobs WHERE id = job_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % not found', job_id USING ERRCODE = 'no_data_found';
    END IF;
    was := job.state;
    IF was = 'running' THEN
        UPDATE awa.jobs SET cancel_requested_at = coalesce(cancel_requested_at, now()) WHERE id = job_id
        RETURNING * INTO job;
        PERFORM awa.audit_insert('job_cancel', 'job:' || job_id, jsonb_build_object('state', 'running'),
                                 jsonb_build_object('state', 'running', 'cancel', 'asked of its runtime'),
                                 jsonb_build_object('schedule', job.metadata ->> 'cron_name', 'queue', job.queue));
    ELSIF was IN ('available', 'retryable') THEN
        UPDATE awa.jobs SET state = 'cancelled', finalized_at = now() WHERE id = job_id
        RETURNING * INTO job;
        PERFORM awa.audit_insert('job_cancel', 'job:' || job_id, jsonb_build_object('state', was),
                                 jsonb_build_object('state', 'cancelled'),
                                 jsonb_build_object('schedule', job.metadata ->> 'cron_name', 'queue', job.queue));
    ELSE
        RAISE EXCEPTION 'job % is finished (state %): only a waiting or running job can be cancelled', job_id, was
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RETURN NEXT job;
END;
$$;

-- Cancel every waiting job of a queue (running ones finish); how many. Not a team's.
CREATE FUNCTION awa.drain_queue(queue_name text) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    label text := awa.action_label('queue_drain');
    n integer;
BEGIN
    PERFORM awa.check_target('queue:' || queue_name);
    UPDATE awa.jobs SET state = 'cancelled', finalized_at = now()
    WHERE queue = queue_name AND state IN ('available', 'retryable');
    GET DIAGNOSTICS n = ROW_COUNT;
    PERFORM awa.audit_insert('queue_drain', 'queue:' || queue_name, jsonb_build_object('waiting', n),
                             jsonb_build_object('waiting', 0),
                             jsonb_build_object('queue', queue_name, 'cancelled', n));
    RETURN n;
END;
$$;

-- One batch of an operator's prune (awa_tui/engine/ledger/retention.py PRUNE_SQL, which the
-- leader runs as the runtime): finished jobs before `cutoff`, each schedule's last `keep`
-- kept, walked from (after_at, after_id); the schedules' pruned marks moved. The batch that
-- reaches the end also prunes one batch of skipped instants before `cutoff` (SKIPS_PRUNE_SQL).
-- A batch that deleted anything is one audit event (`jobs_prune`, how many, by schedule).
-- Not a team's.
CREATE FUNCTION awa.prune_jobs(cutoff timestamptz, keep integer, batch integer, after_at timestamptz,
                               after_id bigint, detail jsonb DEFAULT '{}'::jsonb)
RETURNS TABLE (last_at timestamptz, last_id bigint, scanned bigint, deleted bigint, by_schedule jsonb)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_variable
DECLARE
    label text := awa.action_label('jobs_prune');
    r record;
BEGIN
    PERFORM awa.check_target('jobs');
    WITH cand AS (
        SELECT j.id, j.finalized_at, j.metadata ->> 'cron_name' AS name,
               awa.try_timestamptz(j.metadata ->> 'cron_fire_time') AS fire, j.created_at
        FROM awa.jobs j
        WHERE j.state IN ('completed', 'discarded', 'cancelled') AND j.finalized_at < cutoff
          AND (j.finalized_at, j.id) > (coalesce(after_at, '-infinity'), after_id)
        ORDER BY j.finalized_at, j.id
        LIMIT batch
    ),
    doomed AS (
        SELECT d.* FROM cand d
        WHERE d.name IS NULL OR keep = 0 OR d.id < coalesce((
            SELECT k.id FROM awa.jobs k
            WHERE k.metadata ? 'cron_name' AND k.metadata ->> 'cron_name' = d.name
            ORDER BY k.metadata ->> 'cron_name' DESC, k.id DESC
            OFFSET greatest(keep - 1, 0) LIMIT 1), 0)
    ),
    locked AS (
        SELECT j.id FROM awa.jobs j JOIN doomed d ON d.id = j.id
        WHERE j.state IN ('completed', 'discarded', 'cancelled')
        FOR UPDATE OF j SKIP LOCKED
    ),
    del AS (
        DELETE FROM awa.jobs j USING doomed d
        WHERE j.id = d.id AND j.id IN (SELECT l.id FROM locked l)
        RETURNING j.id, d.name, d.fire, d.created_at
    ),
    marks AS (
        INSERT INTO awa.ledger_pruned AS p (cron_name, pruned_through, pruned_jobs)
        SELECT x.name, max(coalesce(x.fire, x.created_at)), count(*) FROM del x WHERE x.name IS NOT NULL GROUP BY x.name
        ON CONFLICT (cron_name) DO UPDATE
        SET pruned_through = greatest(p.pruned_through, EXCLUDED.pruned_through),
            pruned_jobs = p.pruned_jobs + EXCLUDED.pruned_jobs
        RETURNING 1
    )
    SELECT (SELECT c.finalized_at FROM cand c ORDER BY c.finalized_at DESC, c.id DESC LIMIT 1) AS last_at,
           (SELECT c.id FROM cand c ORDER BY c.finalized_at DESC, c.id DESC LIMIT 1) AS last_id,
           (SELECT count(*) FROM cand) AS scanned,
           (SELECT count(*) FROM del) AS deleted,
           (SELECT coalesce(jsonb_object_agg(g.name, g.n), '{}'::jsonb)
            FROM (SELECT x.name, count(*) AS n FROM del x WHERE x.name IS NOT NULL GROUP BY x.name) g) AS by_schedule,
           (SELECT count(*) FROM marks) AS marked
    INTO r;
    IF r.scanned < batch THEN
        WITH gone AS (
            DELETE FROM awa.fire_skips s
            WHERE (s.cron_name, s.fire_time) IN (
                SELECT k.cron_name, k.fire_time FROM awa.fire_skips k WHERE k.skipped_at < cutoff
                ORDER BY k.skipped_at LIMIT batch FOR UPDATE SKIP LOCKED)
            RETURNING s.cron_name, s.fire_time
        )
        INSERT INTO awa.ledger_pruned AS p (cron_name, pruned_through)
        SELECT g.cron_name, max(g.fire_time) FROM gone g GROUP BY g.cron_name
        ON CONFLICT (cron_name) DO UPDATE SET pruned_through = greatest(p.pruned_through, EXCLUDED.pruned_through);
    END IF;
    IF r.deleted > 0 THEN
        PERFORM awa.audit_insert('jobs_prune', 'jobs', NULL, jsonb_build_object('deleted', r.deleted),
                                 coalesce(detail, '{}'::jsonb) || jsonb_build_object('by_schedule', r.by_schedule));
    END IF;
    last_at := r.last_at; last_id := r.last_id; scanned := r.scanned; deleted := r.deleted;
    by_schedule := r.by_schedule;
    RETURN NEXT;
END;
$$;

-- Who may call them: whoever may pass the audit gate (the operator role and a team's role,
-- which each function scopes), never PUBLIC; and no such role keeps a direct write on
-- awa.jobs (a role that also reconciles is a runtime's, and keeps its own).
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT p.oid::regprocedure AS f FROM pg_proc p
             WHERE p.pronamespace = 'awa'::regnamespace AND p.prosecdef
               AND p.proname IN ('trigger_job', 'backfill_jobs', 'retry_job', 'cancel_job', 'drain_queue', 'prune_jobs')
    LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', r.f);
    END LOOP;
    FOR r IN SELECT DISTINCT a.grantee::regrole AS role FROM pg_proc p, aclexplode(p.proacl) a
             WHERE p.oid = 'awa.begin_action(text, text, jsonb)'::regprocedure AND a.privilege_type = 'EXECUTE'
               AND a.grantee <> 0 AND a.grantee <> p.proowner
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION awa.trigger_job(text, jsonb), awa.backfill_jobs(text, text[], jsonb), '
                       'awa.retry_job(bigint), awa.cancel_job(bigint) TO %s', r.role);
        IF NOT EXISTS (SELECT 1 FROM awa.owner_grants g WHERE g.role = r.role::text) THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION awa.drain_queue(text), '
                           'awa.prune_jobs(timestamptz, integer, integer, timestamptz, bigint, jsonb) TO %s', r.role);
        END IF;
        IF NOT has_function_privilege(r.role::oid, 'awa.begin_reconcile(text)', 'EXECUTE') THEN
            EXECUTE format('REVOKE INSERT, UPDATE, DELETE ON awa.jobs FROM %s', r.role);
            -- The prune's own writes, now awa.prune_jobs's.
            EXECUTE format('REVOKE INSERT, UPDATE ON awa.ledger_pruned FROM %s', r.role);
            EXECUTE format('REVOKE DELETE ON awa.fire_skips FROM %s', r.role);
        END IF;
    END LOOP;
END $$;
