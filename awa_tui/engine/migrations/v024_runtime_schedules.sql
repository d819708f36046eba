-- v024: schedules made at run time (S64).
--
-- A schedule row says where its definition comes from: 'code' (a process's `periodic`,
-- written by sync, or an owner's manifest, written by reconciliation) or 'api' (made at run
-- time through the schedule API or `awa-tui cron create`). Code sync and reconciliation
-- never write, retire or delete an 'api' row (engine/ownership/api_schedules.py, reconcile.py); the
-- fire path reads no new column (its statements are unchanged).
--
-- Every existing row is code's: the default fills them without rewriting the table.
ALTER TABLE awa.cron_jobs
    ADD COLUMN origin text NOT NULL DEFAULT 'code'
        CONSTRAINT cron_jobs_origin_known CHECK (origin IN ('code', 'api'));

-- What the API may change and code may not hangs on this column: a change of it (by hand:
-- no role of `awa-tui db grants` may UPDATE it) is audited like a definition change.
CREATE FUNCTION awa.cron_jobs_audit_origin() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM awa.audit_insert('redefine', NEW.name, jsonb_build_object('origin', OLD.origin),
                             jsonb_build_object('origin', NEW.origin), awa.audit_context_detail());
    RETURN NULL;
END;
$$;
REVOKE EXECUTE ON FUNCTION awa.cron_jobs_audit_origin() FROM PUBLIC;

CREATE TRIGGER cron_jobs_audit_origin
    AFTER UPDATE OF origin ON awa.cron_jobs
    FOR EACH ROW
    WHEN (OLD.origin IS DISTINCT FROM NEW.origin)
    EXECUTE FUNCTION awa.cron_jobs_audit_origin();

-- The creation of a run-time schedule is in the audit trail, written by the database like
-- every other change (its edits and its deletion already are: cron_jobs_audit, v006/v010):
-- one row per schedule, with the row as created. One statement per INSERT, set-based: a
-- bulk create of a million writes its audit rows in 40 statements, not a million calls
-- (each of which would also open a subtransaction in awa.audit_context_detail). A row of
-- code's is not audited at its creation (nothing existed to change).
CREATE FUNCTION awa.cron_jobs_audit_create() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    label text;
    detail jsonb;
BEGIN
    IF NOT EXISTS (SELECT FROM created WHERE origin = 'api') THEN
        RETURN NULL;  -- a sync's or a reconciliation's insert
    END IF;
    label := awa.audit_label();
    detail := awa.audit_context_detail();
    INSERT INTO awa.audit_log (operator, action, target, before, after, detail)
    SELECT label, 'create', n.name, NULL, to_jsonb(n), detail || jsonb_build_object('owner', n.owner)
    FROM created n WHERE n.origin = 'api'
    ORDER BY n.name;
    RETURN NULL;
END;
$$;
REVOKE EXECUTE ON FUNCTION awa.cron_jobs_audit_create() FROM PUBLIC;

CREATE TRIGGER cron_jobs_audit_create
    AFTER INSERT ON awa.cron_jobs
    REFERENCING NEW TABLE AS created
    FOR EACH STATEMENT
    EXECUTE FUNCTION awa.cron_jobs_audit_create();

-- A deletion's audit (v006: `remove`, the row as it was), set-based in the same way: one
-- statement per DELETE instead of a call per row (a call of awa.audit_insert plans its
-- INSERT every time: deleting 100k schedules at run time took most of a minute in it).
-- The entries are the same: one per schedule, in name order.
CREATE FUNCTION awa.cron_jobs_audit_remove() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    label text := awa.audit_label();
    detail jsonb := awa.audit_context_detail();
BEGIN
    INSERT INTO awa.audit_log (operator, action, target, before, after, detail)
    SELECT label, 'remove', o.name, to_jsonb(o), NULL, detail
    FROM removed o
    ORDER BY o.name;
    RETURN NULL;
END;
$$;
REVOKE EXECUTE ON FUNCTION awa.cron_jobs_audit_remove() FROM PUBLIC;

DROP TRIGGER cron_jobs_audit_delete ON awa.cron_jobs;
CREATE TRIGGER cron_jobs_audit_delete
    AFTER DELETE ON awa.cron_jobs
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT
    EXECUTE FUNCTION awa.cron_jobs_audit_remove();
