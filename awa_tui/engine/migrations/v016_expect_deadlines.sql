-- v016: the health duty judges a schedule with expect_success_within once per deadline
-- (a fire's instant + the bound), not on every pass: at a million schedules, a tenth of
-- them declaring it were 100k rows judged every 10 s. expect_due_at is the next deadline
-- still ahead of the last judgement (NULL: none), set by the duty from the fires it
-- counts and moved on by each pass that judges the schedule.
ALTER TABLE awa.cron_health ADD COLUMN expect_due_at timestamptz;
CREATE INDEX cron_health_expect_due_idx ON awa.cron_health (expect_due_at) WHERE expect_due_at IS NOT NULL;

-- Deadlines after the last pass are the ones still to judge (none yet: every recent one).
UPDATE awa.cron_health h SET expect_due_at = d.due
FROM (
    SELECT hh.name, (SELECT min(f + make_interval(secs => c.expect_success_within)) FROM unnest(hh.recent_fires) f
                     WHERE f + make_interval(secs => c.expect_success_within)
                           > coalesce((SELECT evaluated_at FROM awa.health_meta WHERE singleton), '-infinity')) AS due
    FROM awa.cron_health hh JOIN awa.cron_jobs c ON c.name = hh.name
    WHERE c.expect_success_within IS NOT NULL
) d
WHERE h.name = d.name AND d.due IS NOT NULL;

-- Its only reader was the candidate "every schedule declaring expect_success_within".
DROP INDEX awa.cron_jobs_expect_success_idx;
