-- Undoes v019_release_policy.sql (`awa-tui migrate --down-to 18`): the election function
-- as v005 defined it, no renewal guard, no policy. Run it before starting a release older
-- than 1.0.0 again: those refuse a schema newer than theirs.
DROP TRIGGER leader_lease_renewal_guard ON awa.leader_lease;
DROP FUNCTION awa.leader_lease_renewal_guard();
DROP FUNCTION awa.leader_acquire(bigint, uuid, interval, timestamptz);
CREATE FUNCTION awa.leader_acquire(p_key bigint, p_instance uuid, p_lease interval, p_now timestamptz DEFAULT NULL)
RETURNS TABLE (got boolean, term bigint, expires_at timestamptz, holder_pid integer, holder_instance uuid,
               holder_expires_at timestamptz, deposed_pid integer, denied text)
LANGUAGE plpgsql AS $$
DECLARE
    t timestamptz := coalesce(p_now, clock_timestamp());
    cur awa.leader_lease;
    holder integer;
    deposed integer;
BEGIN
    -- Bounded waits (lock 1.5 s + terminate 1 s) stay under the caller's 3 s ping timeout.
    PERFORM set_config('lock_timeout', '1500ms', true);
    SELECT * INTO cur FROM awa.leader_lease l WHERE l.singleton FOR UPDATE;
    holder := awa.leader_lock_pid(p_key);
    IF holder IS NOT NULL AND holder <> pg_backend_pid() THEN
        IF cur.backend_pid = holder AND cur.expires_at > t THEN
            RETURN QUERY SELECT false, cur.term, NULL::timestamptz, holder, cur.instance_id, cur.expires_at,
                                NULL::integer, NULL::text;
            RETURN;
        END IF;
        BEGIN
            -- Wait (up to 1 s) for the session to exit, so the lock is free just after.
            PERFORM pg_terminate_backend(holder, 1000);
            deposed := holder;
        EXCEPTION WHEN insufficient_privilege THEN
            RETURN QUERY SELECT false, cur.term, NULL::timestamptz, holder,
                                CASE WHEN cur.backend_pid = holder THEN cur.instance_id END, cur.expires_at,
                                NULL::integer, SQLERRM;
            RETURN;
        END;
    END IF;
    IF holder IS DISTINCT FROM pg_backend_pid() AND NOT pg_try_advisory_lock(p_key) THEN
        RETURN QUERY SELECT false, cur.term, NULL::timestamptz, awa.leader_lock_pid(p_key), cur.instance_id,
                            cur.expires_at, deposed, NULL::text;
        RETURN;
    END IF;
    t := coalesce(p_now, clock_timestamp());
    UPDATE awa.leader_lease l
    SET term = cur.term + 1, instance_id = p_instance, backend_pid = pg_backend_pid(), lease = p_lease,
        acquired_at = t, renewed_at = t, expires_at = t + p_lease
    WHERE l.singleton;
    RETURN QUERY SELECT true, cur.term + 1, t + p_lease, pg_backend_pid(), cur.instance_id, cur.expires_at,
                        deposed, NULL::text;
END
$$;
DROP FUNCTION awa.may_lead(uuid);
DROP TABLE awa.release_policy;
ALTER TABLE awa.runtime_instances DROP COLUMN leader_protocol;
