CREATE OR REPLACE FUNCTION awa.check_target(target text) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    scope text[] := awa.caller_scope();
BEGIN
    -- A team's role (v032) acts on its owners' schedules and their jobs only.
    IF scope IS NOT NULL AND NOT awa.target_in_scope(target, scope) THEN
        RAISE EXCEPTION 'your role may act only on the schedules of %, not on %',
            array_to_string(scope, ', '), awa.escaped(target)
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END;
$$;
