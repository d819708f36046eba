-- v011: a runtime's last evaluator passes, carried by its snapshot row.
--
-- The runtimes page shows each runtime's recent passes (when, how long, how many schedules
-- were due, how many jobs fired, how many rows were skipped as errors). The snapshot row
-- already exists per runtime and is rewritten every snapshot interval: it carries them as a
-- JSON array, newest first, of at most the few the runtime keeps in memory (no table grows).
-- A hand-written value the console cannot read shows as no passes, never as an error.
ALTER TABLE awa.runtime_instances ADD COLUMN recent_passes jsonb NOT NULL DEFAULT '[]'::jsonb;
