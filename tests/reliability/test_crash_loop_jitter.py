"""Issue 16: the leader crash loop with jittered schedules. kill -9 the leader again and
again: no fire is lost, none is doubled, and every job's run_at is its fire instant plus
the documented offset (SHA-256 of name and instant, computed here with hashlib), whichever
leader fired it."""

from __future__ import annotations

import hashlib
import random
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_for

from . import harness
from .test_crash_loop import kill_moment

pytestmark = pytest.mark.slow

RUNTIMES = 3
SCHEDULES = 100
KILLS = 8
JITTER_MS = 900  # every second: the jitter must stay under the period


def documented_offset(name: str, fire_iso: str) -> timedelta:
    digest = hashlib.sha256(f"awa-jitter:{name}\x00{fire_iso}".encode()).digest()
    return timedelta(milliseconds=int.from_bytes(digest[:8], "big") % JITTER_MS)


def test_leader_crash_loop_with_jitter(dsn: str, log_dir: Path, scale: int, summary: harness.Summary) -> None:
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    kills = KILLS * scale
    summary.notes = (f"{RUNTIMES} runtimes, {SCHEDULES} catch_up schedules every second, "
                     f"jitter {JITTER_MS} ms, seed {seed}")
    started = time.monotonic()
    conn = harness.connect(dsn)
    harness.install_job_origin(conn)
    with harness.fleet(dsn, log_dir, count=SCHEDULES, jitter_ms=JITTER_MS) as f:
        for _ in range(RUNTIMES):
            f.spawn()
        harness.settle(conn, f.names)
        for _ in range(kills):
            leader: Any = wait_for(lambda: harness.current_leader(conn), 30, what="a leader")
            victim = f.by_pid(leader.os_pid)
            harness.pause(kill_moment(rng))
            victim.kill()
            f.spawn()
            wait_for(lambda v=victim: (x := harness.current_leader(conn)) is not None and x.os_pid != v.pid,
                     30, interval=0.01, what="a new leader")
        end = harness.db_now(conn)
        wait_for(lambda: harness.caught_up(conn, f.names, end), 60, what="every schedule caught up")
        # The last replacement may still be starting: stop it only once it runs (its snapshot
        # row exists, written after its signal handlers are in place).
        wait_for(lambda: {p.pid for p in f.live} <= harness.running_pids(conn), 30, what="every runtime running")
        statuses = f.stop_all()
        problems = f.problems()
        logs = f.logs()
    check = harness.check_fires(conn, f.names, f.expr, end)
    jobs = conn.execute(
        "SELECT metadata ->> 'cron_name' AS name, metadata ->> 'cron_fire_time' AS fire_iso, "
        "(metadata ->> 'cron_fire_time')::timestamptz AS fire, run_at FROM awa.jobs "
        "WHERE metadata ? 'cron_name' AND metadata ->> 'cron_name' = ANY(%s)", (f.names,)).fetchall()
    wrong = [j for j in jobs if j["run_at"] != j["fire"] + documented_offset(j["name"], j["fire_iso"])]
    summary.runs = kills
    summary.count(check)
    summary.seconds = time.monotonic() - started
    summary.extra = {"seed": seed, "jobs": len(jobs), "wrong_run_at": len(wrong)}
    assert check.ok, check.describe()
    assert jobs and wrong == [], f"{len(wrong)} of {len(jobs)} jobs off their planned run time: {wrong[:3]}"
    assert set(statuses.values()) == {0}, f"unclean stop: {statuses}\n{logs}"
    assert not problems, "\n".join(problems)
