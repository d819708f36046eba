"""The delivery outbox (S63, migration v023): what the deliverer claims and marks, what
`alerts list` and `check` read, and silences.

A delivery is claimed with a lease (its next attempt moved LEASE ahead, rows locked SKIP
LOCKED), sent, then marked delivered or failed: a runtime that dies between sending and
marking sends it again after the lease (at least once; receivers drop a repeat by its
dedupe key). A failed attempt waits BACKOFF_BASE * 2^(attempts - 1), at most BACKOFF_CAP,
and is retried for as long as the outbox keeps it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg

from awa_tui.engine.alerts.models import STATES, Alert, AlertDelivery, Silence
from awa_tui.engine.core.audit import begin_action
from awa_tui.engine.core.db import db_now
from awa_tui.engine.core.errors import NotFound, ValidationError
from awa_tui.engine.core.guards import check_operator, refuse_format_characters
from awa_tui.engine.filtering.sql import Condition

LEASE = timedelta(seconds=60)  # longer than a round's sends to one sink can take
BACKOFF_BASE = timedelta(seconds=5)
BACKOFF_CAP = timedelta(minutes=5)
# Alerts one round sends to one sink, as one message: a 10,000-schedule outage is one.
ROUND_LIMIT = 10_000
# Delivered and silenced alerts are kept this long (like health transitions), then pruned.
RETENTION = timedelta(days=30)
PRUNE_BATCH = 1000
MAX_SILENCE = timedelta(days=366)
MAX_REASON = 500
# Every statement of the deliverer gives up on a lock after LOCK_TIMEOUT and runs at most
# STATEMENT_TIMEOUT: set per transaction, never per session (through a transaction pooler a
# session setting would stay behind on a server session another client gets next, S57).
LOCK_TIMEOUT = "1s"
STATEMENT_TIMEOUT = "5s"


@contextmanager
def bounded(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """A transaction with the deliverer's own lock and statement timeouts."""
    with conn.transaction():
        conn.execute("SELECT set_config('lock_timeout', %s, true), set_config('statement_timeout', %s, true)",
                     (LOCK_TIMEOUT, STATEMENT_TIMEOUT))
        yield


@dataclass(frozen=True)
class Backoff:
    base: timedelta = BACKOFF_BASE
    cap: timedelta = BACKOFF_CAP

    def after(self, attempts: int) -> timedelta:
        """The wait after the `attempts`-th failed attempt."""
        return min(self.cap, self.base * 2 ** max(0, attempts - 1))


CLAIM_SQL = """
WITH due AS (
    SELECT d.outbox_id FROM awa.alert_deliveries d
    WHERE d.sink = %(sink)s AND d.state = 'pending' AND d.next_attempt_at <= %(now)s
    ORDER BY d.outbox_id LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
leased AS (
    UPDATE awa.alert_deliveries d SET next_attempt_at = %(now)s + %(lease)s
    FROM due WHERE d.sink = %(sink)s AND d.outbox_id = due.outbox_id
    RETURNING d.outbox_id
)
SELECT o.id, o.transition_id, o.name, o.at, o.from_health, o.to_health, o.reason, o.owner, o.queue, o.tags,
       -- v028's column, read so that a schema rolled back below it under a running runtime
       -- still delivers (it has no fleet alerts)
       coalesce((to_jsonb(o) ->> 'fleet')::boolean, false) AS fleet
FROM leased l JOIN awa.alert_outbox o ON o.id = l.outbox_id
ORDER BY o.id
"""

DELIVERED_SQL = """
UPDATE awa.alert_deliveries SET state = 'delivered', attempts = attempts + 1, delivered_at = %(now)s,
    last_attempt_at = %(now)s, last_error = NULL
WHERE sink = %(sink)s AND outbox_id = ANY (%(ids)s::bigint[]) AND state = 'pending'
"""

# attempts counts this one: the wait is base * 2^(attempts before), capped.
FAILED_SQL = """
UPDATE awa.alert_deliveries SET attempts = attempts + 1, last_attempt_at = %(now)s, last_error = %(error)s,
    next_attempt_at = %(now)s + least(%(cap)s::interval, %(base)s::interval * power(2, least(attempts, 20))::integer)
WHERE sink = %(sink)s AND outbox_id = ANY (%(ids)s::bigint[]) AND state = 'pending'
"""


def claim(conn: psycopg.Connection[Any], sink: str, now: datetime, *, limit: int = ROUND_LIMIT,
          lease: timedelta = LEASE) -> list[Alert]:
    """The sink's due deliveries, oldest first, leased for `lease` (one transaction)."""
    with bounded(conn):
        rows = conn.execute(CLAIM_SQL, {"sink": sink, "now": now, "limit": limit, "lease": lease}).fetchall()
    return [Alert(**{**r, "tags": tuple(r["tags"] or ())}) for r in rows]


def mark_delivered(conn: psycopg.Connection[Any], sink: str, ids: list[int], now: datetime) -> None:
    with bounded(conn):
        conn.execute(DELIVERED_SQL, {"sink": sink, "ids": ids, "now": now})


def mark_failed(conn: psycopg.Connection[Any], sink: str, ids: list[int], now: datetime, error: str,
                backoff: Backoff = Backoff()) -> None:
    with bounded(conn):
        conn.execute(FAILED_SQL, {"sink": sink, "ids": ids, "now": now, "error": error[:500],
                                  "base": backoff.base, "cap": backoff.cap})


OPEN_FOR_SINK_SQL = """
SELECT count(*) AS n FROM (
    SELECT DISTINCT ON (o.fleet, o.name) o.to_health
    FROM awa.alert_deliveries d JOIN awa.alert_outbox o ON o.id = d.outbox_id
    WHERE d.sink = %(sink)s ORDER BY o.fleet, o.name, o.id DESC
) latest WHERE awa.alert_severity(latest.to_health) IS NOT NULL
"""


def open_count(conn: psycopg.Connection[Any], sink: str) -> int:
    """Schedules (and the fleet) whose latest alert to `sink` is still firing."""
    with bounded(conn):
        row = conn.execute(OPEN_FOR_SINK_SQL, {"sink": sink}).fetchone()
    return int(row["n"]) if row else 0


def set_group_open(conn: psycopg.Connection[Any], sink: str, value: bool) -> None:
    with bounded(conn):
        conn.execute("UPDATE awa.alert_sinks SET group_open = %s WHERE name = %s", (value, sink))


PRUNE_SQL = """
DELETE FROM awa.alert_outbox WHERE id IN (
    SELECT o.id FROM awa.alert_outbox o
    WHERE o.at < %(now)s - %(keep)s
      AND NOT EXISTS (SELECT 1 FROM awa.alert_deliveries d WHERE d.outbox_id = o.id AND d.state = 'pending')
    ORDER BY o.at LIMIT %(batch)s)
"""


# The fleet's transitions (S70) as long, the last one kept whatever its age: it is the
# fleet's recorded health.
PRUNE_FLEET_SQL = """
DELETE FROM awa.fleet_transitions
WHERE at < %(now)s - %(keep)s AND id < (SELECT max(id) FROM awa.fleet_transitions)
"""


def prune(conn: psycopg.Connection[Any], now: datetime) -> int:
    """One bounded batch of old alerts that nothing waits to deliver."""
    with bounded(conn):
        found = conn.execute("SELECT to_regclass('awa.fleet_transitions') IS NOT NULL AS found").fetchone()
        if found and found["found"]:  # not on a schema rolled back below v028 under a running runtime
            conn.execute(PRUNE_FLEET_SQL, {"now": now, "keep": RETENTION})
        return conn.execute(PRUNE_SQL, {"now": now, "keep": RETENTION, "batch": PRUNE_BATCH}).rowcount


# --- what operators read --------------------------------------------------------------------

LIST_SQL = """
SELECT o.id, o.name, awa.safe_ts(o.at) AS at, o.from_health, o.to_health, o.reason, o.fleet, o.owner,
       coalesce(d.sink, '') AS sink,
       CASE WHEN d.sink IS NULL THEN 'unrouted'
            WHEN d.state = 'pending' AND d.attempts > 0 THEN 'failing' ELSE d.state END AS state,
       awa.alert_severity(o.to_health) IS NOT NULL
           AND o.id = (SELECT max(x.id) FROM awa.alert_outbox x WHERE x.name = o.name AND x.fleet = o.fleet) AS open,
       coalesce(d.attempts, 0) AS attempts, d.last_error,
       CASE WHEN d.state = 'pending' AND d.attempts > 0 THEN awa.safe_ts(d.next_attempt_at) END AS next_attempt_at,
       awa.safe_ts(d.delivered_at) AS delivered_at
FROM awa.alert_outbox o LEFT JOIN awa.alert_deliveries d ON d.outbox_id = o.id
WHERE (%(name)s::text IS NULL OR (o.name = %(name)s AND NOT o.fleet)) AND (%(sink)s::text IS NULL OR d.sink = %(sink)s)
"""
LIST_STATES = (*STATES, "open", "unrouted")


def list_alerts(conn: psycopg.Connection[Any], *, state: str | None = None, sink: str | None = None,
                name: str | None = None, limit: int = 100) -> list[AlertDelivery]:
    """Deliveries, newest alert first; `state` one of LIST_STATES (`open`: still firing)."""
    if state is not None and state not in LIST_STATES:
        raise ValidationError(f"state: one of {', '.join(LIST_STATES)}, got {state!r:.40}")
    if not 1 <= limit <= 100_000:
        raise ValidationError(f"limit: between 1 and 100000, got {limit}")
    where = ""
    if state == "open":
        where = " AND awa.alert_severity(o.to_health) IS NOT NULL " \
                "AND o.id = (SELECT max(x.id) FROM awa.alert_outbox x WHERE x.name = o.name AND x.fleet = o.fleet)"
    elif state == "unrouted":
        where = " AND d.sink IS NULL"
    elif state == "failing":
        where = " AND d.state = 'pending' AND d.attempts > 0"
    elif state == "pending":
        where = " AND d.state = 'pending' AND d.attempts = 0"
    elif state is not None:
        where = " AND d.state = %(state)s"
    rows = conn.execute(LIST_SQL + where + " ORDER BY o.id DESC, d.sink LIMIT %(limit)s",
                        {"state": state, "sink": sink, "name": name, "limit": limit}).fetchall()
    return [AlertDelivery(**r) for r in rows]


@dataclass(frozen=True)
class SinkBacklog:
    """A sink's deliveries not yet made: how many, how many failed at least once, since when."""

    sink: str
    pending: int
    failing: int
    oldest_failing: datetime | None
    last_error: str | None


BACKLOG_SQL = """
SELECT d.sink, count(*) AS pending, count(*) FILTER (WHERE d.attempts > 0) AS failing,
       awa.safe_ts(min(o.at) FILTER (WHERE d.attempts > 0)) AS oldest_failing,
       (array_agg(d.last_error ORDER BY d.last_attempt_at DESC NULLS LAST)
            FILTER (WHERE d.last_error IS NOT NULL))[1] AS last_error
FROM awa.alert_deliveries d JOIN awa.alert_outbox o ON o.id = d.outbox_id
WHERE d.state = 'pending'
GROUP BY d.sink ORDER BY d.sink
"""


def backlog(conn: psycopg.Connection[Any]) -> list[SinkBacklog]:
    """Per sink with deliveries waiting (through the partial index of pending ones)."""
    return [SinkBacklog(**r) for r in conn.execute(BACKLOG_SQL).fetchall()]


# --- silences ---------------------------------------------------------------------------------

SILENCE_PENDING_SQL = """
UPDATE awa.alert_deliveries d SET state = 'silenced', silence_id = %(id)s
FROM awa.alert_outbox o
WHERE o.id = d.outbox_id AND NOT o.fleet AND d.state = 'pending' AND o.at < %(until)s
  AND {match}
"""
SILENCE_COLUMNS = "id, name, owner, filter, starts_at, until, reason, created_by"


def _silence_filter(conn: psycopg.Connection[Any], text: str) -> tuple[str, Condition]:
    """A filter of the schedules grammar (the console's `/`), checked now: one line when bad."""
    from awa_tui.engine.filtering.sql import schedule_condition
    from awa_tui.filters import parse

    text = text.strip()
    if not text:
        raise ValidationError("filter: an empty filter would silence every schedule; give terms")
    if len(text) > MAX_REASON:
        raise ValidationError(f"filter: at most {MAX_REASON} characters")
    flt = parse(text, "schedules")
    if not flt.terms:
        raise ValidationError("filter: an empty filter would silence every schedule; give terms")
    return text, schedule_condition(conn, flt, None)


def silence(conn: psycopg.Connection[Any], name: str | None, until: datetime | timedelta, reason: str,
            operator: str, now: datetime | None = None, *, owner: str | None = None,
            filter: str | None = None) -> Silence:
    """Silence alerts from now until `until` (an instant, or a duration from now in DB
    time), with a reason: schedule `name`'s, or owner `owner`'s schedules' (the owner each
    alert recorded), or those of the schedules `filter` selects (judged when each is
    delivered). Their transitions in that span and the deliveries already waiting are not
    sent (`silenced`). Exactly one of the three; audited. A refusal stores nothing."""
    operator = check_operator(operator)
    if sum(x is not None for x in (name, owner, filter)) != 1:
        raise ValidationError("silence: name one schedule, or --owner, or --filter (exactly one)")
    if not isinstance(reason, str) or not reason.strip():
        raise ValidationError("reason: a silence needs a reason")
    reason = refuse_format_characters("reason", reason.strip())
    if len(reason) > MAX_REASON or any(not ch.isprintable() for ch in reason):
        raise ValidationError(f"reason: at most {MAX_REASON} printable characters")
    if owner is not None:
        owner = refuse_format_characters("owner", owner)
    now = now or db_now(conn)
    if isinstance(until, timedelta):
        until = now + until
    with conn.transaction():
        begin_action(conn, operator, "alert_silence", {"until": until, "reason": reason})
        if until <= now:
            raise ValidationError(f"until: {until.isoformat()} is not in the future (now {now.isoformat()})")
        if until - now > MAX_SILENCE:
            raise ValidationError("until: at most a year ahead")
        params: dict[str, Any] = {"until": until}
        if name is not None:
            if conn.execute("SELECT 1 FROM awa.cron_jobs WHERE name = %s", (name,)).fetchone() is None:
                raise NotFound(f"unknown schedule {name!r:.70}")
            match, params["name"] = "o.name = %(name)s", name
        elif owner is not None:
            known = conn.execute("SELECT EXISTS (SELECT 1 FROM awa.cron_jobs WHERE owner = %(o)s) "
                                 "OR EXISTS (SELECT 1 FROM awa.owners WHERE owner = %(o)s) AS known",
                                 {"o": owner}).fetchone()
            if not known or not known["known"]:
                raise NotFound(f"unknown owner {owner!r:.70}")
            match, params["owner"] = "o.owner = %(owner)s", owner
        else:
            assert filter is not None
            filter, condition = _silence_filter(conn, filter)
            match = f"o.name IN (SELECT c.name FROM awa.cron_jobs c WHERE {condition.sql})"
            params.update(condition.params)
        row = conn.execute(
            "INSERT INTO awa.alert_silences (name, owner, filter, starts_at, until, reason, created_by) "
            f"VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING {SILENCE_COLUMNS}",
            (name, owner, filter, now, until, reason, operator)).fetchone()
        assert row is not None
        params["id"] = row["id"]
        silenced = conn.execute(SILENCE_PENDING_SQL.format(match=match), params).rowcount
    return Silence(**row, silenced=silenced)


def silences(conn: psycopg.Connection[Any], now: datetime | None = None) -> list[Silence]:
    """Silences still in force at `now` (DB time when omitted)."""
    rows = conn.execute(
        f"SELECT {SILENCE_COLUMNS} FROM awa.alert_silences "
        "WHERE until > coalesce(%s::timestamptz, now()) ORDER BY name, owner, filter, until", (now,)).fetchall()
    return [Silence(**r) for r in rows]


# Silences of an owner or a filter in force at some claimed alert's instant (the deliverer's,
# only when it claimed alerts: an idle round reads none).
# Through to_jsonb: a schema rolled back below v028 under a running runtime has neither
# column (nor such silences), and its deliveries go on.
DELIVERY_SILENCES_SQL = """
SELECT * FROM (
    SELECT z.id, z.name, to_jsonb(z) ->> 'owner' AS owner, to_jsonb(z) ->> 'filter' AS filter, z.starts_at,
           z.until, z.reason, z.created_by
    FROM awa.alert_silences z WHERE z.until > %(first)s AND z.starts_at <= %(now)s
) z
WHERE z.owner IS NOT NULL OR z.filter IS NOT NULL
ORDER BY z.until DESC
"""
SILENCE_CLAIMED_SQL = """
UPDATE awa.alert_deliveries SET state = 'silenced', silence_id = %(id)s
WHERE sink = %(sink)s AND outbox_id = ANY (%(ids)s::bigint[]) AND state = 'pending'
"""


def silence_claimed(conn: psycopg.Connection[Any], sink: str, alerts: list[Alert], now: datetime) -> list[Alert]:
    """The claimed `alerts` that no silence of an owner or a filter covers; the covered ones
    are marked silenced (a filter judged against the schedules as they are now)."""
    ours = [a for a in alerts if not a.fleet]
    if not ours:
        return alerts
    with bounded(conn):
        found = [Silence(**r) for r in conn.execute(
            DELIVERY_SILENCES_SQL, {"first": min(a.at for a in ours), "now": now}).fetchall()]
        covered: dict[int, int] = {}
        for s in found:
            # As at its making: what it covers up to its end, alerts from before it included.
            spanned = [a for a in ours if a.at < s.until and a.id not in covered]
            if s.owner is not None:
                hit = [a.id for a in spanned if a.owner == s.owner]
            else:
                assert s.filter is not None
                try:
                    _, condition = _silence_filter(conn, s.filter)
                except ValidationError:
                    continue  # a filter this release no longer reads silences nothing
                names = conn.execute(
                    "SELECT c.name FROM awa.cron_jobs c "
                    f"WHERE c.name = ANY (%(flt_names)s::text[]) AND {condition.sql}",
                    {**condition.params, "flt_names": sorted({a.name for a in spanned})}).fetchall()
                matched = {r["name"] for r in names}
                hit = [a.id for a in spanned if a.name in matched]
            for alert_id in hit:
                covered[alert_id] = s.id
        for silence_id in sorted(set(covered.values())):
            conn.execute(SILENCE_CLAIMED_SQL, {"id": silence_id, "sink": sink,
                                               "ids": [i for i, z in covered.items() if z == silence_id]})
    return [a for a in alerts if a.id not in covered]
