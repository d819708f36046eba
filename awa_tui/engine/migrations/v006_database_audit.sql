-- v006: the database writes the audit trail itself (S20).
--
-- Every change to operator-controlled state writes its audit row from a trigger, in the
-- same transaction, whoever made it: our code, a hand-written UPDATE, a role that set the
-- awa.operator GUC. Our code only declares context (label, action name, detail) through
-- awa.begin_action; the row's `at` and session columns are stamped by the database.
-- The fire path (last_enqueued_at / next_fire_at only) never enters any of these
-- functions: each trigger lists its columns (UPDATE OF ...) and filters in a WHEN clause,
-- both evaluated in C.

ALTER TABLE awa.audit_log
    ADD COLUMN db_user          text,     -- session_user: the login that acted
    ADD COLUMN client_addr      inet,     -- inet_client_addr(); NULL over a Unix socket
    ADD COLUMN application_name text,
    ADD COLUMN backend_pid      integer;

-- `at` and the session columns are the database's, never the writer's (no backdating).
CREATE FUNCTION awa.audit_log_stamp() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    NEW.at := now();
    NEW.db_user := session_user;
    NEW.client_addr := inet_client_addr();
    NEW.application_name := current_setting('application_name', true);
    NEW.backend_pid := pg_backend_pid();
    RETURN NEW;
END;
$$;

CREATE TRIGGER audit_log_stamp
    BEFORE INSERT ON awa.audit_log
    FOR EACH ROW EXECUTE FUNCTION awa.audit_log_stamp();

-- The label recorded: the operator's, else an engine actor's (awa-sync, awa-reconciler),
-- else the login itself.
CREATE FUNCTION awa.audit_label() RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(nullif(current_setting('awa.operator', true), ''),
                    nullif(current_setting('awa.label', true), ''),
                    session_user::text)
$$;

-- The detail our code declared for this transaction (a JSON object), else {}.
CREATE FUNCTION awa.audit_context_detail() RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    raw text := nullif(current_setting('awa.detail', true), '');
    value jsonb;
BEGIN
    IF raw IS NULL THEN
        RETURN '{}'::jsonb;
    END IF;
    BEGIN
        value := raw::jsonb;
    EXCEPTION WHEN invalid_text_representation THEN
        -- A hand-set detail that is not JSON is kept as text, never lost nor fatal.
        RETURN jsonb_build_object('declared', raw);
    END;
    RETURN CASE WHEN jsonb_typeof(value) = 'object' THEN value ELSE jsonb_build_object('declared', value) END;
END;
$$;

CREATE FUNCTION awa.audit_insert(action text, target text, before jsonb, after jsonb, detail jsonb)
RETURNS bigint
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO awa.audit_log (operator, action, target, before, after, detail)
    VALUES (awa.audit_label(), action, target, before, after, coalesce(detail, '{}'::jsonb))
    RETURNING id
$$;

-- The gate our code passes through at the start of every operator action: it declares the
-- label, the action and its detail for the triggers. Hand-written SQL needs no gate (it is
-- audited all the same); a role without EXECUTE here is one the console treats as read-only.
CREATE FUNCTION awa.begin_action(label text, action text, detail jsonb DEFAULT '{}'::jsonb)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF coalesce(label, '') = '' OR coalesce(action, '') = '' THEN
        RAISE EXCEPTION 'awa.begin_action: an operator label and an action are required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM set_config('awa.operator', label, true);
    PERFORM set_config('awa.action', action, true);
    PERFORM set_config('awa.detail', coalesce(detail, '{}'::jsonb)::text, true);
END;
$$;

-- Actions that change no audited row (a manual trigger inserts a job, a drain cancels
-- jobs, an owner-wide action has one summary row besides one row per schedule). Only
-- these names, only after begin_action, and stamped like every other row.
CREATE FUNCTION awa.record_event(action text, target text, before jsonb, after jsonb, detail jsonb)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF action NOT IN ('trigger', 'queue_drain', 'retire_owner', 'restore_owner') THEN
        RAISE EXCEPTION 'awa.record_event: % is not an event (state changes are audited by the database)', action
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF coalesce(current_setting('awa.action', true), '') <> action THEN
        RAISE EXCEPTION 'awa.record_event: call awa.begin_action(operator, %, ...) first', action
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN awa.audit_insert(action, target, before, after, detail);
END;
$$;

-- --- schedules ------------------------------------------------------------------------

CREATE FUNCTION awa.cron_jobs_audit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    declared text := nullif(current_setting('awa.action', true), '');
    kinds text[] := '{}';
    action text;
    before jsonb;
    after jsonb;
    detail jsonb := awa.audit_context_detail();
    def_old jsonb;
    def_new jsonb;
    changed jsonb := '{}'::jsonb;
    col text;
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM awa.audit_insert('remove', OLD.name, to_jsonb(OLD), NULL, detail);
        RETURN NULL;
    END IF;
    IF OLD.paused_at IS NULL AND NEW.paused_at IS NOT NULL THEN
        kinds := kinds || 'pause'::text;
    ELSIF OLD.paused_at IS NOT NULL AND NEW.paused_at IS NULL THEN
        kinds := kinds || 'resume'::text;
    ELSIF OLD.paused_at IS DISTINCT FROM NEW.paused_at OR OLD.paused_by IS DISTINCT FROM NEW.paused_by THEN
        kinds := kinds || 'pause_edit'::text;
    END IF;
    IF OLD.retired_at IS NULL AND NEW.retired_at IS NOT NULL THEN
        kinds := kinds || 'retire'::text;
    ELSIF OLD.retired_at IS NOT NULL AND NEW.retired_at IS NULL THEN
        kinds := kinds || 'restore'::text;
    ELSIF OLD.retired_at IS DISTINCT FROM NEW.retired_at OR OLD.retired_by IS DISTINCT FROM NEW.retired_by THEN
        kinds := kinds || 'retire_edit'::text;
    END IF;
    IF OLD.owner IS NULL AND NEW.owner IS NOT NULL THEN
        kinds := kinds || 'adopt'::text;
        detail := detail || jsonb_build_object('owner', NEW.owner);
    ELSIF OLD.owner IS NOT NULL AND NEW.owner IS NULL THEN
        kinds := kinds || 'disown'::text;
        detail := detail || jsonb_build_object('from_owner', OLD.owner);
    ELSIF OLD.owner IS DISTINCT FROM NEW.owner THEN
        kinds := kinds || 'transfer'::text;
        detail := detail || jsonb_build_object('from_owner', OLD.owner, 'to_owner', NEW.owner);
    END IF;
    def_old := jsonb_build_object(
        'cron_expr', OLD.cron_expr, 'timezone', OLD.timezone, 'kind', OLD.kind, 'queue', OLD.queue,
        'args', OLD.args, 'priority', OLD.priority, 'max_attempts', OLD.max_attempts,
        'tags', to_jsonb(OLD.tags), 'metadata', OLD.metadata, 'missed_fire_policy', OLD.missed_fire_policy);
    def_new := jsonb_build_object(
        'cron_expr', NEW.cron_expr, 'timezone', NEW.timezone, 'kind', NEW.kind, 'queue', NEW.queue,
        'args', NEW.args, 'priority', NEW.priority, 'max_attempts', NEW.max_attempts,
        'tags', to_jsonb(NEW.tags), 'metadata', NEW.metadata, 'missed_fire_policy', NEW.missed_fire_policy);
    FOR col IN SELECT jsonb_object_keys(def_new) LOOP
        IF def_old -> col IS DISTINCT FROM def_new -> col THEN
            changed := changed || jsonb_build_object(col, true);
        END IF;
    END LOOP;
    IF changed <> '{}'::jsonb THEN
        kinds := kinds || 'redefine'::text;
    END IF;
    IF cardinality(kinds) = 0 THEN
        RETURN NULL;  -- the WHEN clause let through a no-op (e.g. paused_by rewritten as is)
    END IF;
    -- Our code names what it did; a declared name is kept only when it describes this
    -- very change, so a hand-set GUC can pick a synonym but never disguise the change.
    action := array_to_string(kinds, '+');
    IF declared IS NOT NULL AND cardinality(kinds) = 1 AND (
        declared = kinds[1]
        OR (kinds[1] = 'retire' AND declared IN ('retire_owner', 'auto_retire'))
        OR (kinds[1] = 'restore' AND declared = 'restore_owner')
        OR (kinds[1] = 'redefine' AND declared = 'sync_definition')) THEN
        action := declared;
    END IF;
    IF kinds = ARRAY['redefine'] THEN
        -- A definition change: just the columns that changed, like the plan shows them.
        SELECT jsonb_object_agg(k, def_old -> k), jsonb_object_agg(k, def_new -> k)
          INTO before, after FROM jsonb_object_keys(changed) AS k;
    ELSE
        before := jsonb_build_object(
            'owner', OLD.owner, 'retired_at', OLD.retired_at, 'retired_by', OLD.retired_by,
            'paused_at', OLD.paused_at, 'paused_by', OLD.paused_by, 'last_enqueued_at', OLD.last_enqueued_at);
        after := jsonb_build_object(
            'owner', NEW.owner, 'retired_at', NEW.retired_at, 'retired_by', NEW.retired_by,
            'paused_at', NEW.paused_at, 'paused_by', NEW.paused_by, 'last_enqueued_at', NEW.last_enqueued_at);
        IF changed <> '{}'::jsonb THEN
            SELECT before || jsonb_object_agg(k, def_old -> k), after || jsonb_object_agg(k, def_new -> k)
              INTO before, after FROM jsonb_object_keys(changed) AS k;
        END IF;
    END IF;
    PERFORM awa.audit_insert(action, NEW.name, before, after, detail);
    RETURN NULL;
END;
$$;

-- AFTER, so a change the fence suppressed (RETURN NULL) is not recorded, and the row is
-- recorded as it was finally written (after every BEFORE trigger).
CREATE TRIGGER cron_jobs_audit
    AFTER UPDATE OF paused_at, paused_by, retired_at, retired_by, owner,
                    cron_expr, timezone, kind, queue, args, priority, max_attempts, tags, metadata,
                    missed_fire_policy
    ON awa.cron_jobs
    FOR EACH ROW
    WHEN (
        (OLD.paused_at, OLD.paused_by, OLD.retired_at, OLD.retired_by, OLD.owner)
            IS DISTINCT FROM (NEW.paused_at, NEW.paused_by, NEW.retired_at, NEW.retired_by, NEW.owner)
        OR (OLD.cron_expr, OLD.timezone, OLD.kind, OLD.queue, OLD.args, OLD.priority, OLD.max_attempts,
            OLD.tags, OLD.metadata, OLD.missed_fire_policy)
            IS DISTINCT FROM
           (NEW.cron_expr, NEW.timezone, NEW.kind, NEW.queue, NEW.args, NEW.priority, NEW.max_attempts,
            NEW.tags, NEW.metadata, NEW.missed_fire_policy)
    )
    EXECUTE FUNCTION awa.cron_jobs_audit();

CREATE TRIGGER cron_jobs_audit_delete
    AFTER DELETE ON awa.cron_jobs
    FOR EACH ROW EXECUTE FUNCTION awa.cron_jobs_audit();

-- --- queues ---------------------------------------------------------------------------

CREATE FUNCTION awa.queue_meta_audit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    was boolean := CASE WHEN TG_OP = 'INSERT' THEN false ELSE OLD.paused END;
    now_paused boolean := CASE WHEN TG_OP = 'DELETE' THEN false ELSE NEW.paused END;
    action text;
BEGIN
    action := CASE WHEN NOT was AND now_paused THEN 'queue_pause'
                   WHEN was AND NOT now_paused THEN 'queue_resume'
                   ELSE 'queue_pause_edit' END;
    PERFORM awa.audit_insert(
        action, 'queue:' || CASE WHEN TG_OP = 'DELETE' THEN OLD.queue ELSE NEW.queue END,
        CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE to_jsonb(OLD) END,
        CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE to_jsonb(NEW) END,
        awa.audit_context_detail());
    RETURN NULL;
END;
$$;

CREATE TRIGGER queue_meta_audit
    AFTER UPDATE OF paused, paused_at, paused_by ON awa.queue_meta
    FOR EACH ROW
    WHEN ((OLD.paused, OLD.paused_at, OLD.paused_by) IS DISTINCT FROM (NEW.paused, NEW.paused_at, NEW.paused_by))
    EXECUTE FUNCTION awa.queue_meta_audit();
-- Our code inserts a queue's row unpaused first; a row born paused, or a paused row
-- deleted (which resumes the queue), is a pause or resume too.
CREATE TRIGGER queue_meta_audit_insert
    AFTER INSERT ON awa.queue_meta
    FOR EACH ROW WHEN (NEW.paused)
    EXECUTE FUNCTION awa.queue_meta_audit();
CREATE TRIGGER queue_meta_audit_delete
    AFTER DELETE ON awa.queue_meta
    FOR EACH ROW WHEN (OLD.paused)
    EXECUTE FUNCTION awa.queue_meta_audit();

-- --- owners ---------------------------------------------------------------------------
-- The certificate and the agreement clock are the engine's own bookkeeping, rewritten by
-- publications, reconciliation and operator actions (whose consequences, retirements and
-- definition syncs, are audited row by row above). A change of them outside the engine,
-- which could hurry a retirement or skip a check, is audited.

CREATE FUNCTION awa.owners_audit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF coalesce(current_setting('awa.operator', true), '') <> ''
       OR coalesce(current_setting('awa.manager', true), '') <> ''
       OR coalesce(current_setting('awa.label', true), '') <> '' THEN
        RETURN NULL;  -- written by the engine under its context
    END IF;
    PERFORM awa.audit_insert(
        CASE TG_OP WHEN 'INSERT' THEN 'owner_create' WHEN 'DELETE' THEN 'owner_delete' ELSE 'owner_edit' END,
        'owner:' || CASE WHEN TG_OP = 'DELETE' THEN OLD.owner ELSE NEW.owner END,
        CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE to_jsonb(OLD) - 'created_at' - 'updated_at' END,
        CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE to_jsonb(NEW) - 'created_at' - 'updated_at' END,
        awa.audit_context_detail());
    RETURN NULL;
END;
$$;

CREATE TRIGGER owners_audit
    AFTER UPDATE OF owner, certificate_hash, certificate_size, agreement_hash, agreement_since ON awa.owners
    FOR EACH ROW
    WHEN ((OLD.owner, OLD.certificate_hash, OLD.certificate_size, OLD.agreement_hash, OLD.agreement_since)
          IS DISTINCT FROM
          (NEW.owner, NEW.certificate_hash, NEW.certificate_size, NEW.agreement_hash, NEW.agreement_since))
    EXECUTE FUNCTION awa.owners_audit();
CREATE TRIGGER owners_audit_insert
    AFTER INSERT ON awa.owners
    FOR EACH ROW WHEN (NEW.certificate_hash IS NOT NULL OR NEW.agreement_since IS NOT NULL)
    EXECUTE FUNCTION awa.owners_audit();
CREATE TRIGGER owners_audit_delete
    AFTER DELETE ON awa.owners
    FOR EACH ROW EXECUTE FUNCTION awa.owners_audit();

-- Writing the audit trail goes through the triggers and these functions; calling them
-- is granted explicitly (`awa-tui db grants`), never to PUBLIC.
REVOKE EXECUTE ON FUNCTION awa.begin_action(text, text, jsonb) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION awa.record_event(text, text, jsonb, jsonb, jsonb) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION awa.audit_insert(text, text, jsonb, jsonb, jsonb) FROM PUBLIC;
