-- Undoes v034_runtime_events.sql (`awa-tui migrate --down-to 33` or lower): runtimes keep
-- reporting without their recent events and refusal (the reporter falls back).
ALTER TABLE awa.runtime_instances DROP COLUMN IF EXISTS recent_events, DROP COLUMN IF EXISTS lead_refusal;
