-- Undoes v033_team_alerts.sql: the alert tables leave row-level security. A team's role
-- first loses what it may read of them (without its policy it would read every team's).
DO $$
DECLARE r record; t text;
BEGIN
    FOR r IN SELECT DISTINCT g.role FROM awa.owner_grants g JOIN pg_roles m ON m.rolname = g.role LOOP
        EXECUTE format('REVOKE ALL ON awa.alert_outbox, awa.alert_deliveries, awa.alert_silences, '
                       'awa.fleet_transitions, awa.alert_deliverer FROM %I', r.role);
    END LOOP;
    FOREACH t IN ARRAY ARRAY['alert_outbox', 'alert_deliveries', 'alert_silences']
    LOOP
        FOR r IN SELECT p.policyname FROM pg_policies p WHERE p.schemaname = 'awa' AND p.tablename = t LOOP
            EXECUTE format('DROP POLICY %I ON awa.%I', r.policyname, t);
        END LOOP;
        EXECUTE format('ALTER TABLE awa.%I DISABLE ROW LEVEL SECURITY', t);
    END LOOP;
END $$;
