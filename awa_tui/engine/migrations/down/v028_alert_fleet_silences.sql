-- Undoes v028_alert_fleet_silences.sql: no fleet alerts (their outbox rows and deliveries
-- go too), no deliverer lease, silences of one schedule only (those of an owner or a filter
-- are dropped).
DROP TRIGGER fleet_transitions_alert_outbox ON awa.fleet_transitions;
DROP FUNCTION awa.fleet_alert_enqueue();
DROP TABLE awa.fleet_transitions;
DROP TABLE awa.alert_deliverer;
DELETE FROM awa.alert_outbox WHERE fleet;
ALTER TABLE awa.alert_outbox DROP COLUMN fleet;
CREATE OR REPLACE FUNCTION awa.alert_severity(health text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog AS $$
    SELECT CASE WHEN health IN ('broken', 'failing', 'missed') THEN 'critical'
                WHEN health = 'late' THEN 'warning' END
$$;
DELETE FROM awa.alert_silences WHERE name IS NULL;
ALTER TABLE awa.alert_silences DROP CONSTRAINT alert_silences_one_target;
ALTER TABLE awa.alert_silences DROP COLUMN filter;
ALTER TABLE awa.alert_silences DROP COLUMN owner;
ALTER TABLE awa.alert_silences ALTER COLUMN name SET NOT NULL;
CREATE OR REPLACE FUNCTION awa.alert_silences_audit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM awa.audit_insert('alert_silence', NEW.name, NULL,
        jsonb_build_object('starts_at', NEW.starts_at, 'until', NEW.until, 'reason', NEW.reason),
        awa.audit_context_detail());
    RETURN NULL;
END;
$$;
