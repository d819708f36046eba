-- v005: a leadership lease (S7, S8). The advisory lock alone cannot tell a frozen leader
-- (SIGSTOP, a long GC pause, a hung VM: its session stays open, the lock stays held) from
-- a healthy one. The lock holder renews this lease in DB time; a standby that finds it
-- expired while the lock is still held terminates the holder's lock session and takes over.

-- One row, always present, so that every acquisition and every deposition can serialise
-- on its row lock.
CREATE TABLE awa.leader_lease (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    term        bigint NOT NULL DEFAULT 0,       -- +1 at every acquisition
    instance_id uuid,                            -- awa.runtime_instances of the holder
    backend_pid integer,                         -- the holder's lock session (pg_locks.pid)
    lease       interval,
    acquired_at timestamptz,
    renewed_at  timestamptz,
    expires_at  timestamptz                      -- NULL: never held
);
INSERT INTO awa.leader_lease DEFAULT VALUES;

-- The server pid of the session holding the session advisory lock `p_key` in this database.
CREATE FUNCTION awa.leader_lock_pid(p_key bigint) RETURNS integer
LANGUAGE sql VOLATILE AS $$
    SELECT pid FROM pg_locks
    WHERE locktype = 'advisory' AND granted AND objsubid = 1
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND classid::bigint = (p_key >> 32) AND objid::bigint = (p_key & 4294967295)
    LIMIT 1
$$;

-- One election step of a runtime that does not lead: take the lock and the lease, or,
-- when the lock is held under an expired lease (or by a session the lease does not name),
-- terminate that session first. One statement, so a caller frozen halfway cannot keep
-- the row lock. pg_terminate_backend runs with the caller's rights: it works on sessions
-- of the same role, or for members of pg_signal_backend; otherwise `denied` says why.
-- `p_now` is for tests (exact instants); NULL means DB time.
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
