-- v029: awa.may_lead (v019) granted as every SECURITY DEFINER function is since v021:
-- explicitly, not to PUBLIC. A database made by a build where fence_by_role was v019 ran it
-- before release_policy existed, so it found may_lead afterwards with PUBLIC's default
-- EXECUTE and no grant to its runtime role; on every other database this changes nothing.
REVOKE EXECUTE ON FUNCTION awa.may_lead(uuid) FROM PUBLIC;
-- The runtime role of a layout (the grantee of INSERT on awa.cron_jobs) asks it: the
-- election's own functions call it as the runtime.
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT DISTINCT a.grantee::regrole AS role FROM pg_class c, aclexplode(c.relacl) a
             WHERE c.oid = 'awa.cron_jobs'::regclass AND a.privilege_type = 'INSERT'
               AND a.grantee <> 0 AND a.grantee <> c.relowner
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION awa.may_lead(uuid) TO %s', r.role);
    END LOOP;
END $$;
