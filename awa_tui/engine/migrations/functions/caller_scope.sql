CREATE OR REPLACE FUNCTION awa.caller_scope() RETURNS text[]
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    -- The owners the caller may act on, NULL when every one. The login's scope
    -- (session_user) narrowed by the role it took with SET ROLE (the `role` setting, which a
    -- SECURITY DEFINER function does not change and cannot set): a superuser's SET ROLE into
    -- a team's role is that team's, and a SET ROLE to a wider role widens nothing.
    SELECT CASE WHEN login IS NULL THEN taken
                WHEN taken IS NULL THEN login
                ELSE ARRAY(SELECT unnest(login) INTERSECT SELECT unnest(taken) ORDER BY 1) END
    FROM (SELECT awa.owner_scope_of(session_user) AS login,
                 CASE WHEN current_setting('role') = 'none' THEN NULL
                      ELSE awa.owner_scope_of(current_setting('role')::name) END AS taken) s
$$;
