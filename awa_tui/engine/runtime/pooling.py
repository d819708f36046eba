"""Whether a connection's server session stays its own (S57): a direct connection, or one
through a pooler in session mode, keeps one server session for its whole life; a pooler in
transaction or statement mode lends a session per transaction (or statement), and session
state (the leader's advisory lock) stays behind on a session other clients then use.

Decided on the connection itself plus one short-lived probe connection to the same DSN:

- no pooler: the pid the server announced at connection start is the pid of the session
  that answers (a pooler answers the start itself, with a pid of its own making);
- statement mode: a transaction of two statements is refused;
- transaction mode: between our own statements the pooler lends our server session to
  another client, so the probe lands on it, or our next statement lands on another one.
  In session mode neither can happen while we stay connected.

A pooler the probe cannot catch (a busy transaction pool that happens to hand us the same
session every time) is caught later: every lease renewal checks that the lock is held by
the very session renewing it (runtime/leader.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from awa_tui.engine.core.db import STATEMENT_POOLING, behind_pooler, connect, server_pid
from awa_tui.engine.core.errors import AwaError

PROBE_ROUNDS = 4  # alternations of our statements and the probe's


@dataclass(frozen=True)
class Route:
    """How a connection reaches its server: `direct`, or through a pooler in `session`,
    `transaction` or `statement` mode."""

    mode: str

    @property
    def pooled(self) -> bool:
        return self.mode != "direct"

    @property
    def session_bound(self) -> bool:
        """Session state (a session advisory lock) stays with this connection."""
        return self.mode in ("direct", "session")


DIRECT = Route("direct")


def probe_route(conn: psycopg.Connection[Any], dsn: str, application_name: str) -> Route:
    """The route of `conn` (opened on `dsn`); opens and closes one probe connection when a
    pooler is in between. Raises AwaError when the probe cannot connect."""
    if not behind_pooler(conn):
        return DIRECT
    probe = connect(dsn, application_name=f"{application_name} probe")
    try:
        try:
            with probe.transaction():
                probe.execute("SELECT 1", prepare=False)
                probe.execute("SELECT 2", prepare=False)
        except psycopg.Error as exc:
            if STATEMENT_POOLING in str(exc):
                return Route("statement")
            raise
        mine = server_pid(conn)
        for _ in range(PROBE_ROUNDS):
            if server_pid(probe) == mine or server_pid(conn) != mine:
                return Route("transaction")
        return Route("session")
    except psycopg.Error as exc:
        raise AwaError(f"cannot tell how the pooler in front of the server pools: {exc}") from None
    finally:
        try:
            probe.close()
        except psycopg.Error:
            pass


def refusal(route: Route) -> str:
    """The one log line of a runtime that will not lead through `route`."""
    return (
        f"not competing for leadership: this runtime's leader connection goes through a connection pooler in "
        f"{route.mode} pooling mode, which does not keep a server session per client, so the leader lock "
        f"cannot be held safely; give the leader connection a direct database URL (--leader-dsn or "
        f"AWA_LEADER_DATABASE_URL) or use the pooler's session mode. Workers and sync go on through the pooler"
    )


def short_refusal(route: Route | None) -> str | None:
    """The refusal in a badge's words (`pooler in transaction mode`), None when there is none."""
    return None if route is None else f"pooler in {route.mode} mode"
