"""Leader election through a session advisory lock on a dedicated connection (S7, S8)."""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

import psycopg

from awa_tui.engine.db import LEADER_LOCK_KEY, connect
from awa_tui.engine.errors import AwaError
from awa_tui.printable import printable_logger

log = printable_logger("awa_tui.leader")

RETRY_INTERVAL_S = 0.5  # followers retry often: a dead leader is replaced within 2 s (S7)
PING_INTERVAL_S = 1.0  # the leader proves its lock connection alive this often (S8: <= 30 s)
DEPOSED_RETRY_INTERVAL_S = 1.0  # first retry of a leader that lost its lock connection
# A silent network (a blackhole, a dropped NAT entry) raises no error: a statement on the
# lock connection that has no answer after this long counts as a failed ping (S8).
PING_TIMEOUT_S = 3.0
# Per-session server settings: Postgres drops a silent leader's session, and so frees the
# lock for a follower, within ~10 s instead of the OS default of hours (TCP only).
SERVER_KEEPALIVES_SQL = (
    "SELECT set_config('tcp_keepalives_idle', '5', false), set_config('tcp_keepalives_interval', '2', false),"
    " set_config('tcp_keepalives_count', '3', false), set_config('tcp_user_timeout', '10000', false)"
)


class LeaderElector:
    """Holds or competes for the leader lock. `is_leader` is cleared the moment a ping fails."""

    def __init__(self, dsn: str, application_name: str = "awa-tui leader") -> None:
        self.dsn = dsn
        self.application_name = application_name
        self._conn: psycopg.Connection[Any] | None = None
        self._leader = threading.Event()
        # Set on every change of leadership: the reporter writes the snapshot at once, so
        # observers never see a stale leader flag for a whole snapshot interval.
        self.changed = threading.Event()

    @property
    def is_leader(self) -> bool:
        return self._leader.is_set()

    def _set(self, leader: bool, *, released: bool = False) -> None:
        if leader == self._leader.is_set():
            return
        if leader:
            self._leader.set()
            log.info("became leader")
        else:
            self._leader.clear()
            if released:
                log.info("released leadership")
            else:
                log.warning("lost leadership")
        self.changed.set()

    def step(self) -> bool:
        """One election step: try to take the lock, or ping it if held. Returns leadership."""
        try:
            if self._conn is None or self._conn.closed or self._conn.broken:
                self._drop()
                self._conn = connect(self.dsn, application_name=self.application_name)
                self._execute(SERVER_KEEPALIVES_SQL)
            if self.is_leader:
                self._execute("SELECT 1")
                return self.is_leader
            row = self._execute("SELECT pg_try_advisory_lock(%s) AS got", (LEADER_LOCK_KEY,))
            self._set(bool(row and row["got"]))
        except (psycopg.Error, AwaError) as exc:
            # S8: stop evaluating at once, never reuse this connection.
            if self.is_leader:
                log.warning("leader lock connection failed: %s", str(exc).splitlines()[0] if str(exc) else exc)
            self._set(False)
            self._drop()
        return self.is_leader

    def _execute(self, query: str, params: tuple[Any, ...] | None = None) -> Any:
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
        self._set(False)
        try:
            with socket.socket(fileno=os.dup(conn.fileno())) as sock:
                sock.shutdown(socket.SHUT_RDWR)
        except (OSError, psycopg.Error):
            pass  # already closed: the blocked call has returned

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            was_leader = self.is_leader
            leader = self.step()
            if leader:
                stop.wait(PING_INTERVAL_S)
            else:
                # A leader that just lost its lock connection is the suspect one: it waits a
                # little longer, so a healthy follower (retrying every 0.5 s) wins the lock.
                stop.wait(DEPOSED_RETRY_INTERVAL_S if was_leader else RETRY_INTERVAL_S)

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
                self._execute("SELECT pg_advisory_unlock(%s)", (LEADER_LOCK_KEY,))
            except (psycopg.Error, AwaError):
                pass
        self._set(False, released=True)
        self._drop()
