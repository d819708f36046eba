-- v002: owner-scoped reconciliation (S22-S35): owner state, tombstone fences, and the
-- protocol lock pulled over every snapshot write.

-- One row per owner. The row lock serialises owner state (S32: after the protocol lock,
-- before schedule rows).
CREATE TABLE awa.owners (
    owner              text PRIMARY KEY,
    -- S31: the manifest hash last synchronised, and how many desired names it had.
    certificate_hash   text,
    certificate_size   integer,
    certified_at       timestamptz,
    -- S26: the manifest agreed on since agreement_since; agreement_seen_at is the last
    -- evidence. A gap longer than the freshness window restarts the clock.
    agreement_hash     text,
    agreement_since    timestamptz,
    agreement_seen_at  timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);

-- S27/S33: the update fence. It runs only for rows whose lifecycle changes, retired rows,
-- and definition changes of owned rows (the WHEN clause is evaluated in C), so a fire of
-- an active row (last_enqueued_at/next_fire_at only) never enters PL/pgSQL.
CREATE FUNCTION awa.cron_jobs_fence() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    operator_ctx text := coalesce(current_setting('awa.operator', true), '');
    manager_ctx  text := coalesce(current_setting('awa.manager', true), '');
    redefined boolean :=
        (NEW.cron_expr, NEW.timezone, NEW.kind, NEW.queue, NEW.args, NEW.priority,
         NEW.max_attempts, NEW.tags, NEW.metadata, NEW.missed_fire_policy)
        IS DISTINCT FROM
        (OLD.cron_expr, OLD.timezone, OLD.kind, OLD.queue, OLD.args, OLD.priority,
         OLD.max_attempts, OLD.tags, OLD.metadata, OLD.missed_fire_policy);
    lifecycle boolean :=
        NEW.retired_at IS DISTINCT FROM OLD.retired_at
        OR NEW.retired_by IS DISTINCT FROM OLD.retired_by
        OR NEW.owner IS DISTINCT FROM OLD.owner;
BEGIN
    IF lifecycle THEN
        IF operator_ctx <> '' THEN
            IF redefined THEN
                RAISE EXCEPTION 'schedule %: a lifecycle change must not redefine it', OLD.name;
            END IF;
            RETURN NEW;  -- adopt, transfer, retire, restore (audited by the engine)
        END IF;
        IF manager_ctx <> '' AND manager_ctx = OLD.owner AND NEW.owner = OLD.owner
           AND OLD.retired_at IS NULL AND NEW.retired_at IS NOT NULL AND NOT redefined THEN
            RETURN NEW;  -- automatic retirement by the owner's reconciliation (S26)
        END IF;
        IF OLD.retired_at IS NOT NULL THEN
            RETURN NULL;  -- reviving a tombstone without the operator context: no-op
        END IF;
        RAISE EXCEPTION 'schedule %: changing owner or retirement requires the operator context (use awa-tui)',
            OLD.name USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF OLD.retired_at IS NOT NULL THEN
        -- A tombstone never fires and is never redefined. Only an operator may change
        -- its pause bookkeeping (pause is kept across restore, S28).
        IF operator_ctx <> '' AND NOT redefined
           AND NEW.last_enqueued_at IS NOT DISTINCT FROM OLD.last_enqueued_at
           AND NEW.next_fire_at IS NOT DISTINCT FROM OLD.next_fire_at THEN
            RETURN NEW;
        END IF;
        RETURN NULL;
    END IF;
    IF redefined AND OLD.owner IS NOT NULL AND manager_ctx IS DISTINCT FROM OLD.owner THEN
        RETURN NULL;  -- S5: an additive or older UPSERT of an owned row is a quiet no-op
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER cron_jobs_fence
    BEFORE UPDATE ON awa.cron_jobs
    FOR EACH ROW
    WHEN (
        OLD.retired_at IS NOT NULL
        OR NEW.retired_at IS NOT NULL
        OR NEW.retired_by IS DISTINCT FROM OLD.retired_by
        OR NEW.owner IS DISTINCT FROM OLD.owner
        OR (OLD.owner IS NOT NULL
            AND (NEW.cron_expr, NEW.timezone, NEW.kind, NEW.queue, NEW.args, NEW.priority,
                 NEW.max_attempts, NEW.tags, NEW.metadata, NEW.missed_fire_policy)
                IS DISTINCT FROM
                (OLD.cron_expr, OLD.timezone, OLD.kind, OLD.queue, OLD.args, OLD.priority,
                 OLD.max_attempts, OLD.tags, OLD.metadata, OLD.missed_fire_policy))
    )
    EXECUTE FUNCTION awa.cron_jobs_fence();

-- S27: a tombstone is never physically deleted (there is no purge).
CREATE FUNCTION awa.cron_jobs_keep_tombstone() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'schedule % is retired: a retired schedule cannot be deleted', OLD.name;
END;
$$;

CREATE TRIGGER cron_jobs_keep_tombstone
    BEFORE DELETE ON awa.cron_jobs
    FOR EACH ROW
    WHEN (OLD.retired_at IS NOT NULL)
    EXECUTE FUNCTION awa.cron_jobs_keep_tombstone();

-- S32: every snapshot write, including one by an older binary that knows nothing of the
-- protocol, runs under the protocol lock (key = awa_tui.engine.db.PROTOCOL_LOCK_KEY).
-- The statement trigger fires before any row is locked, keeping the lock order.
CREATE FUNCTION awa.take_protocol_lock() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(418614673411);
    RETURN NULL;
END;
$$;

CREATE TRIGGER runtime_instances_protocol_lock
    BEFORE INSERT OR UPDATE OR DELETE ON awa.runtime_instances
    FOR EACH STATEMENT
    EXECUTE FUNCTION awa.take_protocol_lock();
CREATE TRIGGER runtime_instances_protocol_lock_truncate
    BEFORE TRUNCATE ON awa.runtime_instances
    FOR EACH STATEMENT
    EXECUTE FUNCTION awa.take_protocol_lock();
