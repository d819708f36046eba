-- v036: what a certificate counts, counted from an index of its own.
--
-- Each authoritative runtime's reporter checks its owner's certificate every snapshot: the
-- certificate holds only while the owner's active schedules declared in code number what
-- it certified. Counted through the owner index, that read every schedule of the owner,
-- run-time ones included: about 200 ms every snapshot for an owner holding a million
-- schedules made at run time. This index holds only the rows the count wants (active and
-- declared in code), so the count reads them alone, from the index.
CREATE INDEX cron_jobs_owner_code_idx ON awa.cron_jobs (owner)
    WHERE origin = 'code' AND retired_at IS NULL AND owner IS NOT NULL;
