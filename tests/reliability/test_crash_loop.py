"""Leader crash loop (S7, S11, S13): kill -9 the leader again and again; no fire is lost,
none is doubled, each schedule's fires stay in order, and a new leader takes over within
the failover bound every time."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_for

from . import harness

# Real processes for tens of seconds: `-m "not slow"` leaves them out of a quick local run.
pytestmark = pytest.mark.slow

RUNTIMES = 3
SCHEDULES = 200
KILLS = 20
FAILOVER_BOUND_S = 2.0  # S7: a dead leader is replaced within 2 s of Postgres noticing
# A fire waits for the new leader plus at most one evaluator tick and one pass.
FIRE_GAP_BOUND_S = FAILOVER_BOUND_S + 1.5


def kill_moment(rng: random.Random) -> float:
    """How long to let the leader run before the next kill: half of the kills land just
    after a whole second, when the evaluator is mid-pass, the rest anywhere."""
    if rng.random() < 0.5:
        return rng.uniform(0.3, 1.2)
    now = time.time()
    return (1.0 - now % 1.0) + rng.uniform(0.0, 0.15) + rng.choice((0.0, 1.0))


def test_leader_crash_loop(dsn: str, log_dir: Path, scale: int, summary: harness.Summary) -> None:
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    kills = KILLS * scale
    summary.notes = f"{RUNTIMES} runtimes, {SCHEDULES} catch_up schedules every second, seed {seed}"
    started = time.monotonic()
    conn = harness.connect(dsn)
    harness.install_job_origin(conn)
    failovers: list[float] = []
    fire_gaps: list[float] = []
    changes = 0  # kill rounds in which leadership passed to another process
    with harness.fleet(dsn, log_dir, count=SCHEDULES) as f:
        for _ in range(RUNTIMES):
            f.spawn()
        harness.settle(conn, f.names)
        for _ in range(kills):
            leader: Any = wait_for(lambda: harness.current_leader(conn), 30, what="a leader")
            victim = f.by_pid(leader.os_pid)
            harness.pause(kill_moment(rng))
            killed_at = harness.db_now(conn)
            assert harness.current_leader(conn) == leader, "leadership moved before the kill"
            victim.kill()
            f.spawn()  # the orchestrator restarts it
            successor: Any = wait_for(
                lambda v=victim: (x := harness.current_leader(conn)) is not None and x.os_pid != v.pid and x,
                30, interval=0.01, what="a new leader",
            )
            failovers.append((harness.db_now(conn) - killed_at).total_seconds())
            assert successor.os_pid in {p.pid for p in f.live}
            changes += successor.os_pid != victim.pid and not victim.alive()
            first: Any = wait_for(lambda k=killed_at, v=victim: harness.first_fire_after(conn, k, v.app), 30,
                                  what="the first fire of the new leader")
            fire_gaps.append((first - killed_at).total_seconds())
        end = harness.db_now(conn)
        wait_for(lambda: harness.caught_up(conn, f.names, end), 60, what="every schedule caught up")
        # The last replacement may still be starting: stop it only once it runs.
        wait_for(lambda: {p.pid for p in f.live} <= harness.running_pids(conn), 30, what="every runtime running")
        statuses = f.stop_all()
        problems = f.problems()
        logs = f.logs()
    check = harness.check_fires(conn, f.names, f.expr, end)
    summary.runs = kills
    summary.count(check)
    summary.max_failover_s = max(failovers)
    summary.seconds = time.monotonic() - started
    summary.extra = {"failovers_s": failovers, "fire_gaps_s": fire_gaps, "seed": seed, "leader_changes": changes}
    assert changes == kills, f"a leadership change in only {changes} of {kills} kill rounds"
    assert check.ok, check.describe()
    assert max(failovers) <= FAILOVER_BOUND_S, f"slow failover: {failovers}"
    assert max(fire_gaps) <= FIRE_GAP_BOUND_S, f"fires stalled after a kill: {fire_gaps}"
    assert set(statuses.values()) == {0}, f"unclean stop: {statuses}\n{logs}"
    assert not problems, "\n".join(problems)
