"""Which server a session reached: a primary, or a hot standby replaying one (S58).

A standby answers every read but refuses every write, so the engine asks
pg_is_in_recovery() where it matters: a read-only console or CLI reads there as on a
primary (and shows the replay lag); a write, a migration or a runtime is refused in one
line naming the server, instead of the database's "cannot execute ... in a read-only
transaction" from whichever statement came first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from awa_tui.printable import printable

# Time: since the last transaction replayed was committed on the primary (it grows while the
# primary is idle, so it is shown beside the bytes). Bytes: WAL received, not yet replayed.
ROLE_SQL = """
SELECT pg_is_in_recovery() AS standby,
       CASE WHEN pg_is_in_recovery()
            THEN extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8 END AS lag_s,
       CASE WHEN pg_is_in_recovery()
            THEN greatest(pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()), 0)::bigint
       END AS behind_bytes
"""


@dataclass(frozen=True)
class ServerRole:
    """The server of a session: where it is, and whether it is a standby and how far behind."""

    where: str  # host:port the session reached (of a multi-host DSN, the one it chose)
    standby: bool = False
    replay_lag_s: float | None = None  # now - the last replayed commit's time; None: nothing replayed yet
    behind_bytes: int | None = None  # WAL received but not replayed yet

    def describe(self) -> str | None:
        """One line saying a read comes from a standby, and how far behind it is; None on a
        primary. The newest replayed change also ages while the primary is idle, so with
        nothing left to replay it is "caught up" and the age is given as what it is."""
        if not self.standby:
            return None
        if self.replay_lag_s is None:
            return f"reading {self.where}, a hot standby: nothing replayed yet"
        age = f"{max(self.replay_lag_s, 0.0):.1f} s"
        if self.behind_bytes == 0:
            return f"reading {self.where}, a hot standby, caught up (newest change replayed {age} ago)"
        waiting = "" if self.behind_bytes is None else f", {self.behind_bytes:,} bytes of changes to replay"
        return f"reading {self.where}, a hot standby {age} behind its primary{waiting}"


def server_where(conn: psycopg.Connection[Any]) -> str:
    """'127.0.0.1:5433' (or the socket directory): the server this session reached, never
    the DSN (which may list several hosts, or carry a password)."""
    host, port = conn.info.host, conn.info.port
    return printable(host if host.startswith("/") else f"{host}:{port}")


def server_role(conn: psycopg.Connection[Any]) -> ServerRole:
    row = conn.execute(ROLE_SQL).fetchone()
    assert row is not None
    return ServerRole(server_where(conn), bool(row["standby"]), row["lag_s"], row["behind_bytes"])


# The time the data a session reads is from. On a primary, and on a standby with nothing
# received left to replay, it is now. On a standby replaying behind, what it shows is the
# primary as of the newest change replayed, so a lease, a heartbeat or a due fire read there
# is judged at that change's commit time: by the standby's own clock, a leader renewing its
# lease every second on the primary would read as expired once replay falls behind the lease.
READ_TIME_SQL = """
SELECT CASE WHEN pg_is_in_recovery() AND pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn()
            THEN least(clock_timestamp(), coalesce(pg_last_xact_replay_timestamp(), clock_timestamp()))
            ELSE clock_timestamp() END AS now
"""


def read_time(conn: psycopg.Connection[Any]) -> datetime:
    """Now, for judging what this session reads (READ_TIME_SQL); the database's clock on a primary."""
    row = conn.execute(READ_TIME_SQL).fetchone()
    assert row is not None
    return row["now"]


def standby_message(where: str) -> str:
    return f"{where} is a read-only standby (in recovery): writes go to the primary"


def standby_refusal(conn: psycopg.Connection[Any]) -> str | None:
    """The one line refusing a write on a standby, or None on a primary."""
    row = conn.execute("SELECT pg_is_in_recovery() AS standby").fetchone()
    return standby_message(server_where(conn)) if row and row["standby"] else None
