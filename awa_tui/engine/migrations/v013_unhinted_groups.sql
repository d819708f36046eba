-- v013: rows without a next-fire hint, found by group (S51).
--
-- A fresh registration leaves every row's hint NULL. The evaluator no longer computes
-- those hints row by row in Python: it groups the rows by (cron_expr, timezone), computes
-- each group's latest and next instants once, and lets SQL pick out and hint the rows
-- (engine/firing/hints.py). This index serves every step of that, in index ranges:
--   - the groups: a loose index scan, one descent per distinct (cron_expr, timezone);
--   - the rows due, or dated after now, of a group: ranges on last_enqueued_at (a row
--     that fired) or created_at (one that never did: last_enqueued_at NULL sorts last);
--   - the rows whose hint is the group's next instant: the range in between.
-- So a pass over a million rows without hints costs a few descents per group, not a
-- scan of the million; a row leaves the index when its hint is written, so with every
-- hint written the index is empty and the idle pass stays one probe (S10).
CREATE INDEX cron_jobs_unhinted_idx ON awa.cron_jobs (cron_expr, timezone, last_enqueued_at, created_at)
    WHERE next_fire_at IS NULL AND paused_at IS NULL AND retired_at IS NULL AND finished_at IS NULL;

-- Rows without a hint that SQL does not decide (bounds, v009, or a policy no parser knows):
-- few, fetched on every pass and planned in Python, as every row without a hint was before.
-- The evaluator's query repeats this predicate (engine/firing/hints.py BOUNDED).
CREATE INDEX cron_jobs_unhinted_bounded_idx ON awa.cron_jobs (name)
    WHERE next_fire_at IS NULL AND paused_at IS NULL AND retired_at IS NULL AND finished_at IS NULL
      AND (start_at IS NOT NULL OR end_at IS NOT NULL OR max_fires IS NOT NULL
           OR missed_fire_policy NOT IN ('coalesce', 'catch_up'));

-- The evaluator fetched every row without a hint through this one; nothing reads it now.
DROP INDEX awa.cron_jobs_unplanned_idx;
