-- Undoes v023_alert_outbox.sql (`awa-tui migrate --down-to 22` or lower): no sinks, no
-- outbox, no silences. Alerts not yet delivered are lost with them (a release before v023
-- delivers none); the health transitions they came from stay.
DROP TRIGGER health_transitions_alert_outbox ON awa.health_transitions;
DROP FUNCTION awa.alert_outbox_enqueue();
DROP TABLE awa.alert_deliveries;
DROP TABLE awa.alert_outbox;
DROP TABLE awa.alert_silences;
DROP TABLE awa.alert_sinks;
DROP FUNCTION awa.alert_sinks_audit();
DROP FUNCTION awa.alert_silences_audit();
DROP FUNCTION awa.alert_severity(text);
