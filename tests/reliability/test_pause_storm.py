"""Pause storm (S11, S16, S20): operators toggle pause/resume of 50 schedules every few
milliseconds while a leader fires them every second. A paused schedule never fires (a test
trigger in the database refuses any fire on a paused row version), catch_up replays every
fire a pause held back, nothing is doubled, and every action has its audit entry."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_for

from awa_tui import Client
from awa_tui.engine.errors import AwaError

from .harness import (
    Summary,
    audit_count,
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

SCHEDULES = 50
STORM_S = 10.0
OPERATORS = 4
MESSAGE = "fired while paused"

# BEFORE UPDATE sees the row version actually being updated (after any re-check of a
# concurrently updated row), so OLD.paused_at is the pause state the fire really met.
GUARD_SQL = f"""
CREATE SCHEMA IF NOT EXISTS rel;
CREATE FUNCTION rel.no_fire_while_paused() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.paused_at IS NOT NULL AND NEW.last_enqueued_at IS DISTINCT FROM OLD.last_enqueued_at THEN
        RAISE EXCEPTION 'rel: % {MESSAGE} (paused at %, fire %)', OLD.name, OLD.paused_at, NEW.last_enqueued_at;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER rel_no_fire_while_paused BEFORE UPDATE ON awa.cron_jobs
    FOR EACH ROW EXECUTE FUNCTION rel.no_fire_while_paused();
"""


class Operator(threading.Thread):
    """Toggles its own share of the schedules as fast as an operator script could."""

    def __init__(self, dsn: str, names: list[str], deadline: float, seed: int) -> None:
        super().__init__(daemon=True)
        self.client = Client(dsn, operator=f"storm-{seed}")
        self.names = names
        self.deadline = deadline
        self.rng = random.Random(seed)
        self.paused: set[str] = set()
        self.actions = 0
        self.errors: list[str] = []

    def run(self) -> None:
        try:
            while time.monotonic() < self.deadline:
                name = self.rng.choice(self.names)
                try:
                    if name in self.paused:
                        self.client.resume(name)
                        self.paused.discard(name)
                    else:
                        self.client.pause(name)
                        self.paused.add(name)
                    self.actions += 1
                except AwaError as exc:
                    self.errors.append(str(exc))
                pause(self.rng.uniform(0.0, 0.004))  # every few milliseconds
            for name in sorted(self.paused):
                self.client.resume(name)
                self.actions += 1
        finally:
            self.client.close()


def test_pause_storm(dsn: str, log_dir: Path, scale: int, summary: Summary) -> None:
    started = time.monotonic()
    conn = connect(dsn)
    conn.execute(GUARD_SQL)  # type: ignore[arg-type]
    with fleet(dsn, log_dir, count=SCHEDULES) as f:
        f.spawn()
        settle(conn, f.names)
        _guard_works(conn, f.names[0])
        audit_before = audit_count(conn)
        deadline = time.monotonic() + STORM_S * scale
        operators = [Operator(dsn, f.names[i::OPERATORS], deadline, i) for i in range(OPERATORS)]
        for op in operators:
            op.start()
        for op in operators:
            op.join(STORM_S * scale + 60)
            assert not op.is_alive()
        end = db_now(conn)
        wait_for(lambda: caught_up(conn, f.names, end), 60, what="every schedule caught up")
        statuses = f.stop_all()
        problems = f.problems()
        refused = [line for p in f.procs for line in p.log().splitlines() if MESSAGE in line]
    actions = sum(op.actions for op in operators)
    errors = [e for op in operators for e in op.errors]
    check = check_fires(conn, f.names, f.expr, end)
    summary.runs = actions
    summary.count(check)
    summary.seconds = time.monotonic() - started
    summary.notes = f"{actions} pause/resume actions in {STORM_S * scale:.0f}s; fires on paused rows: {len(refused)}"
    assert not refused, "\n".join(refused[:10])
    assert not errors, errors[:10]
    assert audit_count(conn) - audit_before == actions, "an action without its audit entry (or one too many)"
    assert check.ok, check.describe()
    assert set(statuses.values()) == {0}, f"unclean stop: {statuses}\n{f.logs()}"
    assert not problems, "\n".join(problems)


def _guard_works(conn: psycopg.Connection[Any], name: str) -> None:
    """The trigger refuses exactly what it should (so a silent storm means something)."""
    with conn.transaction():
        conn.execute("UPDATE awa.cron_jobs SET paused_at = now() WHERE name = %s", (name,))
        with pytest.raises(psycopg.errors.RaiseException, match=MESSAGE), conn.transaction():
            conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = last_enqueued_at + interval '1 s' "
                         "WHERE name = %s", (name,))
        raise psycopg.Rollback()  # leave the schedule as it was
