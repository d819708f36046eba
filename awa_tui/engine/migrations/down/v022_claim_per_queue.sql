-- Undoes v022_claim_per_queue.sql: v020's index over every queue comes back, which the
-- claim of a release before v022 reads (built here, on a table that may be large).
CREATE INDEX jobs_claim_any_idx ON awa.jobs (priority, run_at, id)
    WHERE state IN ('available', 'retryable');
