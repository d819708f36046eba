-- Undoes v036_owner_code_index.sql (`awa-tui migrate --down-to 35` or lower): the
-- certificate's count reads the owner index again.
DROP INDEX IF EXISTS awa.cron_jobs_owner_code_idx;
