-- v020: what the job runner needs of a job row.
-- cancel_requested_at: an operator asked to cancel a running job; the runtime running it
-- polls its own running jobs for this (through jobs_running_idx) and stops the handler
-- (cooperatively). Cleared by the claim, so a retried job starts without it.
-- unique_key: an enqueued job's dedupe key; while a job with the key waits or runs, an
-- enqueue with the same key adds nothing (the partial unique index says so in one probe).
-- Adding nullable columns without a default rewrites nothing.
ALTER TABLE awa.jobs ADD COLUMN cancel_requested_at timestamptz;
ALTER TABLE awa.jobs ADD COLUMN unique_key text;
CREATE UNIQUE INDEX jobs_unique_key_idx ON awa.jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('available', 'running', 'retryable');
-- The claim's order without a named queue: priority, run_at, id. jobs_claim_idx leads with
-- the queue, so a claim over every queue could not use it and sorted the whole backlog for
-- each batch (a sequential scan and an external sort: 1.6 s per claim at 1.6M waiting
-- jobs). This one serves it in order and stops at the batch: the same cost at 1k and 1M.
CREATE INDEX jobs_claim_any_idx ON awa.jobs (priority, run_at, id)
    WHERE state IN ('available', 'retryable');
-- The kinds a runtime's worker runs (NULL: a runtime that runs no worker, or one older than
-- this column): `check` names waiting jobs of a kind no live runtime serves.
ALTER TABLE awa.runtime_instances ADD COLUMN handled_kinds text[];
