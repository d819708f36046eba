"""Leader election through a session advisory lock on a dedicated connection (S7, S8),
with a lease renewed in DB time.

The lock alone cannot tell a frozen leader (SIGSTOP, a long GC pause, a hung VM keeps its
session, and so the lock, open) from a healthy one. So the holder also holds a lease
(awa.leader_lease) that its liveness loop renews every ping, never the evaluator, so a
long pass cannot depose a healthy leader. A standby that finds the lease expired while the
lock is still held terminates the holder's lock session and takes over. A leader checks
its lease, in DB time, before every evaluator pass; one that finds it expired steps down
without firing.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from contextlib import nullcontext
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg

from awa_tui.engine.core.db import LEADER_LOCK_KEY, connect
from awa_tui.engine.core.errors import AwaError, DatabaseUnavailable
from awa_tui.engine.core.limits import DEFAULT_LEASE
from awa_tui.engine.read.events import BECAME_LEADER, DEPOSED_OTHER, LOST_LEAD, REFUSED, RELEASED_LEAD
from awa_tui.engine.runtime.pooling import Route, probe_route, refusal, short_refusal
from awa_tui.printable import printable, printable_logger

if TYPE_CHECKING:
    from awa_tui.engine.read.events import RecentEvents
    from awa_tui.engine.runtime.beats import LoopBeats

log = printable_logger("awa_tui.leader")

RETRY_INTERVAL_S = 0.5  # followers retry often: a dead leader is replaced within 2 s (S7)
PING_INTERVAL_S = 1.0  # the leader proves its lock connection alive this often (S8: <= 30 s)
DEPOSED_RETRY_INTERVAL_S = 1.0  # first retry of a leader that lost its lock connection
# A silent network (a blackhole, a dropped NAT entry) raises no error: a statement on the
# lock connection that has no answer after this long counts as a failed ping (S8).
PING_TIMEOUT_S = 3.0
# A standby that may not terminate a stalled holder says so again at most this often.
DENIED_REPEAT_S = 60.0
# Why a leader stepped down on its lease, whichever thread saw it (the elector's renewal,
# the evaluator's check before a pass): its recent events read the same either way.
LEASE_LOST = "its lease expired or was taken over"
# Per-session server settings: Postgres drops a silent leader's session, and so frees the
# lock for a follower, within ~10 s instead of the OS default of hours (TCP only).
SERVER_KEEPALIVES_SQL = (
    "SELECT set_config('tcp_keepalives_idle', '5', false), set_config('tcp_keepalives_interval', '2', false),"
    " set_config('tcp_keepalives_count', '3', false), set_config('tcp_user_timeout', '10000', false)"
)

ACQUIRE_SQL = "SELECT * FROM awa.leader_acquire(%(key)s, %(instance)s, %(lease)s, %(now)s)"
# Renewal only extends a lease that this session still holds and that has not expired: a
# leader that was frozen past its expiry must step down, even if nobody deposed it yet.
RENEW_SQL = """
WITH n AS (SELECT coalesce(%(now)s::timestamptz, clock_timestamp()) AS t)
UPDATE awa.leader_lease l SET renewed_at = n.t, expires_at = n.t + l.lease
FROM n
WHERE l.singleton AND l.instance_id = %(instance)s AND l.term = %(term)s
  AND l.backend_pid = pg_backend_pid() AND l.expires_at > n.t
  AND awa.leader_lock_pid(%(key)s) = pg_backend_pid()  -- S57: the renewing session holds the lock
RETURNING l.expires_at
"""
# S57: after a refused renewal, whether our own term's lease names a server session other
# than the one answering on our own connection: only a pooler moves a connection between
# server sessions, and the lock stayed behind on the first one.
MOVED_SQL = """
SELECT l.backend_pid IS DISTINCT FROM pg_backend_pid() AS moved FROM awa.leader_lease l
WHERE l.singleton AND l.instance_id = %(instance)s AND l.term = %(term)s
"""
# ...and then that lease ends now, from whichever session answers: a standby on a direct
# connection deposes the session the lock stayed behind on at once, not at the expiry.
END_MOVED_LEASE_SQL = """
UPDATE awa.leader_lease l SET expires_at = least(l.expires_at, clock_timestamp())
WHERE l.singleton AND l.instance_id = %(instance)s AND l.term = %(term)s
RETURNING l.term
"""
# A clean release ends the lease now, so the term recorded for the fire ledger (v007) ends
# when leadership did, not when the unrenewed lease would have run out.
RELEASE_SQL = """
UPDATE awa.leader_lease l SET expires_at = least(l.expires_at, clock_timestamp())
WHERE l.singleton AND l.instance_id = %(instance)s AND l.term = %(term)s AND l.backend_pid = pg_backend_pid()
RETURNING l.term
"""
# Checked before every evaluator pass, on the evaluator's own connection: the lease names
# this runtime and term, has not expired, and its lock session still holds the lock.
LEASE_VALID_SQL = """
SELECT EXISTS (
    SELECT 1 FROM awa.leader_lease l
    WHERE l.singleton AND l.instance_id = %(instance)s AND l.term = %(term)s
      AND l.expires_at > coalesce(%(now)s::timestamptz, clock_timestamp())
      AND l.backend_pid = awa.leader_lock_pid(%(key)s)
) AS valid
"""


def lease_valid(
    conn: psycopg.Connection[Any], instance_id: uuid.UUID, term: int | None, now: datetime | None = None
) -> bool:
    """Whether this runtime's lease of `term` is valid at `now` (DB time when omitted)."""
    if term is None:
        return False
    row = conn.execute(
        LEASE_VALID_SQL, {"instance": instance_id, "term": term, "now": now, "key": LEADER_LOCK_KEY}
    ).fetchone()
    return bool(row and row["valid"])


class LeaderElector:
    """Holds or competes for the leader lock and lease. `is_leader` is cleared the moment
    a ping or a renewal fails, or the evaluator finds the lease expired."""

    def __init__(
        self,
        dsn: str,
        application_name: str = "awa-tui leader",
        *,
        instance_id: uuid.UUID | None = None,
        lease: timedelta = DEFAULT_LEASE,
        events: RecentEvents | None = None,
    ) -> None:
        self.dsn = dsn
        self.events = events  # the runtime's recent events (its snapshot carries them), if kept
        self.application_name = application_name
        self.instance_id = instance_id or uuid.uuid4()
        self.lease = lease
        self.term: int | None = None  # of the lease this elector holds (or last held)
        self.expires_at: datetime | None = None
        self._conn: psycopg.Connection[Any] | None = None
        self._leader = threading.Event()
        # Set on every change of leadership: the reporter writes the snapshot at once, so
        # observers never see a stale leader flag for a whole snapshot interval.
        self.changed = threading.Event()
        # Set when leadership is gained: the evaluator runs its first pass at once.
        self.gained = threading.Event()
        self._abdicate = threading.Event()  # the evaluator found the lease gone
        self._nudge = threading.Event()  # wakes run() early (abdication, stop)
        self._denied_logged: dict[int, float] = {}
        self._lost = False  # leadership was lost since run() last looked
        # S57: set when the leader connection goes through a pooler that does not keep its
        # server session; this runtime then never competes again (said once, in one line).
        self.refused: Route | None = None
        self._unreachable_logged: float | None = None
        self._too_old_logged = False

    @property
    def is_leader(self) -> bool:
        return self._leader.is_set()

    @property
    def renew_interval_s(self) -> float:
        # At least three renewals per lease, so one slow renewal never lets it lapse.
        return min(PING_INTERVAL_S, self.lease.total_seconds() / 3)

    def _set(self, leader: bool, *, released: bool = False, why: str = "") -> None:
        if leader == self._leader.is_set():
            return
        if leader:
            self._leader.set()
            log.info("became leader (lease term %s, %.0fs)", self.term, self.lease.total_seconds())
            self._event(BECAME_LEADER, f"term {self.term}, lease {self.lease.total_seconds():.0f}s")
            self.gained.set()
        else:
            self._leader.clear()
            if released:
                log.info("released leadership")
                self._event(RELEASED_LEAD, f"term {self.term}: this runtime stopped")
            else:
                self._lost = True
                log.warning("lost leadership")
                self._event(LOST_LEAD, f"term {self.term}: {why}" if why else f"term {self.term}")
        self.changed.set()

    def _event(self, kind: str, detail: str = "") -> None:
        if self.events is not None:
            self.events.record(kind, detail)

    def abdicate(self, reason: str) -> None:
        """Stop leading now (any thread): the elector thread drops the lock session next.
        `reason` reads after "stepped down: "; the event's detail names the term."""
        if self.is_leader:
            log.warning("stepping down without evaluating (term %s): %s", self.term, reason)
        self._set(False, why=f"stepped down: {reason}")
        self._abdicate.set()
        self._nudge.set()

    def nudge(self) -> None:
        self._nudge.set()

    def step(self, now: datetime | None = None) -> bool:
        """One election step: renew the lease if leading, else try to take the lock (deposing
        a holder whose lease expired). `now` is for tests; DB time when omitted. Returns
        leadership."""
        if self.refused is not None:
            return False
        try:
            if self._abdicate.is_set():
                self._abdicate.clear()
                self._lost = True
                self._set(False)
                self._let_go()
                return False
            if self._conn is None or self._conn.closed or self._conn.broken:
                self._drop()
                self._conn = connect(self.dsn, application_name=self.application_name)
                route = probe_route(self._conn, self.dsn, self.application_name)
                if not route.session_bound:
                    self._refuse(route)
                    return False
                self._execute(SERVER_KEEPALIVES_SQL)
            if self.is_leader:
                row = self._execute(
                    RENEW_SQL, {"now": now, "instance": self.instance_id, "term": self.term, "key": LEADER_LOCK_KEY})
                if row is None:
                    moved = self._execute(MOVED_SQL, {"instance": self.instance_id, "term": self.term})
                    if moved is not None and moved["moved"]:
                        self._set(False, why="its lock connection moved to another server session (a pooler)")
                        self._execute(END_MOVED_LEASE_SQL, {"instance": self.instance_id, "term": self.term})
                        self._refuse(Route("transaction"))
                        return False
                    log.warning("leader lease expired or taken over (term %s): stepping down", self.term)
                    self._set(False, why=f"stepped down: {LEASE_LOST}")
                    self._let_go()
                    return False
                self.expires_at = row["expires_at"]
                return self.is_leader
            row = self._execute(
                ACQUIRE_SQL, {"key": LEADER_LOCK_KEY, "instance": self.instance_id, "lease": self.lease, "now": now}
            )
            assert row is not None
            self._report(row)
            if row["got"]:
                self.term, self.expires_at = row["term"], row["expires_at"]
                self._set(True)
        except (psycopg.Error, AwaError) as exc:
            # S8: stop evaluating at once, never reuse this connection.
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if self.is_leader:
                log.warning("leader lock connection failed: %s", first)
            elif isinstance(exc, DatabaseUnavailable) and self._may_say_unreachable():
                # A follower that cannot even connect (a wrong leader DSN) would never lead
                # and never say why. The message names no password (db.connect).
                log.warning("cannot open the leader connection (retrying): %s", exc)
            self._set(False, why=f"its lock connection failed: {printable(first)}")
            self._drop()
        return self.is_leader

    def _may_say_unreachable(self) -> bool:
        last, now = self._unreachable_logged, time.monotonic()
        if last is not None and now - last < DENIED_REPEAT_S:
            return False
        self._unreachable_logged = now
        return True

    def _refuse(self, route: Route) -> None:
        """S57: never compete again, and drop the connection without unlocking: through such
        a pooler an unlock runs on whichever server session is lent, maybe another's."""
        self.refused = route
        log.error("%s", refusal(route))
        self._event(REFUSED, short_refusal(route) or "")
        self._drop()
        self.changed.set()  # the snapshot carries the refusal now, for every console to see

    def _report(self, row: dict[str, Any]) -> None:
        """Log a deposition, or (rate-limited) why a stalled holder could not be deposed, or
        (once) that the schema's release policy keeps this runtime from leading."""
        too_old = row.get("too_old")
        if too_old is not None and not self._too_old_logged:
            self._too_old_logged = True
            log.warning("%s: this runtime steps aside and keeps working jobs (a newer release leads)",
                        printable(too_old))
        holder = f"backend pid {row['holder_pid']}"
        if row["holder_instance"] is not None:
            holder += f", instance {str(row['holder_instance'])[:8]}"
        expired = row["holder_expires_at"]
        lease = f"lease expired {expired.isoformat()}" if expired else "no lease"
        if row["deposed_pid"] is not None:
            log.warning("deposed the stalled leader (backend pid %s, %s): terminated its lock session",
                        row["deposed_pid"], lease)
            self._event(DEPOSED_OTHER, f"backend pid {row['deposed_pid']}, {lease}: terminated its lock session")
        if row["denied"] is not None:
            pid = int(row["holder_pid"])
            last = self._denied_logged.get(pid)
            if last is None or time.monotonic() - last >= DENIED_REPEAT_S:
                self._denied_logged[pid] = time.monotonic()
                log.warning(
                    "cannot depose the stalled leader (%s, %s): %s; run every runtime as the same database "
                    "role, or GRANT pg_signal_backend to this one", holder, lease, printable(row["denied"]))

    def _execute(self, query: str, params: Any = None) -> Any:
        """One statement on the lock connection, failed if it has no answer in PING_TIMEOUT_S.

        On a timeout the watchdog stops leading at once (S8), then shuts the socket so the
        blocked call returns with an error and the connection is dropped.
        """
        conn = self._conn
        assert conn is not None
        stalled = threading.Event()
        watchdog = threading.Timer(PING_TIMEOUT_S, self._stalled, args=(conn, stalled))
        watchdog.daemon = True
        watchdog.start()
        try:
            row = conn.execute(query, params).fetchone()  # type: ignore[arg-type]  # our literal SQL
        finally:
            watchdog.cancel()
        if stalled.is_set():  # answered just as the watchdog fired: the socket is gone anyway
            raise AwaError(f"leader lock connection silent for {PING_TIMEOUT_S:.0f}s")
        return row

    def _stalled(self, conn: psycopg.Connection[Any], stalled: threading.Event) -> None:
        stalled.set()
        log.warning("leader lock connection silent for %.0fs: stepping down", PING_TIMEOUT_S)
        self._set(False, why=f"its lock connection was silent for {PING_TIMEOUT_S:.0f}s")
        try:
            with socket.socket(fileno=os.dup(conn.fileno())) as sock:
                sock.shutdown(socket.SHUT_RDWR)
        except (OSError, psycopg.Error):
            pass  # already closed: the blocked call has returned

    def run(self, stop: threading.Event, beats: LoopBeats | None = None) -> None:
        while not stop.is_set():
            self._lost = False
            with beats.step("leader") if beats is not None else nullcontext():
                leading = self.step()
            if leading:
                wait = self.renew_interval_s
            else:
                # A leader that just lost its lock or lease is the suspect one: it waits a
                # little longer, so a healthy follower (retrying every 0.5 s) wins the lock.
                wait = DEPOSED_RETRY_INTERVAL_S if self._lost else RETRY_INTERVAL_S
            if self._nudge.wait(wait):  # an abdication (handled by the next step) or stop
                self._nudge.clear()

    def _let_go(self) -> None:
        """Unlock (so a standby may take the lock at once, not when the server has noticed
        the closed session), then drop the session either way."""
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            try:
                self._execute("SELECT pg_advisory_unlock(%s)", (LEADER_LOCK_KEY,))
            except (psycopg.Error, AwaError):
                pass  # the session is going away: that frees the lock too
        self._drop()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    def release(self) -> None:
        """Release leadership (clean shutdown): unlock, then close the connection."""
        conn = self._conn
        if conn is not None and self.is_leader and not conn.closed:
            try:
                self._execute(RELEASE_SQL, {"instance": self.instance_id, "term": self.term})
                self._execute("SELECT pg_advisory_unlock(%s)", (LEADER_LOCK_KEY,))
            except (psycopg.Error, AwaError):
                pass
        self._set(False, released=True)
        self._drop()
