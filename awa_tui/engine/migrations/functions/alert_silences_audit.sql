-- A silence is audited under what it silences: the schedule's name, `owner:O` or
-- `filter:EXPR` (v028), with its span and reason.
CREATE OR REPLACE FUNCTION awa.alert_silences_audit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM awa.audit_insert('alert_silence',
        coalesce(NEW.name, 'owner:' || NEW.owner, 'filter:' || NEW.filter), NULL,
        jsonb_strip_nulls(jsonb_build_object('starts_at', NEW.starts_at, 'until', NEW.until, 'reason', NEW.reason,
                                             'owner', NEW.owner, 'filter', NEW.filter)),
        awa.audit_context_detail());
    RETURN NULL;
END;
$$;
