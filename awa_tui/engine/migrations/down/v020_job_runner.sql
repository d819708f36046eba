-- Undoing v020: the job runner's columns and indexes go; the schema is v019's again. An
-- enqueued job's dedupe key and an operator's pending cancel request are lost with them
-- (a release before v020 reads neither).
ALTER TABLE awa.runtime_instances DROP COLUMN handled_kinds;
DROP INDEX awa.jobs_claim_any_idx;
DROP INDEX awa.jobs_unique_key_idx;
ALTER TABLE awa.jobs DROP COLUMN unique_key;
ALTER TABLE awa.jobs DROP COLUMN cancel_requested_at;
