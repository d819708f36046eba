"""A migration beside a live leader (S35): a migration that touches both awa.cron_jobs and
awa.jobs, applied the way the runner applies one (its lock-order step, then the SQL, in
one transaction), runs again and again while a leader fires every second. No deadlock on
either side (as Postgres counts them), and no fire is lost or doubled (the fires wait for
the migration). A negative control runs it without the lock step and must see a deadlock."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from helpers import wait_for

from awa_tui.engine import migrations

from .harness import (
    FireCheck,
    Summary,
    caught_up,
    check_fires,
    connect,
    db_now,
    deadlocks,
    fleet,
    pause,
    settle,
)

# Real processes for tens of seconds: `-m "not slow"` leaves them out of a quick local run.
pytestmark = pytest.mark.slow

SCHEDULES = 200
MIGRATIONS = 12
CONTROL_MIGRATIONS = 4

# ALTERs of both tables (each needs ACCESS EXCLUSIVE), jobs first, with a data step between
# them that outlasts an evaluator tick: a fire that starts meanwhile holds cron_jobs and
# waits for jobs, then the ALTER of cron_jobs waits for it. That is a deadlock unless the
# runner locked both tables up front, in the order a fire takes them (S35).
THROWAWAY_SQL = """
ALTER TABLE awa.jobs ADD COLUMN rel_probe integer;
UPDATE awa.jobs SET tags = tags WHERE id > (SELECT coalesce(max(id), 0) - 3000 FROM awa.jobs);
SELECT pg_sleep(1.1);
ALTER TABLE awa.cron_jobs ADD COLUMN rel_probe integer;
UPDATE awa.cron_jobs SET rel_probe = 1;
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


@dataclass
class MigrationOutcome:
    durations: list[float]
    in_migrations: list[str]  # DeadlockDetected raised to the migration
    detected: int  # deadlocks Postgres counted in this database (either side)
    check: FireCheck
    statuses: dict[int, int]
    problems: list[str]
    logs: str


def run_migrations_beside_leader(dsn: str, log_dir: Path, rounds: int) -> MigrationOutcome:
    rng = random.Random()
    conn = connect(dsn)
    durations: list[float] = []
    in_migrations: list[str] = []
    with fleet(dsn, log_dir, count=SCHEDULES) as f:
        f.spawn()
        settle(conn, f.names)
        before = deadlocks(conn)
        for _ in range(rounds):
            # Start just before a whole second: the leader's pass begins inside the window.
            pause((1.0 - time.time() % 1.0) + rng.uniform(0.6, 0.9))
            try:
                durations.append(apply_throwaway(dsn))
            except psycopg.errors.DeadlockDetected as exc:
                in_migrations.append(str(exc).splitlines()[0])
        end = db_now(conn)
        wait_for(lambda: caught_up(conn, f.names, end), 60, what="every schedule caught up")
        statuses = f.stop_all()  # its backends exit and flush their statistics
        problems = f.problems()
        logs = f.logs()
    return MigrationOutcome(durations, in_migrations, deadlocks(conn) - before,
                            check_fires(conn, f.names, f.expr, end), statuses, problems, logs)


def test_migration_beside_live_leader(dsn: str, log_dir: Path, scale: int, summary: Summary) -> None:
    rounds = MIGRATIONS * scale
    started = time.monotonic()
    out = run_migrations_beside_leader(dsn, log_dir, rounds)
    summary.runs = rounds
    summary.count(out.check)
    summary.seconds = time.monotonic() - started
    summary.notes = (f"deadlocks: {out.detected} detected by Postgres, {len(out.in_migrations)} in migrations; "
                     f"slowest migration {max(out.durations, default=0):.2f}s")
    assert not out.in_migrations, out.in_migrations
    assert out.detected == 0, "Postgres detected a deadlock"
    assert len(out.durations) == rounds
    assert out.check.ok, out.check.describe()
    assert set(out.statuses.values()) == {0}, f"unclean stop: {out.statuses}\n{out.logs}"
    assert not out.problems, "\n".join(out.problems)


def test_migration_control_without_the_lock_order_is_caught(
    dsn: str, log_dir: Path, monkeypatch: pytest.MonkeyPatch, summary: Summary
) -> None:
    """Negative control: the same scenario with the runner's lock step disabled (in this
    test process, which applies the migrations) must deadlock, and the check must see it."""
    skipped: list[int] = []
    monkeypatch.setattr(migrations, "_lock_in_enqueue_order", lambda conn: skipped.append(1))
    out = run_migrations_beside_leader(dsn, log_dir, CONTROL_MIGRATIONS)
    summary.runs = CONTROL_MIGRATIONS
    summary.notes = (f"negative control, no lock step: {out.detected} deadlocks detected by Postgres, "
                     f"{len(out.in_migrations)} in migrations (expected >= 1)")
    assert len(skipped) == CONTROL_MIGRATIONS  # the fault was in every migration
    assert out.detected >= 1, f"no deadlock without the lock order ({out.in_migrations})"
