-- v004: poison-row guards (S15) and size caps for hand-written rows.
--
-- A row written by hand can hold anything its column types allow. Postgres accepts
-- timestamps that Python cannot load (infinity, BC dates, year 10000+), and one such value
-- in a result set fails the whole query: every pass, every view. These functions let the
-- evaluator and the read models isolate such rows in SQL, with no per-row Python work for
-- healthy rows.

-- The instants every reader can load in any session time zone (a day of margin either
-- side for the zone offset). Inlined by the planner: plain expressions, evaluated in C.
CREATE FUNCTION awa.ts_loadable(t timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT t >= '0001-01-03 00:00:00+00'::timestamptz AND t <= '9999-12-29 00:00:00+00'::timestamptz $$;

-- The value, or NULL when it cannot be loaded (the row's fault says why).
CREATE FUNCTION awa.safe_ts(t timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN awa.ts_loadable(t) THEN t END $$;

-- Text from a job's metadata as an instant, or NULL when it is not one (PG 15 has no
-- pg_input_is_valid). Runs only on the few rows a view shows.
CREATE FUNCTION awa.try_timestamptz(t text) RETURNS timestamptz
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
BEGIN
    RETURN awa.safe_ts(t::timestamptz);
EXCEPTION WHEN others THEN
    RETURN NULL;
END;
$$;

-- Why a stored schedule row cannot fire, from what SQL can judge (NULL: nothing found).
-- The cron expression, zone and policy are judged by the engine's parser on top of this
-- (awa_tui.engine.schedules.definition.row_fault): together, the one definition of BROKEN that the
-- evaluator and every view share. Messages name no stored text, only numbers and instants.
CREATE FUNCTION awa.cron_job_fault(
    last_enqueued_at timestamptz, next_fire_at timestamptz, created_at timestamptz,
    updated_at timestamptz, paused_at timestamptz, retired_at timestamptz,
    args jsonb, metadata jsonb, priority smallint, max_attempts smallint,
    kind text, queue text, tags text[]
) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
SELECT CASE
    WHEN NOT awa.ts_loadable(last_enqueued_at)
        THEN 'last_enqueued_at ' || last_enqueued_at::text || ' is outside the supported range 0001-01-03..9999-12-29 UTC'
    WHEN NOT awa.ts_loadable(next_fire_at)
        THEN 'next_fire_at ' || next_fire_at::text || ' is outside the supported range 0001-01-03..9999-12-29 UTC'
    WHEN NOT awa.ts_loadable(created_at)
        THEN 'created_at ' || created_at::text || ' is outside the supported range 0001-01-03..9999-12-29 UTC'
    WHEN NOT awa.ts_loadable(updated_at)
        THEN 'updated_at ' || updated_at::text || ' is outside the supported range 0001-01-03..9999-12-29 UTC'
    WHEN NOT awa.ts_loadable(paused_at)
        THEN 'paused_at ' || paused_at::text || ' is outside the supported range 0001-01-03..9999-12-29 UTC'
    WHEN NOT awa.ts_loadable(retired_at)
        THEN 'retired_at ' || retired_at::text || ' is outside the supported range 0001-01-03..9999-12-29 UTC'
    WHEN jsonb_typeof(args) <> 'object'
        THEN 'args: must be a JSON object, got a JSON ' || jsonb_typeof(args)
    WHEN jsonb_typeof(metadata) <> 'object'
        THEN 'metadata: must be a JSON object, got a JSON ' || jsonb_typeof(metadata)
    WHEN priority NOT BETWEEN 1 AND 4
        THEN 'priority: must be an integer 1..4, got ' || priority
    WHEN max_attempts NOT BETWEEN 1 AND 1000
        THEN 'max_attempts: must be an integer 1..1000, got ' || max_attempts
    WHEN char_length(kind) NOT BETWEEN 1 AND 200
        THEN 'kind: must be 1..200 characters, got ' || char_length(kind)
    WHEN char_length(queue) NOT BETWEEN 1 AND 200
        THEN 'queue: must be 1..200 characters, got ' || char_length(queue)
    WHEN array_position(tags, NULL) IS NOT NULL
        THEN 'tags: must not hold NULL'
END
$$;

-- For psql: SELECT name, awa.cron_job_fault(c) FROM awa.cron_jobs c;
CREATE FUNCTION awa.cron_job_fault(c awa.cron_jobs) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
SELECT awa.cron_job_fault(c.last_enqueued_at, c.next_fire_at, c.created_at, c.updated_at,
                          c.paused_at, c.retired_at, c.args, c.metadata, c.priority,
                          c.max_attempts, c.kind, c.queue, c.tags)
$$;

-- Size caps and lookalike names for rows written by hand (registration refuses the same
-- values first, with the same words). A trigger, not a CHECK constraint: a CHECK is
-- re-checked on every UPDATE of a row, so a row that predates this migration would fail
-- its next fire; the WHEN clauses (evaluated in C) let a fire, which changes none of
-- these columns, and a healthy insert never enter PL/pgSQL.

-- Text with control, bidi and zero-width characters as \uXXXX, cut to `width` characters.
CREATE FUNCTION awa.escaped(t text, width integer DEFAULT 60) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    out text := '';
    ch text;
BEGIN
    FOREACH ch IN ARRAY regexp_split_to_array(left(t, width), '') LOOP
        IF ch ~ '[\u0001-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]' THEN
            out := out || '\u' || lpad(to_hex(ascii(ch)), 4, '0');
        ELSE
            out := out || ch;
        END IF;
    END LOOP;
    IF char_length(t) > width THEN
        out := out || '...';
    END IF;
    RETURN '"' || out || '"';
END;
$$;

CREATE FUNCTION awa.cron_jobs_size_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    -- On UPDATE only the changed columns are judged: a row that predates this migration
    -- can still be paused, edited elsewhere, or repaired column by column.
    fresh boolean := TG_OP = 'INSERT';
BEGIN
    IF (fresh OR NEW.name IS DISTINCT FROM OLD.name)
       AND NEW.name ~ '[\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]' THEN
        RAISE EXCEPTION 'name: must not contain bidi controls or zero-width characters: %',
            awa.escaped(NEW.name) USING ERRCODE = 'check_violation';
    END IF;
    IF fresh OR NEW.cron_expr IS DISTINCT FROM OLD.cron_expr THEN
        IF char_length(NEW.cron_expr) > 256 THEN
            RAISE EXCEPTION 'cron_expr: at most 256 characters, got % (% characters)',
                awa.escaped(NEW.cron_expr), char_length(NEW.cron_expr) USING ERRCODE = 'check_violation';
        END IF;
        IF NEW.cron_expr ~ '[\u0001-\u001f\u007f-\u009f]' THEN
            RAISE EXCEPTION 'cron_expr: must not contain newlines or control characters: %',
                awa.escaped(NEW.cron_expr) USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    IF (fresh OR NEW.args IS DISTINCT FROM OLD.args) AND octet_length(NEW.args::text) > 262144 THEN
        RAISE EXCEPTION 'args: at most 262144 bytes as JSON, got % bytes',
            octet_length(NEW.args::text) USING ERRCODE = 'check_violation';
    END IF;
    IF (fresh OR NEW.metadata IS DISTINCT FROM OLD.metadata) AND octet_length(NEW.metadata::text) > 262144 THEN
        RAISE EXCEPTION 'metadata: at most 262144 bytes as JSON, got % bytes',
            octet_length(NEW.metadata::text) USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER cron_jobs_size_guard_insert
    BEFORE INSERT ON awa.cron_jobs
    FOR EACH ROW
    WHEN (
        NEW.name ~ '[\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]'
        OR char_length(NEW.cron_expr) > 256
        OR NEW.cron_expr ~ '[\u0001-\u001f\u007f-\u009f]'
        OR octet_length(NEW.args::text) > 262144
        OR octet_length(NEW.metadata::text) > 262144
    )
    EXECUTE FUNCTION awa.cron_jobs_size_guard();

CREATE TRIGGER cron_jobs_size_guard_update
    BEFORE UPDATE OF name, cron_expr, args, metadata ON awa.cron_jobs
    FOR EACH ROW
    WHEN (
        (NEW.name IS DISTINCT FROM OLD.name
         AND NEW.name ~ '[\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]')
        OR (NEW.cron_expr IS DISTINCT FROM OLD.cron_expr
            AND (char_length(NEW.cron_expr) > 256 OR NEW.cron_expr ~ '[\u0001-\u001f\u007f-\u009f]'))
        OR (NEW.args IS DISTINCT FROM OLD.args AND octet_length(NEW.args::text) > 262144)
        OR (NEW.metadata IS DISTINCT FROM OLD.metadata AND octet_length(NEW.metadata::text) > 262144)
    )
    EXECUTE FUNCTION awa.cron_jobs_size_guard();
