CREATE OR REPLACE FUNCTION awa.cron_jobs_fence() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    operator_ctx text := awa.fence_capability('operator');
    manager_ctx  text := awa.fence_capability('manager');
    redefined boolean :=
        (NEW.cron_expr, NEW.timezone, NEW.kind, NEW.queue, NEW.args, NEW.priority,
         NEW.max_attempts, NEW.tags, NEW.metadata, NEW.missed_fire_policy,
         NEW.max_lateness, NEW.expect_success_within, NEW.max_consecutive_failures,
         NEW.pause_after_failures, NEW.cron_written, NEW.jitter_ms, NEW.overridden)
        IS DISTINCT FROM
        (OLD.cron_expr, OLD.timezone, OLD.kind, OLD.queue, OLD.args, OLD.priority,
         OLD.max_attempts, OLD.tags, OLD.metadata, OLD.missed_fire_policy,
         OLD.max_lateness, OLD.expect_success_within, OLD.max_consecutive_failures,
         OLD.pause_after_failures, OLD.cron_written, OLD.jitter_ms, OLD.overridden);
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
            RETURN NULL;  -- reviving a tombstone without the operator's capability: no-op
        END IF;
        RAISE EXCEPTION 'schedule %: changing owner or retirement requires an operator action (use awa-tui)',
            OLD.name USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF OLD.retired_at IS NOT NULL THEN
        IF operator_ctx <> '' AND NOT redefined
           AND NEW.last_enqueued_at IS NOT DISTINCT FROM OLD.last_enqueued_at
           AND NEW.next_fire_at IS NOT DISTINCT FROM OLD.next_fire_at THEN
            RETURN NEW;
        END IF;
        RETURN NULL;
    END IF;
    IF redefined AND OLD.owner IS NULL
       AND NOT (operator_ctx <> '' AND current_setting('awa.action', true) IN ('override', 'override_reset'))
       AND NOT has_table_privilege(CASE WHEN current_setting('role') = 'none' THEN session_user::text
                                        ELSE current_setting('role') END, 'awa.cron_jobs', 'INSERT') THEN
        -- v035: an unowned row's definition is its code's (a role that syncs, which may
        -- insert schedules: the runtime) or an operator's override; a hand-written UPDATE of
        -- it by another role (SET ROLE counted) is refused, not audited as a redefinition.
        RAISE EXCEPTION 'schedule %: its definition is its code''s; an operator overrides it (awa-tui cron override)',
            awa.escaped(OLD.name) USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF redefined AND OLD.owner IS NOT NULL AND operator_ctx <> ''
       AND current_setting('awa.action', true) IN ('override', 'override_reset') THEN
        RETURN NEW;  -- an operator's override of an owned row (or its reset)
    END IF;
    IF redefined AND OLD.owner IS NOT NULL AND manager_ctx IS DISTINCT FROM OLD.owner THEN
        RETURN NULL;  -- S5: an additive or older UPSERT of an owned row is a quiet no-op
    END IF;
    RETURN NEW;
END;
$$;
