-- v033: a team reads its own alerts. A team's role (`awa-tui db grants --owner-role`, v032)
-- could read none of the alert tables, because the sinks hold webhook addresses, so `check`,
-- `alerts list` and the console's alerts screen failed for it. The alerts themselves, their
-- deliveries and silences hold no secret: they go under row-level security like the other
-- tables whose rows belong to an owner, and `db grants --owner-role` lets the team read the
-- rows of its own schedules (and the fleet's alerts, which concern every team). The sinks
-- stay closed to teams.
--
-- As in v032: every role keeps a permissive policy that is constant true (the planner drops
-- it), so the deliverer's statements plan as before; a team's restrictive policy is made by
-- `db grants --owner-role` (awa_tui/engine/actions/grants.py SCOPED_ROWS).
DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['alert_outbox', 'alert_deliveries', 'alert_silences']
    LOOP
        EXECUTE format('ALTER TABLE awa.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY every_row ON awa.%I USING (true) WITH CHECK (true)', t);
    END LOOP;
END $$;
