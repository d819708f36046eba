-- An alert's severity words: critical (a schedule broken, failing or missed; no leader, a
-- stalled leader), warning (a schedule late), NULL (no alert).
CREATE OR REPLACE FUNCTION awa.alert_severity(health text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog AS $$
    SELECT CASE WHEN health IN ('broken', 'failing', 'missed', 'no_leader', 'stalled') THEN 'critical'
                WHEN health = 'late' THEN 'warning' END
$$;
