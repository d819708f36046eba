-- v032: one database, many teams. A team's role (`awa-tui db grants --owner-role ROLE
-- --owners a,b`) sees and acts on the schedules of its owners only, their jobs, ledger,
-- health and audit entries, and nothing of another team's, however it asks (the console,
-- the CLI or psql): the database decides, with row-level security.
--
-- Which role may act on which owner. Written by `awa-tui db grants --owner-role` (as a
-- superuser), read by every role: `owner list` says who may act on what.
CREATE TABLE awa.owner_grants (
    role       text        NOT NULL,
    owner      text        NOT NULL,
    granted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (role, owner)
);
REVOKE ALL ON awa.owner_grants FROM PUBLIC;
COMMENT ON TABLE awa.owner_grants IS
    'Which owner-scoped role may act on which owner (one database, many teams): written by `awa-tui db grants --owner-role`, read by `owner list` and the row-level security policies.';

-- The owners a role may act on when it is a team's role (it has the privileges of a role
-- named here); NULL when it is not scoped: every other role, a superuser and a role that
-- bypasses row-level security see every row, as before. Not SECURITY DEFINER: a team's
-- policies call it as the team's role, which reads awa.owner_grants.
CREATE FUNCTION awa.owner_scope_of(who name) RETURNS text[]
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN r.rolsuper OR r.rolbypassrls THEN NULL ELSE
               (SELECT array_agg(DISTINCT g.owner ORDER BY g.owner)
                FROM awa.owner_grants g JOIN pg_roles m ON m.rolname = g.role
                WHERE pg_has_role(r.oid, m.oid, 'USAGE')) END
    FROM pg_roles r WHERE r.rolname = who
$$;

CREATE FUNCTION awa.owner_scope() RETURNS text[]
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT awa.owner_scope_of(current_user)
$$;

-- Whether an audited event's target (a schedule's name, `owner:NAME`, `job:ID`) belongs to
-- the owners of `scope`: awa.record_event asks it, as the schema's owner.
CREATE FUNCTION awa.target_in_scope(target text, scope text[]) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT EXISTS (SELECT 1 FROM awa.cron_jobs c WHERE c.name = target AND c.owner = ANY (scope))
        OR target = ANY (SELECT 'owner:' || o FROM unnest(scope) o)
        OR (target ~ '^job:[0-9]{1,18}$' AND EXISTS (
                SELECT 1 FROM awa.jobs j JOIN awa.cron_jobs c ON c.name = j.metadata ->> 'cron_name'
                WHERE j.id = substr(target, 5)::bigint AND c.owner = ANY (scope)))
$$;

-- The trail's events refuse a team's role another owner's target.
-- include: functions/record_event.sql

-- Row-level security on the tables whose rows belong to an owner. Every role sees and
-- changes every row, as before, through one permissive policy that is constant true (the
-- planner drops it: no per-row check, the fire statement's plan unchanged); a team's role
-- gets a restrictive policy of its own on each (awa_tui/engine/actions/grants.py
-- SCOPED_ROWS). The schema's owner and a superuser are not subject to it, so the
-- SECURITY DEFINER triggers still write the audit trail and the sync notes.
DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['cron_jobs', 'jobs', 'audit_log', 'ledger_pruned', 'fire_skips', 'cron_health',
                             'health_transitions', 'cron_jobs_changes', 'owners', 'fire_stats',
                             'runtime_instances', 'owner_grants']
    LOOP
        EXECUTE format('ALTER TABLE awa.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY every_row ON awa.%I USING (true) WITH CHECK (true)', t);
    END LOOP;
END $$;
