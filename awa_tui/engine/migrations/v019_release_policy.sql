-- v019: which releases' runtimes may run, and lead, on this schema (rolling deploys).
--
-- During a rolling deploy the previous release's runtimes run beside this one's on this
-- schema. They keep syncing and working jobs, but they must not lead: their evaluator does
-- not know what this release's schema adds (excluded dates, calendars), so it would fire
-- instants this release skips. The schema records the lowest runtime protocol that may lead
-- and the lowest that may run at all; a runtime reports its protocol in its snapshot
-- (`leader_protocol`: NULL for a release older than this migration, which counts as 1).
--
-- Election goes through awa.leader_acquire, which every release calls by name: redefined
-- here, it refuses a runtime below the lowest leading protocol before it takes the lock, so
-- an older runtime stays a follower whatever its code. An older runtime already leading
-- when this migration lands renews its lease with a statement of its own: a trigger turns
-- that renewal into nothing, so it finds its lease gone at the next renewal, steps down and
-- lets go of the lock, and this release's runtimes take over.

ALTER TABLE awa.runtime_instances ADD COLUMN leader_protocol integer;

CREATE TABLE awa.release_policy (
    singleton            boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    min_leader_protocol  integer NOT NULL,   -- a runtime below it never leads
    min_runtime_protocol integer NOT NULL,   -- a runtime below it refuses to start
    updated_at           timestamptz NOT NULL DEFAULT now()
);
-- This release leads (protocol 2); the previous release's runtimes (1) keep running.
INSERT INTO awa.release_policy (min_leader_protocol, min_runtime_protocol) VALUES (2, 1);

-- Whether the runtime `p_instance` may lead: its snapshot's protocol against the policy. A
-- snapshot without a protocol but with the schema version it was built for (every release
-- since v008 reports one) is an older release's: protocol 1. A caller without either (a bare
-- elector in a test, a row written by hand, a tool) is not judged. SECURITY DEFINER: every
-- role that may compete for leadership gets the answer, whatever it may read.
CREATE FUNCTION awa.may_lead(p_instance uuid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
    SELECT coalesce((SELECT CASE WHEN r.leader_protocol IS NOT NULL THEN r.leader_protocol
                                 WHEN r.schema_version IS NOT NULL THEN 1 END
                     FROM awa.runtime_instances r WHERE r.instance_id = p_instance), 2147483647)
           >= (SELECT p.min_leader_protocol FROM awa.release_policy p WHERE p.singleton)
$$;

DROP FUNCTION awa.leader_acquire(bigint, uuid, interval, timestamptz);
-- include: functions/leader_acquire.sql

CREATE FUNCTION awa.leader_lease_renewal_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.instance_id IS NOT DISTINCT FROM OLD.instance_id AND NEW.term = OLD.term
       AND NEW.expires_at > OLD.expires_at AND NOT awa.may_lead(NEW.instance_id) THEN
        RETURN NULL;  -- a renewal by a runtime that may no longer lead: not made
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER leader_lease_renewal_guard BEFORE UPDATE ON awa.leader_lease
    FOR EACH ROW EXECUTE FUNCTION awa.leader_lease_renewal_guard();
