-- v017: autovacuum visits awa.cron_jobs after a few thousand updated rows, not after a
-- fifth of the table. Every fire moves next_fire_at, an indexed column, so no fire is a
-- HOT update: each leaves its old entry in cron_jobs_due_idx, and that entry's instant is
-- in the past, so every later due query (a bitmap scan, which never marks entries dead)
-- visits it until a vacuum removes it. With the server's default (20 % of the rows) a
-- 1M fleet gathers ~200k of them between vacuums and an idle pass reads them all, once a
-- second (43 ms where a vacuumed table answers in 0.05 ms). 1,000 + 0.5 % of the rows is
-- one minute boundary's updates at 1M, ~1,000 rows on a small fleet.
-- Storage parameters take a SHARE UPDATE EXCLUSIVE lock; the runner holds a stronger one.
ALTER TABLE awa.cron_jobs SET (autovacuum_vacuum_scale_factor = 0.005, autovacuum_vacuum_threshold = 1000);
