"""A frozen leader (S7, S8, S11): SIGSTOP the leader again and again under per-second
catch_up schedules with three runtimes. Its session, and so the advisory lock, stay open;
the lease is what lets a standby depose it. Every round: a standby takes over within 2 s
of the lease's expiry, fires resume within lease + 2 s of the stop, and the old leader,
woken with SIGCONT after the takeover, steps down without inserting a single job. At the
end every due fire is in awa.jobs exactly once, in order, against an expectation computed
in SQL (generate_series over the seconds), not by the engine's cron code."""

from __future__ import annotations

import random
import signal
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_for

from .harness import (
    Summary,
    caught_up,
    connect,
    current_leader,
    db_now,
    fires_by,
    first_fire_after,
    fleet,
    install_job_origin,
    pause,
    settle,
)

pytestmark = pytest.mark.slow  # real processes for about a minute

RUNTIMES = 3
SCHEDULES = 50
ROUNDS = 5
LEASE_S = 3.0
TAKEOVER_BOUND_S = 2.0  # after the frozen leader's lease expired
RESUME_BOUND_S = LEASE_S + 2.0  # first fire by the new leader, after the stop

# Each schedule fires every second from its first fire on: the expected fires are every
# whole second from there to `until`, each exactly once, job ids rising with fire time.
FIRE_CHECK_SQL = """
WITH f AS (
    SELECT j.id, j.metadata ->> 'cron_name' AS name, (j.metadata ->> 'cron_fire_time')::timestamptz AS fire
    FROM awa.jobs j
    WHERE j.metadata ? 'cron_name' AND NOT j.metadata ? 'triggered_manually'
      AND j.metadata ->> 'cron_name' = ANY(%(names)s)
),
firsts AS (
    SELECT c.name, c.created_at, min(f.fire) AS first
    FROM awa.cron_jobs c LEFT JOIN f ON f.name = c.name
    WHERE c.name = ANY(%(names)s) GROUP BY c.name, c.created_at
),
expected AS (
    SELECT s.name, g.fire FROM firsts s,
    LATERAL generate_series(s.first, %(until)s::timestamptz, interval '1 second') AS g(fire)
)
SELECT
    (SELECT count(*) FROM f WHERE f.fire <= %(until)s) AS fires,
    (SELECT coalesce(array_agg(name ORDER BY name), '{}') FROM firsts
      WHERE first IS NULL OR first > created_at + interval '10 seconds') AS late_starts,
    (SELECT coalesce(array_agg(name || '@' || fire::text), '{}') FROM
        (SELECT name, fire FROM expected EXCEPT SELECT name, fire FROM f) lost) AS losses,
    (SELECT coalesce(array_agg(name || '@' || fire::text), '{}') FROM
        (SELECT name, fire FROM f GROUP BY name, fire HAVING count(*) > 1) d) AS duplicates,
    (SELECT coalesce(array_agg(DISTINCT name), '{}') FROM
        (SELECT name, id < lag(id) OVER (PARTITION BY name ORDER BY fire, id) AS back FROM f) o
      WHERE back) AS out_of_order,
    (SELECT coalesce(array_agg(name || '@' || fire::text), '{}') FROM f
      WHERE fire <> date_trunc('second', fire)) AS off_second
"""

LEASE_SQL = "SELECT term, instance_id, backend_pid, acquired_at, expires_at FROM awa.leader_lease"


def lease(conn: Any) -> dict[str, Any]:
    row = conn.execute(LEASE_SQL).fetchone()
    assert row is not None
    return row


def test_sigstop_leader(dsn: str, log_dir: Path, scale: int, summary: Summary) -> None:
    rounds = ROUNDS * scale
    rng = random.Random()
    started = time.monotonic()
    conn = connect(dsn)
    install_job_origin(conn)
    argv = ["-m", "awa_tui", "run", "--app", "reliability.app:setup", "--dsn", dsn, "--operator", "reliability",
            "--leader-lease", str(LEASE_S)]
    takeovers: list[float] = []  # new lease acquired - frozen lease expired
    resumes: list[float] = []  # first fire by another runtime - stop
    changes = 0
    with fleet(dsn, log_dir, count=SCHEDULES) as f:
        for _ in range(RUNTIMES):
            f.spawn(command=argv)
        settle(conn, f.names)
        for _ in range(rounds):
            holder: Any = wait_for(lambda: current_leader(conn), 30, what="a leader")
            victim = f.by_pid(holder.os_pid)
            frozen = lease(conn)
            pause(rng.uniform(0.2, 1.2))  # anywhere in the second: mid-pass or idle
            stopped_at = db_now(conn)
            victim.proc.send_signal(signal.SIGSTOP)
            try:
                # While frozen it renews nothing: its last expiry is final (a renewal
                # already sent when it stopped still lands, so read after the stop).
                frozen = lease(conn)
                assert frozen["backend_pid"] == holder.backend_pid
                # The new holder shows in pg_locks a moment before its lease row commits (one
                # statement takes both): wait for both.
                new: Any = wait_for(
                    lambda v=victim, fr=frozen: (x := current_leader(conn)) is not None and x.os_pid != v.pid
                    and lease(conn)["term"] > fr["term"] and x,
                    LEASE_S + 10, interval=0.01, what="a standby to depose the frozen leader",
                )
                taken = lease(conn)
                assert taken["term"] > frozen["term"] and taken["instance_id"] != frozen["instance_id"]
                assert taken["backend_pid"] == new.backend_pid
                changes += 1
                takeovers.append((taken["acquired_at"] - frozen["expires_at"]).total_seconds())
                first: Any = wait_for(lambda s=stopped_at, v=victim: first_fire_after(conn, s, v.app), 30,
                                      what="the first fire of the new leader")
                resumes.append((first - stopped_at).total_seconds())
                # Every schedule fired past the stop: whatever the frozen pass had planned is
                # stale now (the CAS refuses it).
                wait_for(lambda s=stopped_at: caught_up(conn, f.names, s), 30, what="every schedule past the stop")
            finally:
                woke_wall = datetime.now()
                victim.proc.send_signal(signal.SIGCONT)
            woke_at = db_now(conn)
            wait_for(lambda v=victim, w=woke_wall: v.logged_at("lost leadership", w), 15,
                     what="the woken leader stepping down")
            # Its reporter writes the step-down at once; give it a second more to misbehave.
            wait_for(lambda v=victim, w=woke_at: conn.execute(
                "SELECT is_leader FROM awa.runtime_instances WHERE pid = %s AND last_seen_at > %s",
                (v.pid, w)).fetchone() == {"is_leader": False}, 15, what="its snapshot saying follower")
            pause(1.0)
            late = fires_by(conn, victim.app, taken["acquired_at"])
            assert late == [], f"the deposed leader fired after its deposition: {late[:5]}"
            assert current_leader(conn).os_pid == new.os_pid
        end = db_now(conn).replace(microsecond=0) - timedelta(seconds=1)
        wait_for(lambda: caught_up(conn, f.names, end), 60, what="every schedule caught up")
        statuses = f.stop_all()
        problems = f.problems()
        logs = f.logs()
    row = conn.execute(FIRE_CHECK_SQL, {"names": f.names, "until": end}).fetchone()
    summary.runs = rounds
    summary.fires_checked = row["fires"]
    summary.duplicates = len(row["duplicates"])
    summary.losses = len(row["losses"]) + len(row["late_starts"])
    summary.max_failover_s = max(takeovers, default=None)
    summary.seconds = time.monotonic() - started
    summary.notes = (f"{RUNTIMES} runtimes, {SCHEDULES} catch_up schedules every second, lease {LEASE_S:g}s; "
                     f"takeover after expiry max {max(takeovers, default=0):.2f}s, "
                     f"fires resumed after the stop max {max(resumes, default=0):.2f}s")
    summary.extra = {"takeover_after_expiry_s": takeovers, "resume_after_stop_s": resumes}
    assert changes == rounds, f"leadership changed in {changes} of {rounds} rounds"
    # Not vacuous: every schedule fired through at least one lease length per round.
    assert row["fires"] >= SCHEDULES * rounds * LEASE_S, row["fires"]
    assert row["losses"] == [] and row["late_starts"] == [], (row["losses"][:10], row["late_starts"])
    assert row["duplicates"] == [] and row["out_of_order"] == [], (row["duplicates"][:10], row["out_of_order"])
    assert row["off_second"] == [], row["off_second"][:10]
    assert max(takeovers) <= TAKEOVER_BOUND_S, f"slow takeover after expiry: {takeovers}"
    assert max(resumes) <= RESUME_BOUND_S, f"fires stalled after a stop: {resumes}"
    assert set(statuses.values()) == {0}, f"unclean stop: {statuses}\n{logs}"
    assert not problems, "\n".join(problems)
