-- v034: what a runtime did lately, and why it never competes for the leader lock, in its
-- own snapshot row, so every console and `runtime events` can show it (not only the log of
-- the process itself). Both written by the runtime's reporter with the snapshot it already
-- writes (no statement of their own).
--
-- recent_events: its last events, newest first ([{at, kind, detail}], at most 50): became
-- leader, lost or released the lead, deposed a stalled leader, a pass that timed out on a
-- lock (with who held it), refused to lead, started, stopped.
-- lead_refusal: why it never competes for leadership ('pooler in transaction mode'), or NULL.
ALTER TABLE awa.runtime_instances
    ADD COLUMN recent_events jsonb NOT NULL DEFAULT '[]'::jsonb,
    ADD COLUMN lead_refusal text;
