"""Runtime snapshots (S21): one row per runtime, written under the protocol lock (S32)."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import psycopg

from awa_tui.engine.db import PROTOCOL_LOCK_KEY

PROTOCOL_VERSION = 1


@dataclass
class RuntimeIdentity:
    version: str
    snapshot_interval: timedelta = timedelta(seconds=10)
    instance_id: uuid.UUID = field(default_factory=uuid.uuid4)
    hostname: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    protocol_version: int = PROTOCOL_VERSION
    owner: str | None = None
    authoritative: bool = False


SNAPSHOT_SQL = """
INSERT INTO awa.runtime_instances AS r (
    instance_id, hostname, pid, version, protocol_version, started_at, last_seen_at,
    snapshot_interval, is_leader, health, stopped_at, owner, authoritative)
VALUES (%(instance_id)s, %(hostname)s, %(pid)s, %(version)s, %(protocol_version)s, now(), now(),
        %(snapshot_interval)s, %(is_leader)s, %(health)s,
        CASE WHEN %(stopped)s THEN now() END, %(owner)s, %(authoritative)s)
ON CONFLICT (instance_id) DO UPDATE SET
    last_seen_at = now(), is_leader = EXCLUDED.is_leader, health = EXCLUDED.health,
    stopped_at = EXCLUDED.stopped_at, snapshot_interval = EXCLUDED.snapshot_interval,
    protocol_version = EXCLUDED.protocol_version, version = EXCLUDED.version,
    owner = EXCLUDED.owner, authoritative = EXCLUDED.authoritative
"""


def write_snapshot(
    conn: psycopg.Connection[Any],
    ident: RuntimeIdentity,
    *,
    is_leader: bool,
    health: str = "healthy",
    stopped: bool = False,
) -> None:
    """Write this runtime's snapshot in one transaction under the protocol lock."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (PROTOCOL_LOCK_KEY,))
        conn.execute(
            SNAPSHOT_SQL,
            {
                "instance_id": ident.instance_id,
                "hostname": ident.hostname,
                "pid": ident.pid,
                "version": ident.version,
                "protocol_version": ident.protocol_version,
                "snapshot_interval": ident.snapshot_interval,
                "is_leader": is_leader,
                "health": "stopped" if stopped else health,
                "stopped": stopped,
                "owner": ident.owner,
                "authoritative": ident.authoritative,
            },
        )
