"""Alerts about the fleet as a whole (S70, migration v028): nobody leads, or the leader
stalled; and which runtime delivers alerts.

Every running runtime's alerts loop judges the fleet's health from the leader lock, its
lease and the leader's snapshot (what `check` reads), and records a change of it as one
row of awa.fleet_transitions, whose trigger writes the outbox row and its deliveries. The
record is taken under a transaction-scoped advisory lock and judged again inside it, so a
change is recorded once whichever runtimes see it, and never again while it lasts.

- no_leader: no session holds the leader lock with a live lease, for longer than `grace`
  after the last lease ended (a leader killed right after renewing: lease + grace);
- stalled: the lease's session still holds the lock but let its lease expire (frozen, or
  cut off) for longer than `grace`; or the lease is renewed but the leader's snapshot shows
  no completed evaluator pass for `stall_after` (plus the snapshot's own interval: a
  healthy pass may be that old there), or no health evaluation for `check`'s bound.

Nobody leading, the leader's alerts loop does not run: any runtime may deliver. The
deliverer holds a lease (awa.alert_deliverer) renewed while it delivers: the leader takes
it whenever it is free, a follower only while nobody leads, and a follower lets it go as
soon as someone leads; so one runtime delivers at a time (a frozen holder's claimed
deliveries are sent again after their own lease: at least once, as ever).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg

from awa_tui.engine.alerts.outbox import bounded
from awa_tui.engine.core.db import FLEET_WATCH_LOCK_KEY, LEADER_LOCK_KEY
from awa_tui.engine.core.limits import DEFAULT_FLEET_GRACE, DEFAULT_FLEET_STALL_AFTER
from awa_tui.engine.health.check import STALE_AFTER
from awa_tui.engine.read.passes import from_json
from awa_tui.instants import span_precise
from awa_tui.printable import printable

# How long the deliverer's lease runs unrenewed; renewed when less than half is left, so
# the leader's idle round writes it every few seconds, not every second.
DELIVERER_LEASE = timedelta(seconds=15)


@dataclass(frozen=True)
class FleetThresholds:
    grace: timedelta = DEFAULT_FLEET_GRACE
    stall_after: timedelta = DEFAULT_FLEET_STALL_AFTER


@dataclass(frozen=True)
class FleetHealth:
    """The fleet as judged at `now`, and as last recorded."""

    now: datetime
    state: str  # ok | no_leader | stalled
    reason: str
    led: bool  # a session holds the leader lock with a live lease
    recorded: str  # the state of the last recorded transition ('ok' when none)
    recorded_at: datetime | None = None
    held: bool = False  # a session holds the leader lock (the lease's, or live or not)


@dataclass(frozen=True)
class FleetTransition:
    id: int
    at: datetime
    from_state: str
    to_state: str
    reason: str


STATE_SQL = f"""
SELECT coalesce(%(now)s::timestamptz, now()) AS now,
       ls.term, ls.instance_id, ls.backend_pid, ls.acquired_at, ls.renewed_at, ls.expires_at,
       awa.leader_lock_pid({LEADER_LOCK_KEY}) AS lock_pid,
       r.hostname, r.pid, r.recent_passes,
       CASE WHEN r.snapshot_interval BETWEEN interval '0' AND interval '1 day' THEN r.snapshot_interval END
           AS snapshot_interval,
       (SELECT awa.safe_ts(evaluated_at) FROM awa.health_meta WHERE singleton) AS evaluated_at,
       t.to_state AS recorded, t.at AS recorded_at
FROM awa.leader_lease ls
LEFT JOIN awa.runtime_instances r ON r.instance_id = ls.instance_id
LEFT JOIN LATERAL (SELECT to_state, at FROM awa.fleet_transitions ORDER BY id DESC LIMIT 1) t ON true
WHERE ls.singleton
"""

RECORD_SQL = """
INSERT INTO awa.fleet_transitions (at, from_state, to_state, reason, recorded_by)
VALUES (%(now)s, %(from)s, %(to)s, %(reason)s, %(by)s)
RETURNING id, at, from_state, to_state, reason
"""


def _iso(value: datetime) -> str:
    return value.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _ago(now: datetime, then: datetime) -> str:
    return span_precise(max(0.0, (now - then).total_seconds()))


def judge(row: dict[str, Any], thresholds: FleetThresholds, watching_since: datetime | None = None,
          last_held: datetime | None = None) -> FleetHealth:
    """The fleet's health from STATE_SQL's row. `watching_since`: when this watcher first
    looked (DB time): it never says nobody led before it could have seen a leader (a fleet
    starting up). `last_held`: when it last saw a session hold the lock (a frozen leader
    that wakes steps down and takes the lock again a moment later: no `no_leader` between)."""
    now: datetime = row["now"]
    recorded = row["recorded"] or "ok"
    holder = (printable(f"{row['hostname']} pid {row['pid']}") if row["hostname"] is not None
              else f"session {row['lock_pid'] or row['backend_pid']}")
    held = row["lock_pid"] is not None and row["lock_pid"] == row["backend_pid"]
    expires: datetime | None = row["expires_at"]
    led = held and expires is not None and expires > now

    def health(state: str, reason: str) -> FleetHealth:
        return FleetHealth(now, state, reason, led, recorded, row["recorded_at"], held=row["lock_pid"] is not None)

    if not led:
        # A watcher vouches only for the time it has watched (its first look: now); a lock
        # free now was held when it last saw it held.
        ended = max(t for t in (expires, watching_since or now, None if held else last_held) if t is not None)
        if now - ended <= thresholds.grace:
            # Within the grace nothing changes: no alert yet, and no recovery either.
            return health(recorded, "between leaders: within the grace")
        if held:
            assert expires is not None
            return health("stalled", f"the leader {holder} holds the leader lock but its lease expired at "
                                     f"{_iso(expires)} ({_ago(now, expires)} ago): frozen, or cut off from the "
                                     "database")
        if expires is None:
            return health("no_leader", "no runtime has led yet")
        return health("no_leader", f"no runtime holds the leader lock; the last lease ended at {_iso(expires)} "
                                   f"({_ago(now, expires)} ago)")
    since: datetime = row["acquired_at"] or now
    passes = from_json(row["recent_passes"])
    completed = [p.at for p in passes if not p.timed_out]
    # All kept passes timed out: the last completed one is older than the oldest kept.
    last = completed[0] if completed else (passes[-1].at if passes else None)
    lag = row["snapshot_interval"] or timedelta(0)
    reference = max(since, last) if last is not None else since
    if now - reference > thresholds.stall_after + lag:
        if last is not None and last >= since:
            timed_out = f"; its last {sum(1 for p in passes if p.timed_out)} passes timed out" \
                if passes and passes[0].timed_out else ""
            what = f"its last completed pass was at {_iso(last)} ({_ago(now, last)} ago){timed_out}"
        else:
            what = f"it has completed no pass since it took the lead at {_iso(since)} ({_ago(now, since)} ago)"
        return health("stalled", f"the leader {holder} renews its lease but {what}")
    evaluated: datetime | None = row["evaluated_at"]
    health_ref = max(since, evaluated) if evaluated is not None else since
    if now - health_ref > max(thresholds.stall_after, STALE_AFTER):
        when = f"at {_iso(evaluated)}" if evaluated is not None and evaluated >= since else \
            f"since it took the lead at {_iso(since)}"
        return health("stalled", f"the leader {holder} has not evaluated health {when} "
                                 f"({_ago(now, health_ref)} ago)")
    return health("ok", f"{holder} leads (term {row['term']}) and passes")


def read(conn: psycopg.Connection[Any], thresholds: FleetThresholds, now: datetime | None = None,
         watching_since: datetime | None = None, last_held: datetime | None = None) -> FleetHealth:
    row = conn.execute(STATE_SQL, {"now": now}).fetchone()
    assert row is not None  # v005 inserts the lease's one row
    return judge(row, thresholds, watching_since, last_held)


def record(conn: psycopg.Connection[Any], thresholds: FleetThresholds, instance_id: uuid.UUID | None,
           now: datetime | None = None, watching_since: datetime | None = None, last_held: datetime | None = None,
           ) -> tuple[FleetHealth, FleetTransition | None]:
    """Judge the fleet and record a change of its health, once: under the watch's advisory
    lock (transaction-scoped: safe through a pooler), judged again inside it. Another
    runtime recording at the same moment: nothing (it records the same change)."""
    found = read(conn, thresholds, now, watching_since, last_held)
    if found.state == found.recorded:
        return found, None
    with bounded(conn):
        got = conn.execute("SELECT pg_try_advisory_xact_lock(%s) AS got", (FLEET_WATCH_LOCK_KEY,)).fetchone()
        if not got or not got["got"]:
            return found, None
        found = read(conn, thresholds, now, watching_since, last_held)
        if found.state == found.recorded:
            return found, None
        row = conn.execute(RECORD_SQL, {"now": found.now, "from": found.recorded, "to": found.state,
                                        "reason": found.reason, "by": instance_id}).fetchone()
    assert row is not None
    return found, FleetTransition(**row)


# --- the deliverer's lease ---------------------------------------------------------------------

TAKE_SQL = """
WITH t AS (SELECT coalesce(%(now)s::timestamptz, clock_timestamp()) AS now),
taken AS (
    UPDATE awa.alert_deliverer d SET instance_id = %(me)s, expires_at = t.now + %(lease)s::interval
    FROM t
    WHERE d.singleton AND (d.expires_at IS NULL OR d.expires_at <= t.now
                           OR (d.instance_id = %(me)s AND d.expires_at < t.now + %(lease)s::interval / 2))
    RETURNING d.instance_id
)
SELECT EXISTS (SELECT 1 FROM taken)
       OR EXISTS (SELECT 1 FROM awa.alert_deliverer d, t
                  WHERE d.singleton AND d.instance_id = %(me)s AND d.expires_at > t.now) AS held
"""
LET_GO_SQL = """
UPDATE awa.alert_deliverer SET expires_at = coalesce(%(now)s::timestamptz, clock_timestamp())
WHERE singleton AND instance_id = %(me)s AND expires_at > coalesce(%(now)s::timestamptz, clock_timestamp())
"""


def take_sql(me: uuid.UUID, now: datetime | None = None,
             lease: timedelta = DELIVERER_LEASE) -> tuple[str, dict[str, Any]]:
    """The statement (and its parameters) that takes or renews the deliverer's lease for
    `me` and says whether `me` holds it: run inside the deliverer's round (one round trip)."""
    return TAKE_SQL, {"me": me, "now": now, "lease": lease}


def let_go(conn: psycopg.Connection[Any], me: uuid.UUID, now: datetime | None = None) -> bool:
    """End `me`'s deliverer lease now (a follower once someone leads; a runtime that stops)."""
    with bounded(conn):
        return conn.execute(LET_GO_SQL, {"me": me, "now": now}).rowcount > 0


def open_alert(conn: psycopg.Connection[Any]) -> FleetTransition | None:
    """The fleet's open alert: its last recorded transition when that is to no_leader or stalled."""
    row = conn.execute("SELECT id, at, from_state, to_state, reason FROM awa.fleet_transitions "
                       "ORDER BY id DESC LIMIT 1").fetchone()
    if row is None or row["to_state"] == "ok":
        return None
    return FleetTransition(**row)
