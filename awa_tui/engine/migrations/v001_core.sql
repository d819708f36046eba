-- v001: schedules, jobs, queue pause, runtime snapshots, audit trail (S3, S20, S21).

CREATE TABLE awa.cron_jobs (
    name               text PRIMARY KEY,
    cron_expr          text NOT NULL,
    timezone           text NOT NULL DEFAULT 'UTC',
    kind               text NOT NULL,
    queue              text NOT NULL DEFAULT 'default',
    args               jsonb NOT NULL DEFAULT '{}'::jsonb,
    priority           smallint NOT NULL DEFAULT 2,
    max_attempts       smallint NOT NULL DEFAULT 25,
    tags               text[] NOT NULL DEFAULT '{}',
    metadata           jsonb NOT NULL DEFAULT '{}'::jsonb,
    missed_fire_policy text NOT NULL DEFAULT 'coalesce',
    -- The compare-and-swap token of the atomic enqueue (S11); NULL = never fired.
    last_enqueued_at   timestamptz,
    -- Hint: the first fire that is new (S13). NULL = "compute on the next pass".
    next_fire_at       timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    paused_at          timestamptz,
    paused_by          text,
    owner              text,
    retired_at         timestamptz,
    retired_by         text
);

-- An idle pass is one probe of these two partial indexes (S10).
CREATE INDEX cron_jobs_due_idx ON awa.cron_jobs (next_fire_at)
    WHERE paused_at IS NULL AND retired_at IS NULL;
CREATE INDEX cron_jobs_unplanned_idx ON awa.cron_jobs (name)
    WHERE next_fire_at IS NULL AND paused_at IS NULL AND retired_at IS NULL;
CREATE INDEX cron_jobs_owner_idx ON awa.cron_jobs (owner) WHERE owner IS NOT NULL;

CREATE TABLE awa.jobs (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind          text NOT NULL,
    queue         text NOT NULL DEFAULT 'default',
    args          jsonb NOT NULL DEFAULT '{}'::jsonb,
    state         text NOT NULL DEFAULT 'available'
                  CHECK (state IN ('available', 'running', 'completed', 'retryable',
                                   'discarded', 'cancelled')),
    priority      smallint NOT NULL DEFAULT 2,
    attempt       smallint NOT NULL DEFAULT 0,
    max_attempts  smallint NOT NULL DEFAULT 25,
    run_at        timestamptz NOT NULL DEFAULT now(),
    created_at    timestamptz NOT NULL DEFAULT now(),
    attempted_at  timestamptz,
    finalized_at  timestamptz,
    metadata      jsonb NOT NULL DEFAULT '{}'::jsonb,
    tags          text[] NOT NULL DEFAULT '{}',
    errors        jsonb NOT NULL DEFAULT '[]'::jsonb
);

CREATE INDEX jobs_claim_idx ON awa.jobs (queue, priority, run_at, id)
    WHERE state IN ('available', 'retryable');
CREATE INDEX jobs_cron_name_idx ON awa.jobs ((metadata ->> 'cron_name'), id)
    WHERE metadata ? 'cron_name';
CREATE INDEX jobs_state_queue_idx ON awa.jobs (state, queue);

CREATE TABLE awa.queue_meta (
    queue     text PRIMARY KEY,
    paused    boolean NOT NULL DEFAULT false,
    paused_at timestamptz,
    paused_by text
);

CREATE TABLE awa.runtime_instances (
    instance_id        uuid PRIMARY KEY,
    hostname           text NOT NULL,
    pid                integer NOT NULL,
    version            text NOT NULL,
    protocol_version   integer NOT NULL DEFAULT 0,
    started_at         timestamptz NOT NULL,
    last_seen_at       timestamptz NOT NULL DEFAULT now(),
    snapshot_interval  interval NOT NULL DEFAULT '10 seconds',
    is_leader          boolean NOT NULL DEFAULT false,
    health             text NOT NULL DEFAULT 'healthy',
    stopped_at         timestamptz,
    owner              text,
    authoritative      boolean NOT NULL DEFAULT false,
    manifest           jsonb,
    manifest_hash      text,
    retire_grace       interval
);

-- Append-only operator trail (S20).
CREATE TABLE awa.audit_log (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    operator  text NOT NULL,
    action    text NOT NULL,
    target    text NOT NULL,
    before    jsonb,
    after     jsonb,
    detail    jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_log_target_idx ON awa.audit_log (target, id);

CREATE FUNCTION awa.audit_log_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'awa.audit_log is append-only' USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER audit_log_append_only
    BEFORE UPDATE OR DELETE ON awa.audit_log
    FOR EACH ROW EXECUTE FUNCTION awa.audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate
    BEFORE TRUNCATE ON awa.audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION awa.audit_log_append_only();
