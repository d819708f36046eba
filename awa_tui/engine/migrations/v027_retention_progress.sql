-- v027: how far the leader's retention has got, where an operator and `check` can see it.
--
-- Retention walks the finished jobs oldest first in bounded rounds, with a cursor the leader
-- keeps between them; a walk that reaches the end starts a new lap. If the walk never gets
-- there (a table growing faster than it is pruned, rounds that keep failing) the jobs table
-- grows without bound, and until now nothing said so. One row: when the current lap began,
-- when the last one ended, where the walk is, and what it has deleted.
CREATE TABLE awa.retention_progress (
    singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    lap_started_at  timestamptz,          -- the current walk began (NULL: retention never ran)
    lap_finished_at timestamptz,          -- the last walk reached the end
    laps            bigint  NOT NULL DEFAULT 0,
    walked_to       timestamptz,          -- the finish time of the last job the walk looked at
    cutoff          timestamptz,          -- finished before this, a job may go (now - horizon)
    deleted         bigint  NOT NULL DEFAULT 0,  -- jobs deleted by the leader's retention, in all
    updated_at      timestamptz
);
INSERT INTO awa.retention_progress DEFAULT VALUES;
-- A layout applied before this version: its runtime role (the grantee of INSERT on
-- awa.cron_jobs) records the progress, and whoever may read the schedules may read it.
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT DISTINCT a.grantee::regrole AS role, a.privilege_type AS privilege
             FROM pg_class c, aclexplode(c.relacl) a
             WHERE c.oid = 'awa.cron_jobs'::regclass AND a.privilege_type IN ('INSERT', 'SELECT')
               AND a.grantee <> 0 AND a.grantee <> c.relowner
    LOOP
        EXECUTE format(CASE r.privilege WHEN 'INSERT' THEN 'GRANT UPDATE ON awa.retention_progress TO %s'
                                        ELSE 'GRANT SELECT ON awa.retention_progress TO %s' END, r.role);
    END LOOP;
END $$;
