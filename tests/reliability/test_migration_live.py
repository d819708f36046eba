"""A migration beside a live leader (S35): a migration that touches both awa.cron_jobs and
awa.jobs, applied the way the runner applies one (its lock-order step, then the SQL, in
one transaction), runs again and again while a leader fires every second. No deadlock on
either side, and no fire is lost or doubled (the fires wait for the migration)."""

from __future__ import annotations

import random
import time
from pathlib import Path

import psycopg
import pytest
from helpers import wait_for

from awa_tui.engine import migrations

from .harness import (
    Summary,
    caught_up,
    check_fires,
    connect,
    db_now,
    fleet,
    pause,
    settle,
)

# Real processes for tens of seconds: `-m "not slow"` leaves them out of a quick local run.
pytestmark = pytest.mark.slow

SCHEDULES = 200
MIGRATIONS = 12

# Row changes in both tables and ALTERs of both (each ALTER needs ACCESS EXCLUSIVE): the
# shape that deadlocks with a fire unless the runner locked both tables up front.
THROWAWAY_SQL = """
UPDATE awa.jobs SET tags = tags WHERE id > (SELECT coalesce(max(id), 0) - 3000 FROM awa.jobs);
ALTER TABLE awa.cron_jobs ADD COLUMN rel_probe integer;
UPDATE awa.cron_jobs SET rel_probe = 1;
ALTER TABLE awa.jobs ADD COLUMN rel_probe integer;
ALTER TABLE awa.jobs DROP COLUMN rel_probe;
ALTER TABLE awa.cron_jobs DROP COLUMN rel_probe;
"""


def apply_throwaway(dsn: str) -> float:
    """One throwaway migration through the runner's lock-order step; returns its seconds."""
    started = time.monotonic()
    with psycopg.connect(dsn, autocommit=True, row_factory=psycopg.rows.dict_row) as conn, conn.transaction():
        migrations._lock_in_enqueue_order(conn)
        conn.execute(THROWAWAY_SQL)
    return time.monotonic() - started


def test_migration_beside_live_leader(dsn: str, log_dir: Path, scale: int, summary: Summary) -> None:
    rounds = MIGRATIONS * scale
    rng = random.Random()
    started = time.monotonic()
    conn = connect(dsn)
    durations: list[float] = []
    deadlocks: list[str] = []
    with fleet(dsn, log_dir, count=SCHEDULES) as f:
        f.spawn()
        settle(conn, f.names)
        for _ in range(rounds):
            # Land inside the leader's pass: it starts just after each whole second.
            pause((1.0 - time.time() % 1.0) + rng.uniform(0.0, 0.12))
            try:
                durations.append(apply_throwaway(dsn))
            except psycopg.errors.DeadlockDetected as exc:
                deadlocks.append(str(exc).splitlines()[0])
        end = db_now(conn)
        wait_for(lambda: caught_up(conn, f.names, end), 60, what="every schedule caught up")
        statuses = f.stop_all()
        problems = f.problems()
        logged = [line for p in f.procs for line in p.log().splitlines() if "deadlock" in line.lower()]
    check = check_fires(conn, f.names, f.expr, end)
    summary.runs = rounds
    summary.count(check)
    summary.seconds = time.monotonic() - started
    summary.notes = f"deadlocks: {len(deadlocks)} in migrations, {len(logged)} in runtimes; " \
                    f"slowest migration {max(durations, default=0):.2f}s"
    assert not deadlocks, deadlocks
    assert not logged, logged
    assert check.ok, check.describe()
    assert set(statuses.values()) == {0}, f"unclean stop: {statuses}\n{f.logs()}"
    assert not problems, "\n".join(problems)
