"""Silent partitions (S7, S8, S11): a leader that loses its lock session, or its whole
network, stops firing within its liveness bound; another takes over; nothing is doubled
in the overlap and catch_up schedules lose nothing."""

from __future__ import annotations

import random
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_for

from awa_tui.engine.runtime import leader as leader_mod

from .harness import (
    Fleet,
    Summary,
    TcpProxy,
    caught_up,
    check_fires,
    connect,
    current_leader,
    db_now,
    fires_by,
    fleet,
    install_job_origin,
    pause,
    settle,
    terminate_sessions,
    upstream_of,
)

SCHEDULES = 50
# A deposed leader notices at its next ping; a pass already under way may still finish.
LIVENESS_BOUND_S = leader_mod.PING_INTERVAL_S + 1.5
FAILOVER_BOUND_S = 2.0


def _finish(conn: Any, f: Fleet, summary: Summary) -> None:
    """Let every schedule catch up, stop the fleet cleanly, check every fire."""
    end = db_now(conn)
    wait_for(lambda: caught_up(conn, f.names, end), 60, what="every schedule caught up")
    statuses = f.stop_all()
    check = check_fires(conn, f.names, f.expr, end)
    summary.count(check)
    assert check.ok, check.describe()
    assert set(statuses.values()) == {0}, f"unclean stop: {statuses}\n{f.logs()}"
    problems = f.problems()
    assert not problems, "\n".join(problems)


@pytest.mark.slow  # real processes for tens of seconds: `-m "not slow"` leaves it out of a quick run
def test_partition_lock_session_terminated(dsn: str, log_dir: Path, scale: int, summary: Summary) -> None:
    """(a) pg_terminate_backend on the leader's lock session only; its other sessions live."""
    rounds = 5 * scale
    rng = random.Random()
    started = time.monotonic()
    conn = connect(dsn)
    install_job_origin(conn)
    failovers: list[float] = []
    stale: list[float] = []  # how long each deposed leader kept firing
    with fleet(dsn, log_dir, count=SCHEDULES) as f:
        f.spawn()
        f.spawn()
        settle(conn, f.names)
        for _ in range(rounds):
            old: Any = wait_for(lambda: current_leader(conn), 30, what="a leader")
            pause(rng.uniform(0.2, 1.5))
            cut = db_now(conn)
            assert terminate_sessions(conn, f"rel-{old.os_pid}", leader_only=True) == 1
            new: Any = wait_for(
                lambda o=old: (x := current_leader(conn)) is not None and x.backend_pid != o.backend_pid and x,
                30, interval=0.01, what="a new lock holder",
            )
            failovers.append((db_now(conn) - cut).total_seconds())
            # Give the deposed process time to notice, then see how long it went on firing.
            pause(LIVENESS_BOUND_S + 0.5)
            if new.os_pid != old.os_pid:
                late = fires_by(conn, f"rel-{old.os_pid}", cut)
                stale.append((late[-1]["at"] - cut).total_seconds() if late else 0.0)
        _finish(conn, f, summary)
    summary.runs = rounds
    summary.max_failover_s = max(failovers)
    summary.seconds = time.monotonic() - started
    summary.notes = f"deposed leader fired for at most {max(stale, default=0):.2f}s after its lock session died"
    summary.extra = {"failovers_s": failovers, "stale_fire_s": stale}
    assert max(stale, default=0) <= LIVENESS_BOUND_S, f"deposed leaders kept firing: {stale}"
    assert max(failovers) <= FAILOVER_BOUND_S, f"slow failover: {failovers}"


@pytest.mark.slow
def test_partition_blackhole(dsn: str, log_dir: Path, scale: int, summary: Summary) -> None:
    """(b) The leader's network goes silent (no error, no reset). It must give up leading on
    its own within the ping bound, Postgres then drops its sessions (modelled by
    terminating them), the other runtime takes over; after the partition heals the old
    leader rejoins as a follower and never fires stale."""
    rounds = 2 * scale  # alternately a long and a short partition
    started = time.monotonic()
    conn = connect(dsn)
    install_job_origin(conn)
    dbname = conn.info.dbname
    proxy = TcpProxy(upstream_of(dsn))
    bound = leader_mod.PING_INTERVAL_S + leader_mod.PING_TIMEOUT_S + 1.5
    gave_up: list[float] = []
    failovers: list[float] = []
    try:
        with fleet(dsn, log_dir, count=SCHEDULES) as f:
            cut_off = f.spawn(proxy.dsn(dbname))  # the runtime behind the proxy
            wait_for(lambda: (x := current_leader(conn)) is not None and x.os_pid == cut_off.pid, 60,
                     what="the proxied runtime leading")
            other = f.spawn()
            settle(conn, f.names)
            for n in range(rounds):
                if n:  # hand leadership back to the proxied runtime for the next round
                    other.stop()
                    wait_for(lambda: (x := current_leader(conn)) is not None and x.os_pid == cut_off.pid, 30,
                             what="the proxied runtime leading again")
                    other = f.spawn()
                    settle(conn, f.names)
                wall, cut = datetime.now(), db_now(conn)
                proxy.blackhole()
                if n % 2 == 0:
                    # A long partition: the leader must give up by itself, before Postgres
                    # notices the dead peer (keepalives) and drops its sessions.
                    logged = wait_for(lambda w=wall: cut_off.logged_at("lost leadership", w), bound + 5,
                                      what="the blackholed leader giving up")
                    failovers.append(_server_drops(conn, cut_off.app, other.pid))
                    pause(2.0)  # the partition lasts a while longer
                    proxy.heal()
                else:
                    # A short one: Postgres drops the sessions first, and the network comes
                    # back before the ping deadline; the old leader still believes it leads
                    # until its stuck ping fails, and may race the new one (S11 makes it safe).
                    failovers.append(_server_drops(conn, cut_off.app, other.pid))
                    pause(max(0.0, leader_mod.PING_TIMEOUT_S - 1.0 - (datetime.now() - wall).total_seconds()))
                    proxy.heal()
                    logged = wait_for(lambda w=wall: cut_off.logged_at("lost leadership", w), bound + 5,
                                      what="the old leader noticing")
                gave_up.append((logged - wall).total_seconds())
                # Back on the network it rejoins as a follower and never fires stale.
                wait_for(lambda: cut_off.app in _sessions(conn), 30, what="the old leader reconnected")
                pause(2.0)
                late = fires_by(conn, cut_off.app, cut + timedelta(seconds=bound))
                assert not late, f"the blackholed leader fired after the partition: {late[:5]}"
                assert current_leader(conn).os_pid == other.pid
            _finish(conn, f, summary)
    finally:
        proxy.close()
    summary.runs = rounds
    summary.max_failover_s = max(failovers)
    summary.seconds = time.monotonic() - started
    summary.notes = f"blackholed leader gave up after at most {max(gave_up):.2f}s (bound {bound:.1f}s)"
    summary.extra = {"gave_up_s": gave_up, "failovers_s": failovers}
    assert max(gave_up) <= bound, f"the blackholed leader held on: {gave_up}"
    assert max(failovers) <= FAILOVER_BOUND_S, f"slow failover: {failovers}"


def _server_drops(conn: Any, app: str, successor: int) -> float:
    """Postgres drops a process's sessions; returns how long until the successor leads."""
    noticed = db_now(conn)
    terminate_sessions(conn, app)
    wait_for(lambda: (x := current_leader(conn)) is not None and x.os_pid == successor, 30,
             interval=0.01, what="the other runtime leading")
    return (db_now(conn) - noticed).total_seconds()


def _sessions(conn: Any) -> list[str]:
    rows = conn.execute("SELECT application_name FROM pg_stat_activity WHERE datname = current_database()").fetchall()
    return [r["application_name"] for r in rows]


def test_blackholed_lock_connection_fails_its_ping_within_the_timeout(dsn: str) -> None:
    """Regression: a leader whose network went silent used to block in its ping forever,
    still believing it led (S8). Now a watchdog fails the ping after PING_TIMEOUT_S."""
    conn = connect(dsn)
    proxy = TcpProxy(upstream_of(dsn))
    elector = leader_mod.LeaderElector(proxy.dsn(conn.info.dbname), application_name="rel-elector leader")
    try:
        assert elector.step()
        proxy.blackhole()
        started = time.monotonic()
        stepped = threading.Thread(target=elector.step, daemon=True)
        stepped.start()
        wait_for(lambda: not elector.is_leader, leader_mod.PING_TIMEOUT_S + 2, what="the elector stepping down")
        stepped.join(leader_mod.PING_TIMEOUT_S)
        assert not stepped.is_alive(), "the ping is still blocked"
        assert time.monotonic() - started <= leader_mod.PING_TIMEOUT_S + 1.0
        # Back on the network it competes again (the old session still holds the lock
        # until Postgres drops it, so it is a follower for now).
        proxy.heal()
        terminate_sessions(conn, "rel-elector")
        wait_for(elector.step, 10, interval=0.2, what="the elector leading again")
    finally:
        elector.release()
        proxy.close()


def test_engine_connections_carry_tcp_liveness_settings(dsn: str) -> None:
    """Every engine connection asks the kernel to fail a silent peer within ~10 s (client
    side of a blackhole); a value given in the DSN wins."""
    from awa_tui.engine.core import db

    def options(conn: Any) -> dict[str, str]:
        return {o.keyword.decode(): (o.val or b"").decode() for o in conn.pgconn.info}

    with db.connect(dsn) as conn:
        assert {k: options(conn)[k] for k in db.TCP_LIVENESS} == db.TCP_LIVENESS
    with db.connect(f"{dsn} tcp_user_timeout=777") as conn:
        assert options(conn)["tcp_user_timeout"] == "777"
