"""Leader election through a session advisory lock on a dedicated connection (S7, S8)."""

from __future__ import annotations

import logging
import threading
from typing import Any

import psycopg

from awa_tui.engine.db import LEADER_LOCK_KEY, connect
from awa_tui.engine.errors import AwaError

log = logging.getLogger("awa_tui.leader")

RETRY_INTERVAL_S = 0.5  # followers retry often: a dead leader is replaced within 2 s (S7)
PING_INTERVAL_S = 1.0  # the leader proves its lock connection alive this often (S8: <= 30 s)


class LeaderElector:
    """Holds or competes for the leader lock. `is_leader` is cleared the moment a ping fails."""

    def __init__(self, dsn: str, application_name: str = "awa-tui leader") -> None:
        self.dsn = dsn
        self.application_name = application_name
        self._conn: psycopg.Connection[Any] | None = None
        self._leader = threading.Event()
        self.changed = threading.Condition()

    @property
    def is_leader(self) -> bool:
        return self._leader.is_set()

    def _set(self, leader: bool) -> None:
        if leader == self._leader.is_set():
            return
        if leader:
            self._leader.set()
            log.info("became leader")
        else:
            self._leader.clear()
            log.warning("lost leadership")
        with self.changed:
            self.changed.notify_all()

    def step(self) -> bool:
        """One election step: try to take the lock, or ping it if held. Returns leadership."""
        try:
            if self._conn is None or self._conn.closed or self._conn.broken:
                self._drop()
                self._conn = connect(self.dsn, application_name=self.application_name)
            if self.is_leader:
                self._conn.execute("SELECT 1")
                return True
            row = self._conn.execute("SELECT pg_try_advisory_lock(%s) AS got", (LEADER_LOCK_KEY,)).fetchone()
            self._set(bool(row and row["got"]))
        except (psycopg.Error, AwaError) as exc:
            # S8: stop evaluating at once, never reuse this connection.
            if self.is_leader:
                log.warning("leader lock connection failed: %s", str(exc).splitlines()[0] if str(exc) else exc)
            self._set(False)
            self._drop()
        return self.is_leader

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            leader = self.step()
            stop.wait(PING_INTERVAL_S if leader else RETRY_INTERVAL_S)

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
                conn.execute("SELECT pg_advisory_unlock(%s)", (LEADER_LOCK_KEY,))
            except psycopg.Error:
                pass
        self._set(False)
        self._drop()
