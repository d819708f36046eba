"""Locks held by another session under a running leader (S59): a psql-like session holds
one schedule's row (SELECT ... FOR UPDATE), or a whole table (LOCK TABLE ... ACCESS
EXCLUSIVE) for longer than the lease. The row delays that schedule only; the table
cannot hang the leader: each pass gives up on its lock timeout, says which session
blocked it (the runtime's log, its snapshot's passes), and after the release the missed
fires follow the missed-fire policy exactly, nothing doubled."""

from __future__ import annotations

import itertools
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_for

from awa_tui.engine.core.limits import DEFAULT_LEASE, DEFAULT_LOCK_TIMEOUT
from awa_tui.engine.read.passes import from_json
from awa_tui.engine.runtime.loops import MAX_BACKOFF_S

from .harness import (
    Summary,
    caught_up,
    check_fires,
    connect,
    current_leader,
    db_now,
    fleet,
    install_job_origin,
    pause,
    settle,
)

pytestmark = pytest.mark.slow

SCHEDULES = 10
HOLD_S = DEFAULT_LEASE.total_seconds() + 3  # longer than the lease
# After the release: the pass in its lock wait gives up (a lock timeout), the evaluator's
# back-off, then one pass.
RECOVERY_BOUND_S = DEFAULT_LOCK_TIMEOUT.total_seconds() + MAX_BACKOFF_S + 1.0

WAITING_SQL = """
SELECT a.pid, l.relation::regclass::text AS relation, a.application_name
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE NOT l.granted AND a.application_name LIKE 'rel-%%' AND l.relation = %(table)s::regclass
"""


def waiting_on(conn: psycopg.Connection[Any], table: str) -> list[dict[str, Any]]:
    """The runtime sessions that wait for a lock on `table` now (pg_locks)."""
    return conn.execute(WAITING_SQL, {"table": table}).fetchall()


def fires_of(conn: psycopg.Connection[Any], name: str) -> list[datetime]:
    rows = conn.execute("SELECT (metadata ->> 'cron_fire_time')::timestamptz AS fire FROM awa.jobs "
                        "WHERE metadata ->> 'cron_name' = %s ORDER BY 1", (name,)).fetchall()
    return [r["fire"] for r in rows]


def timed_out_passes(conn: psycopg.Connection[Any]) -> list[Any]:
    rows = conn.execute("SELECT recent_passes FROM awa.runtime_instances WHERE stopped_at IS NULL").fetchall()
    return [p for r in rows for p in from_json(r["recent_passes"]) if p.timed_out]


def test_a_held_row_delays_only_its_schedule(dsn: str, log_dir: Path, summary: Summary) -> None:
    conn = connect(dsn)
    install_job_origin(conn)
    with fleet(dsn, log_dir, count=SCHEDULES) as f:
        f.spawn()
        settle(conn, f.names)
        held, others = f.names[0], f.names[1:]
        locker = connect(dsn)
        with locker.transaction():
            locker.execute("SELECT name FROM awa.cron_jobs WHERE name = %s FOR UPDATE", (held,))
            began = db_now(conn)
            # The others keep firing every second while the row is held.
            wait_for(lambda: caught_up(conn, others, began + timedelta(seconds=HOLD_S)), HOLD_S + 10,
                     what="the other schedules firing during the hold")
            frozen = conn.execute("SELECT last_enqueued_at FROM awa.cron_jobs WHERE name = %s",
                                  (held,)).fetchone()["last_enqueued_at"]
            assert frozen <= began + timedelta(seconds=1), "the held schedule fired through its row lock"
            released = db_now(conn)
        recovered = wait_for(lambda: caught_up(conn, [held], released) and db_now(conn), 30,
                             what="the held schedule catching up")
        end = db_now(conn)
        wait_for(lambda: caught_up(conn, f.names, end), 30, what="every schedule caught up")
        statuses = f.stop_all()
        problems = f.problems()
    check = check_fires(conn, f.names, f.expr, end)
    missed = [t for t in fires_of(conn, held) if frozen < t <= released]
    summary.runs = 1
    summary.count(check)
    summary.max_failover_s = (recovered - released).total_seconds()
    summary.notes = f"row held {HOLD_S:.0f} s; its {len(missed)} missed fires replayed once (catch_up)"
    assert check.ok, check.describe()
    assert len(missed) >= HOLD_S - 1  # the hold really delayed it: a second of fires per second held
    assert set(statuses.values()) == {0}, f.logs()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("table", "policy"), [("awa.jobs", "catch_up"), ("awa.jobs", "coalesce"),
                                              ("awa.cron_jobs", "catch_up")])
def test_a_table_locked_longer_than_the_lease_cannot_hang_the_leader(
    dsn: str, log_dir: Path, summary: Summary, table: str, policy: str
) -> None:
    started = time.monotonic()
    conn = connect(dsn)
    install_job_origin(conn)
    with fleet(dsn, log_dir, count=SCHEDULES, policy=policy) as f:
        runtime = f.spawn()
        settle(conn, f.names)
        leader = current_leader(conn)
        assert leader is not None
        locker = connect(dsn)
        locker.execute("SET application_name = 'psql'")
        holder_pid = locker.info.backend_pid
        with locker.transaction():
            locker.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            began = db_now(conn)
            # The fault happened: a pass's statement waits for the lock (a statement without
            # a lock timeout would wait here for as long as the lock is held).
            waiting = wait_for(lambda: waiting_on(conn, table), 10, what=f"a pass waiting for {table}")
            assert waiting[0]["relation"] == table
            # ... and gives up, saying who blocked it (the log; the snapshot the console and
            # `check` read).
            line = wait_for(lambda: next((x for x in runtime.log().splitlines() if "the pass gave up" in x), None),
                            10, what="a timed-out pass in the log")
            assert "lock timeout" in line and f"blocked by session {holder_pid} (user " in line
            assert ", psql, idle in transaction)" in line
            # The statement by its kind only, never its text.
            assert f"holding table {table}: LOCK TABLE {table}" in line and "EXCLUSIVE MODE" not in line
            passes = wait_for(lambda: timed_out_passes(conn), 10, what="a timed-out pass in the snapshot")
            assert passes[0].blockers[0].pid == holder_pid and passes[0].blockers[0].application == "psql"
            # Held longer than the lease: the leader keeps its lease (its own connection renews
            # it) and keeps retrying; it is not hung in one statement.
            pause(max(0.0, HOLD_S - (db_now(conn) - began).total_seconds()))
            assert current_leader(conn) == leader
            waits_seen = len(set(line for line in runtime.log().splitlines() if "the pass gave up" in line))
            released = db_now(conn)
        recovered = wait_for(lambda: conn.execute(
            "SELECT min(at) AS at FROM rel.job_origin WHERE at > %s", (released,)).fetchone()["at"], 30,
            what="a fire after the release")
        end = db_now(conn) + timedelta(seconds=2)
        wait_for(lambda: caught_up(conn, f.names, end), 30, what="every schedule caught up")
        statuses = f.stop_all()
        problems = f.problems()
    recovery_s = (recovered - released).total_seconds()
    summary.runs = 1
    summary.max_failover_s = recovery_s
    summary.seconds = time.monotonic() - started
    summary.notes = (f"LOCK TABLE {table} held {HOLD_S:.0f} s (lease {DEFAULT_LEASE.total_seconds():g} s): "
                     f"{waits_seen} timed-out passes, each naming the holder; {policy} after the release")
    if policy == "catch_up":
        check = check_fires(conn, f.names, f.expr, end)
        summary.count(check)
        assert check.ok, check.describe()
    else:
        # Coalesce (oracle by hand). A pass that completes after the release read its time
        # at most a lock timeout before it (it waited that long at most), so no fire can be
        # for an instant from the hold's start to the release less a lock timeout and a
        # second: those are what only a replay (catch_up) would fire. Nothing doubled, and
        # the only gaps are across the hold.
        lock_s = DEFAULT_LOCK_TIMEOUT.total_seconds()
        for name in f.names:
            fires = fires_of(conn, name)
            assert len(fires) == len(set(fires)), f"{name} doubled"
            replayed = [t for t in fires if began < t <= released - timedelta(seconds=lock_s + 1)]
            assert replayed == [], (name, replayed)
            gaps = [(x, y) for x, y in itertools.pairwise(fires) if y - x != timedelta(seconds=1)]
            assert gaps, f"{name}: nothing coalesced"
            # A gap opens at the last fire committed before the lock: the instant a second
            # before it may still be in a pass when the lock is taken (later under load, as
            # its pass starts after its instant), then waits and is coalesced. So the gap's
            # start is at most two seconds before the lock.
            assert all(began - timedelta(seconds=2) <= x and y <= recovered + timedelta(seconds=3)
                       for x, y in gaps), (name, began, released, recovered, gaps)
        summary.fires_checked = sum(len(fires_of(conn, n)) for n in f.names)
        summary.duplicates = 0
    assert waits_seen >= 2, "the leader hung in one statement instead of retrying"
    assert recovery_s <= RECOVERY_BOUND_S, recovery_s
    assert set(statuses.values()) == {0}, f.logs()
    assert not problems, "\n".join(problems)
