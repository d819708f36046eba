CREATE OR REPLACE FUNCTION awa.action_label(wanted text) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    label text := awa.fence_capability('operator');
BEGIN
    -- The operator who passed the audit gate for `wanted` in this transaction, else an error.
    IF label = '' OR coalesce(current_setting('awa.action', true), '') <> wanted THEN
        RAISE EXCEPTION 'call awa.begin_action(operator, %, ...) first', wanted
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN label;
END;
$$;
