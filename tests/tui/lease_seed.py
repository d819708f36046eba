"""The seeded console database's leader: a session holding the leader lock, with the lease
naming the seeded leader runtime (app-1) and expiring 5 s after the console's fixed NOW.

Leadership on screen is the lock holder's (pg_locks), so a seeded world without a holder
would say "no live leader" on every panel."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row

from awa_tui.engine.core.db import LEADER_LOCK_KEY

LEASE = timedelta(seconds=5)


@contextmanager
def leader_lock_held(dsn: str, instance_id: Any, now: datetime, lease: timedelta = LEASE) -> Iterator[int]:
    """Hold the leader lock and lease as `instance_id` from `now`; yields the lock session's pid."""
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row, application_name="seeded leader") as holder:
        row = holder.execute(
            "SELECT got, pg_backend_pid() AS pid FROM awa.leader_acquire(%s, %s, %s, %s)",
            (LEADER_LOCK_KEY, instance_id, lease, now),
        ).fetchone()
        assert row is not None and row["got"], row
        yield row["pid"]
