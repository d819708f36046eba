-- v028: alerts about the fleet as a whole (S70), and silences by owner or filter (S71).
--
-- The fleet's health (ok, no_leader: nobody has led for longer than a grace; stalled: a
-- leader holds the lock but its lease or its passes stopped) is judged by every running
-- runtime's alerts loop; a change of it is one row of awa.fleet_transitions, written under
-- a transaction-scoped advisory lock by whichever runtime saw it first (so once, not once
-- per runtime or per second), and becomes an outbox row (fleet = true) with a delivery per
-- sink routed to every alert or by severity, by the trigger below, in that transaction.
-- With no leader a follower delivers: the deliverer holds awa.alert_deliverer's lease, the
-- leader whenever there is one, else one follower, so one runtime delivers at a time.

CREATE TABLE awa.fleet_transitions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL,
    from_state  text NOT NULL CONSTRAINT fleet_transitions_from CHECK (from_state IN ('ok', 'no_leader', 'stalled')),
    to_state    text NOT NULL CONSTRAINT fleet_transitions_to CHECK (to_state IN ('ok', 'no_leader', 'stalled')),
    reason      text NOT NULL,
    recorded_by uuid,  -- the runtime that saw it (awa.runtime_instances, pruned apart: no key)
    CONSTRAINT fleet_transitions_change CHECK (from_state <> to_state)
);

-- Who delivers alerts now: one row, a lease renewed by its holder.
CREATE TABLE awa.alert_deliverer (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    instance_id uuid,
    expires_at  timestamptz
);
INSERT INTO awa.alert_deliverer DEFAULT VALUES;

ALTER TABLE awa.alert_outbox ADD COLUMN fleet boolean NOT NULL DEFAULT false;
-- `check` finds the fleet's open alert's deliveries through it (a fleet's rows are few).
CREATE INDEX alert_outbox_fleet_idx ON awa.alert_outbox (transition_id) WHERE fleet;

-- include: functions/alert_severity.sql

-- A fleet transition's outbox row and its deliveries: to the sinks that take every alert or
-- route by severity (a fleet alert is critical, and each takes the recovery of what it took).
CREATE FUNCTION awa.fleet_alert_enqueue() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    WITH box AS (
        INSERT INTO awa.alert_outbox (transition_id, name, at, from_health, to_health, reason, fleet)
        SELECT t.id, 'fleet', t.at, t.from_state, t.to_state, t.reason, true
        FROM new_transitions t ORDER BY t.id
        RETURNING id
    )
    INSERT INTO awa.alert_deliveries (outbox_id, sink)
    SELECT b.id, s.name FROM box b JOIN awa.alert_sinks s ON s.route_by IN ('all', 'severity');
    RETURN NULL;
END;
$$;
CREATE TRIGGER fleet_transitions_alert_outbox
    AFTER INSERT ON awa.fleet_transitions
    REFERENCING NEW TABLE AS new_transitions
    FOR EACH STATEMENT EXECUTE FUNCTION awa.fleet_alert_enqueue();
REVOKE EXECUTE ON FUNCTION awa.fleet_alert_enqueue() FROM PUBLIC;

-- A silence names one schedule, or an owner's schedules (the owner the alert recorded), or
-- the schedules a filter of the console's grammar selects when the alert is delivered.
ALTER TABLE awa.alert_silences ALTER COLUMN name DROP NOT NULL;
ALTER TABLE awa.alert_silences ADD COLUMN owner text;
ALTER TABLE awa.alert_silences ADD COLUMN filter text;
ALTER TABLE awa.alert_silences ADD CONSTRAINT alert_silences_one_target CHECK (num_nonnulls(name, owner, filter) = 1);

-- include: functions/alert_silences_audit.sql
