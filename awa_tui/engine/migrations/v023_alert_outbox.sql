-- v023: alerts that reach a person (S63): sinks, a delivery outbox, silences.
--
-- Every health transition that starts or ends an alert (to or from broken, failing, missed,
-- late) becomes an outbox row in the transaction that recorded it (a statement trigger on
-- awa.health_transitions: the leader's health pass, never the fire path), with one
-- delivery row per sink whose routing takes it. A runtime delivers them at least once
-- (engine/runtime/alerting.py): each delivery is pending until a sink accepted it, retried
-- with a capped exponential backoff meanwhile. A silence of a schedule until a time makes
-- its deliveries `silenced` instead of pending. Sinks and silences are audited.

-- Where alerts go. Secrets (a webhook's or Slack's URL, an HMAC key, a PagerDuty routing
-- key) are named, not stored: `url_ref` / `key_ref` say where the runtime reads them
-- ('env:NAME' or 'file:/path'). A URL given as is (`url`) is stored, and every read of
-- ours masks it to its scheme and host.
CREATE TABLE awa.alert_sinks (
    name       text PRIMARY KEY
        CONSTRAINT alert_sinks_name_format CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    kind       text NOT NULL
        CONSTRAINT alert_sinks_kind CHECK (kind IN ('webhook', 'slack', 'pagerduty', 'alertmanager', 'notify')),
    route_by   text NOT NULL DEFAULT 'all'
        CONSTRAINT alert_sinks_route_by CHECK (route_by IN ('all', 'owner', 'queue', 'tag', 'severity')),
    route_value text,
    url        text CONSTRAINT alert_sinks_url_http CHECK (url IS NULL OR url ~ '^https?://[^/?#]'),
    url_ref    text CONSTRAINT alert_sinks_url_ref CHECK (url_ref IS NULL OR url_ref ~ '^(env|file):.'),
    key_ref    text CONSTRAINT alert_sinks_key_ref CHECK (key_ref IS NULL OR key_ref ~ '^(env|file):.'),
    channel    text CONSTRAINT alert_sinks_channel CHECK (channel IS NULL OR channel ~ '^[a-z_][a-z0-9_]{0,62}$'),
    -- PagerDuty: a grouped incident (awa/<sink>/group) is open until its schedules recover.
    group_open boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT alert_sinks_route_value CHECK ((route_by = 'all') = (route_value IS NULL)),
    CONSTRAINT alert_sinks_severity CHECK (route_by <> 'severity' OR route_value IN ('warning', 'critical')),
    CONSTRAINT alert_sinks_target CHECK (
        CASE kind WHEN 'notify' THEN channel IS NOT NULL AND url IS NULL AND url_ref IS NULL
                  WHEN 'pagerduty' THEN key_ref IS NOT NULL AND channel IS NULL
                  ELSE (url IS NOT NULL) <> (url_ref IS NOT NULL) AND channel IS NULL END)
);

-- A schedule's alerts are silenced from `starts_at` until `until`, with why and by whom.
CREATE TABLE awa.alert_silences (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text NOT NULL,
    starts_at  timestamptz NOT NULL DEFAULT now(),
    until      timestamptz NOT NULL,
    reason     text NOT NULL CONSTRAINT alert_silences_reason CHECK (btrim(reason) <> ''),
    created_by text NOT NULL,
    CONSTRAINT alert_silences_span CHECK (until > starts_at)
);
CREATE INDEX alert_silences_name_idx ON awa.alert_silences (name, until);

-- One row per transition that starts or ends an alert, with what routing reads of the
-- schedule as it was then (owner, queue, tags).
CREATE TABLE awa.alert_outbox (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    transition_id bigint NOT NULL,  -- awa.health_transitions.id (pruned apart: no key)
    name          text NOT NULL,
    at            timestamptz NOT NULL,
    from_health   text,
    to_health     text NOT NULL,
    reason        text,
    owner         text,
    queue         text,
    tags          text[] NOT NULL DEFAULT '{}'
);
CREATE INDEX alert_outbox_name_idx ON awa.alert_outbox (name, id);
CREATE INDEX alert_outbox_at_idx ON awa.alert_outbox (at);

-- One row per outbox row and sink: pending until the sink accepted it (attempts > 0: it
-- is failing), delivered, or silenced.
CREATE TABLE awa.alert_deliveries (
    outbox_id       bigint NOT NULL REFERENCES awa.alert_outbox (id) ON DELETE CASCADE,
    sink            text NOT NULL REFERENCES awa.alert_sinks (name) ON DELETE CASCADE,
    state           text NOT NULL DEFAULT 'pending'
        CONSTRAINT alert_deliveries_state CHECK (state IN ('pending', 'delivered', 'silenced')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT '-infinity',
    last_attempt_at timestamptz,
    last_error      text,
    delivered_at    timestamptz,
    silence_id      bigint,
    PRIMARY KEY (outbox_id, sink)
);
-- The deliverer's probe: the due pending deliveries of each sink.
CREATE INDEX alert_deliveries_due_idx ON awa.alert_deliveries (sink, next_attempt_at) WHERE state = 'pending';

-- A schedule's severity words: critical (broken, failing, missed) or warning (late).
CREATE FUNCTION awa.alert_severity(health text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog AS $$
    SELECT CASE WHEN health IN ('broken', 'failing', 'missed') THEN 'critical'
                WHEN health = 'late' THEN 'warning' END
$$;

-- The outbox rows of the transitions one statement inserted, and their deliveries: in the
-- same transaction, so a transition is never recorded without its alert nor the reverse.
CREATE FUNCTION awa.alert_outbox_enqueue() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    WITH box AS (
        INSERT INTO awa.alert_outbox (transition_id, name, at, from_health, to_health, reason, owner, queue, tags)
        SELECT t.id, t.name, t.at, t.from_health, t.to_health, t.reason, c.owner, c.queue, coalesce(c.tags, '{}')
        FROM new_transitions t LEFT JOIN awa.cron_jobs c ON c.name = t.name
        WHERE awa.alert_severity(t.to_health) IS NOT NULL OR awa.alert_severity(t.from_health) IS NOT NULL
        ORDER BY t.id
        RETURNING *
    )
    INSERT INTO awa.alert_deliveries (outbox_id, sink, state, silence_id)
    SELECT b.id, s.name, CASE WHEN z.id IS NULL THEN 'pending' ELSE 'silenced' END, z.id
    FROM box b
    JOIN awa.alert_sinks s ON
        s.route_by = 'all'
        OR (s.route_by = 'owner' AND b.owner = s.route_value)
        OR (s.route_by = 'queue' AND b.queue = s.route_value)
        OR (s.route_by = 'tag' AND s.route_value = ANY (b.tags))
        OR (s.route_by = 'severity' AND (s.route_value = 'warning'
            OR 'critical' IN (awa.alert_severity(b.from_health), awa.alert_severity(b.to_health))))
    LEFT JOIN LATERAL (
        SELECT z.id FROM awa.alert_silences z
        WHERE z.name = b.name AND b.at >= z.starts_at AND b.at < z.until
        ORDER BY z.until DESC LIMIT 1
    ) z ON true;
    RETURN NULL;
END;
$$;

CREATE TRIGGER health_transitions_alert_outbox
    AFTER INSERT ON awa.health_transitions
    REFERENCING NEW TABLE AS new_transitions
    FOR EACH STATEMENT EXECUTE FUNCTION awa.alert_outbox_enqueue();

-- Sinks and silences are operator-controlled state: audited like calendars (v018). A
-- sink's audit row names where its secrets come from, never a stored URL.
CREATE FUNCTION awa.alert_sinks_audit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r awa.alert_sinks := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    shown jsonb := jsonb_build_object('kind', r.kind, 'route_by', r.route_by, 'route_value', r.route_value,
                                      'url', CASE WHEN r.url IS NOT NULL THEN 'stored' END,
                                      'url_ref', r.url_ref, 'key_ref', r.key_ref, 'channel', r.channel);
BEGIN
    PERFORM awa.audit_insert(
        CASE TG_OP WHEN 'INSERT' THEN 'alert_sink_add' ELSE 'alert_sink_remove' END,
        'alert-sink:' || r.name,
        CASE WHEN TG_OP = 'DELETE' THEN shown END,
        CASE WHEN TG_OP = 'INSERT' THEN shown END,
        awa.audit_context_detail());
    RETURN NULL;
END;
$$;
CREATE TRIGGER alert_sinks_audit
    AFTER INSERT OR DELETE ON awa.alert_sinks
    FOR EACH ROW EXECUTE FUNCTION awa.alert_sinks_audit();

CREATE FUNCTION awa.alert_silences_audit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM awa.audit_insert('alert_silence', NEW.name, NULL,
        jsonb_build_object('starts_at', NEW.starts_at, 'until', NEW.until, 'reason', NEW.reason),
        awa.audit_context_detail());
    RETURN NULL;
END;
$$;
CREATE TRIGGER alert_silences_audit
    AFTER INSERT ON awa.alert_silences
    FOR EACH ROW EXECUTE FUNCTION awa.alert_silences_audit();

REVOKE EXECUTE ON FUNCTION awa.alert_outbox_enqueue() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION awa.alert_sinks_audit() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION awa.alert_silences_audit() FROM PUBLIC;
