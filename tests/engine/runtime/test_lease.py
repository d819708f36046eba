"""The leadership lease (S7, S8): renewed in DB time by the liveness loop, never lost to a
long evaluator pass; a standby deposes a holder whose lease expired; a leader whose lease
expired steps down without firing even while its lock connection still looks alive.

Exact instants are injected as `now` (the lease is compared with it, in SQL); the lock,
the sessions and the terminations are real."""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from engine_helpers import at, job_count
from helpers import wait_for
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from awa_tui import Client
from awa_tui.engine.core.db import LEADER_LOCK_KEY
from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.firing.evaluator import PassResult
from awa_tui.engine.runtime.leader import LeaderElector
from awa_tui.engine.runtime.loops import Runtime

T0 = at("2031-05-04T10:00:00")
LEASE = timedelta(seconds=5)


def lease_row(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    row = conn.execute(
        "SELECT term, instance_id, backend_pid, lease, acquired_at, renewed_at, expires_at FROM awa.leader_lease"
    ).fetchone()
    assert row is not None
    return row


def lock_pid(conn: psycopg.Connection[Any]) -> int | None:
    row = conn.execute(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1"
        " AND classid::bigint = %s AND objid::bigint = %s"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        (LEADER_LOCK_KEY >> 32, LEADER_LOCK_KEY & 0xFFFFFFFF),
    ).fetchone()
    return row["pid"] if row else None


def backend_alive(conn: psycopg.Connection[Any], pid: int) -> bool:
    row = conn.execute("SELECT count(*) AS n FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
    return bool(row and row["n"])


@pytest.fixture
def electors(dsn: str) -> Iterator[Any]:
    made: list[LeaderElector] = []

    def make(label: str, lease: timedelta = LEASE) -> LeaderElector:
        elector = LeaderElector(dsn, application_name=f"awa-tui {label} leader", lease=lease)
        made.append(elector)
        return elector

    yield make
    for elector in made:
        elector.release()


def test_lease_is_taken_and_renewed_at_exact_instants(conn: psycopg.Connection[Any], electors: Any) -> None:
    a = electors("a")
    assert a.step(now=T0) is True
    pid = lock_pid(conn)
    assert pid is not None
    assert lease_row(conn) == {
        "term": 1, "instance_id": a.instance_id, "backend_pid": pid, "lease": LEASE,
        "acquired_at": T0, "renewed_at": T0, "expires_at": T0 + LEASE,
    }
    assert a.step(now=T0 + timedelta(seconds=1)) is True
    assert a.step(now=T0 + timedelta(seconds=4.5)) is True
    assert lease_row(conn) == {
        "term": 1, "instance_id": a.instance_id, "backend_pid": pid, "lease": LEASE,
        "acquired_at": T0, "renewed_at": T0 + timedelta(seconds=4.5), "expires_at": T0 + timedelta(seconds=9.5),
    }
    assert a.expires_at == T0 + timedelta(seconds=9.5)


def test_a_lease_that_lapsed_is_not_renewed_the_leader_steps_down(
    conn: psycopg.Connection[Any], electors: Any
) -> None:
    a = electors("a")
    assert a.step(now=T0) is True
    # Frozen past the expiry (nobody deposed it): renewal is refused, the session dropped.
    assert a.step(now=T0 + LEASE) is False
    assert a.is_leader is False
    assert lock_pid(conn) is None
    assert lease_row(conn)["expires_at"] == T0 + LEASE


def test_lease_renewed_in_db_time_while_healthy(dsn: str, conn: psycopg.Connection[Any]) -> None:
    """The real liveness loop: the lease keeps moving forward, lease-long from each renewal."""
    client = Client(dsn, operator="tester@test", leader_lease=timedelta(seconds=2))
    client.start(run_worker=False)
    try:
        wait_for(lambda: client.is_leader, timeout=5, what="election")
        first = lease_row(conn)
        seen = [first["renewed_at"]]

        def renewed_three_times() -> bool:
            row = lease_row(conn)
            if row["renewed_at"] != seen[-1]:
                seen.append(row["renewed_at"])
                assert row["expires_at"] - row["renewed_at"] == timedelta(seconds=2)
                assert (row["term"], row["instance_id"]) == (1, client.identity.instance_id)
            return len(seen) >= 4

        wait_for(renewed_three_times, timeout=10, interval=0.05, what="three renewals")
        now = conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
        assert lease_row(conn)["expires_at"] > now
        # Renewed every lease/3: it never came near to lapsing between two renewals.
        gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(seen)]
        assert max(gaps) < 2.0, gaps
    finally:
        client.close()


def test_a_long_evaluator_pass_does_not_lose_the_lease(dsn: str, conn: psycopg.Connection[Any]) -> None:
    lease = timedelta(seconds=1)
    leader = Client(dsn, operator="leader@test", application_name="awa-tui slow", leader_lease=lease)
    leader.periodic("tick", "* * * * * *", "test.tick")
    standby = Client(dsn, operator="standby@test", application_name="awa-tui standby", leader_lease=lease)
    standby.periodic("tick", "* * * * * *", "test.tick")
    standby_passes: list[PassResult] = []
    standby.runtime.on_pass.append(standby_passes.append)
    release = threading.Event()
    in_pass = threading.Event()

    def slow_pass(result: PassResult) -> None:
        in_pass.set()
        release.wait(30)  # the evaluator is stuck here until the test has seen enough

    leader.runtime.on_pass.append(slow_pass)
    try:
        leader.start(run_worker=False)
        wait_for(lambda: leader.is_leader, timeout=5, what="the slow runtime to lead")
        standby.start(run_worker=False)
        wait_for(in_pass.is_set, timeout=5, what="a pass to start")
        stuck_since = conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
        # Three whole leases pass while the evaluator is stuck.
        wait_for(lambda: conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"] > stuck_since + 3 * lease,
                 timeout=10, what="three leases of DB time")
        row = lease_row(conn)
        now = conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
        assert (row["term"], row["instance_id"]) == (1, leader.identity.instance_id)
        assert row["renewed_at"] > stuck_since + 2 * lease and row["expires_at"] > now
        assert leader.is_leader is True and standby.is_leader is False
        assert standby_passes == []
    finally:
        release.set()
        leader.close()
        standby.close()


def test_standby_deposes_a_holder_whose_lease_expired(
    conn: psycopg.Connection[Any], electors: Any, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = electors("a"), electors("b")
    assert a.step(now=T0) is True
    a_pid = lock_pid(conn)
    assert a_pid is not None
    # Just before the expiry the holder is healthy: nothing happens to it.
    assert b.step(now=T0 + LEASE - timedelta(milliseconds=1)) is False
    assert lock_pid(conn) == a_pid and backend_alive(conn, a_pid)
    # At the expiry (a frozen holder renews nothing): terminated, and b takes over at once.
    with caplog.at_level(logging.WARNING, logger="awa_tui.leader"):
        assert b.step(now=T0 + LEASE) is True
    b_pid = lock_pid(conn)
    assert b_pid not in (None, a_pid)
    assert not backend_alive(conn, a_pid)
    assert lease_row(conn) == {
        "term": 2, "instance_id": b.instance_id, "backend_pid": b_pid, "lease": LEASE,
        "acquired_at": T0 + LEASE, "renewed_at": T0 + LEASE, "expires_at": T0 + 2 * LEASE,
    }
    deposed = [r.getMessage() for r in caplog.records if "deposed" in r.getMessage()]
    assert deposed == [
        f"deposed the stalled leader (backend pid {a_pid}, lease expired {(T0 + LEASE).isoformat()}):"
        " terminated its lock session"
    ]
    # The old holder wakes: its renewal fails on the dead session, it leads no more.
    assert a.step(now=T0 + LEASE + timedelta(seconds=1)) is False
    assert a.is_leader is False and lock_pid(conn) == b_pid


def test_a_leader_whose_lock_was_released_under_its_live_session_steps_down_at_its_next_renewal(
    conn: psycopg.Connection[Any], electors: Any
) -> None:
    """S57: the lease names the session, but leadership is the lock's. A lock released
    while its session lives on (pg_advisory_unlock_all on that very session, as a
    pooler's DISCARD ALL would do) must not be renewed as if it were still held."""
    a, b = electors("a"), electors("b")
    assert a.step(now=T0) is True
    a_pid = lock_pid(conn)
    assert a_pid is not None
    # Negative control: while the lock is held, the renewal succeeds.
    assert a.step(now=T0 + timedelta(seconds=1)) is True
    # The fault, on the leader's own lock session (the elector keeps no other handle on it).
    session = a._conn
    assert session is not None and session.info.backend_pid == a_pid
    session.execute("SELECT pg_advisory_unlock_all()")
    # It happened: nobody holds the lock, the session lives, the lease still names it.
    assert lock_pid(conn) is None
    assert backend_alive(conn, a_pid)
    assert (lease_row(conn)["backend_pid"], lease_row(conn)["expires_at"]) == (a_pid, T0 + timedelta(seconds=6))
    assert a.is_leader is True  # nothing has told it yet
    # Its next renewal, well inside the lease: refused, it leads no more.
    assert a.step(now=T0 + timedelta(seconds=2)) is False
    assert a.is_leader is False
    assert lease_row(conn)["expires_at"] == T0 + timedelta(seconds=6)  # not extended
    # A standby takes the free lock at once, with the next term.
    assert b.step(now=T0 + timedelta(seconds=2)) is True
    b_pid = lock_pid(conn)
    assert b_pid not in (None, a_pid)
    assert lease_row(conn) == {
        "term": 2, "instance_id": b.instance_id, "backend_pid": b_pid, "lease": LEASE,
        "acquired_at": T0 + timedelta(seconds=2), "renewed_at": T0 + timedelta(seconds=2),
        "expires_at": T0 + timedelta(seconds=2) + LEASE,
    }


def _pass_runtime(dsn: str) -> tuple[Client, Runtime, list[PassResult]]:
    client = Client(dsn, operator="tester@test", application_name="awa-tui frozen", leader_lease=LEASE)
    client.periodic("tick", "* * * * * *", "test.tick")
    client.sync()
    passes: list[PassResult] = []
    client.runtime.on_pass.append(passes.append)
    return client, Runtime(client.runtime, run_worker=False), passes  # the RuntimeHost: the client's runtime


def test_a_leader_whose_lease_expired_runs_no_pass_though_its_lock_connection_lives(
    dsn: str, conn: psycopg.Connection[Any]
) -> None:
    """The evaluator checks the lease (in DB time, here at an injected instant) before
    every pass: a leader waking from a freeze never fires on a stale belief."""
    client, runtime, passes = _pass_runtime(dsn)
    try:
        assert runtime.elector.step(now=T0) is True
        holder = lock_pid(conn)
        assert runtime.evaluate_once(now=T0 + LEASE - timedelta(milliseconds=1)) is True
        assert len(passes) == 1 and passes[0].fired == 1
        jobs = job_count(conn)

        assert runtime.evaluate_once(now=T0 + LEASE) is False
        assert len(passes) == 1 and job_count(conn) == jobs
        assert runtime.is_leader is False
        [lost, *_] = client.runtime.recent_events.pinned(T0 + LEASE)
        assert (lost.kind, lost.detail) == ("lost the lead",
                                            "term 1: stepped down: its lease expired or was taken over")
        # It stepped down on the lease alone: the lock connection was alive all along.
        assert lock_pid(conn) == holder and backend_alive(conn, holder)
        assert runtime.evaluate_once(now=T0 + LEASE) is False  # and stays down
        assert len(passes) == 1
        # The elector then drops the lock session, freeing the lock for a standby.
        assert runtime.elector.step(now=T0 + LEASE) is False
        assert lock_pid(conn) is None
    finally:
        runtime.elector.release()
        client.close()


def test_a_deposed_leader_wakes_and_steps_down_without_firing(dsn: str, conn: psycopg.Connection[Any]) -> None:
    """The whole story at exact instants: the holder freezes, a standby deposes it and takes
    over; the old leader wakes still believing it leads, checks its lease before its next
    pass, and steps down without firing."""
    client, runtime, passes = _pass_runtime(dsn)
    standby = LeaderElector(dsn, application_name="awa-tui standby leader", lease=LEASE)
    try:
        assert runtime.elector.step(now=T0) is True
        assert runtime.evaluate_once(now=T0 + timedelta(seconds=1)) is True
        jobs = job_count(conn)
        # Frozen from T0 + 1 s: no renewal. The standby deposes it at the expiry.
        assert standby.step(now=T0 + LEASE) is True
        assert runtime.is_leader is True  # it does not know yet: it was frozen
        assert runtime.evaluate_once(now=T0 + LEASE + timedelta(seconds=1)) is False
        assert runtime.is_leader is False
        assert len(passes) == 1 and job_count(conn) == jobs
        assert runtime.elector.step(now=T0 + LEASE + timedelta(seconds=1)) is False
        assert lease_row(conn)["instance_id"] == standby.instance_id
    finally:
        standby.release()
        runtime.elector.release()
        client.close()


@pytest.fixture
def plain_role(conn: psycopg.Connection[Any]) -> Iterator[str]:
    """A non-superuser role that may use the lease but not signal a superuser's session."""
    role = f"awa_standby_{uuid.uuid4().hex[:10]}"
    conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'standby'").format(sql.Identifier(role)))
    for grant in ("GRANT USAGE ON SCHEMA awa TO {role}", "GRANT SELECT, UPDATE ON awa.leader_lease TO {role}",
                  "GRANT EXECUTE ON FUNCTION awa.may_lead(uuid) TO {role}"):  # the runtime role's, not PUBLIC's
        conn.execute(sql.SQL(grant).format(role=sql.Identifier(role)))
    params = conninfo_to_dict(conn.info.dsn)
    params.update(user=role, password="standby")
    yield make_conninfo(**params)
    conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,))
    conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
    conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_a_standby_without_the_right_to_depose_says_so_in_one_line_and_leaves_the_holder(
    conn: psycopg.Connection[Any], electors: Any, plain_role: str, caplog: pytest.LogCaptureFixture
) -> None:
    holder = electors("superuser")  # the test server's superuser: only a superuser may signal it
    assert holder.step(now=T0) is True
    holder_pid = lock_pid(conn)
    standby = LeaderElector(plain_role, application_name="awa-tui plain leader", lease=LEASE)
    try:
        with caplog.at_level(logging.WARNING, logger="awa_tui.leader"):
            assert standby.step(now=T0 + LEASE) is False
            assert standby.step(now=T0 + LEASE + timedelta(seconds=1)) is False  # not repeated
        assert lock_pid(conn) == holder_pid and backend_alive(conn, holder_pid)
        lines = [r.getMessage() for r in caplog.records if "depose" in r.getMessage()]
        assert len(lines) == 1 and "\n" not in lines[0]
        assert lines[0].startswith(
            f"cannot depose the stalled leader (backend pid {holder_pid}, instance {str(holder.instance_id)[:8]},"
            f" lease expired {(T0 + LEASE).isoformat()}): "
        )
        # Postgres's own refusal between the two, worded by version: PG 18 "permission denied to
        # terminate process", PG 15 "must be a superuser to terminate superuser process".
        assert "terminate" in lines[0]
        assert lines[0].endswith("run every runtime as the same database role, or GRANT pg_signal_backend to this one")
    finally:
        standby.release()


def test_leader_lease_setting_is_validated_in_one_line(dsn: str) -> None:
    with pytest.raises(ValidationError) as bad:
        Client(dsn, leader_lease=timedelta(milliseconds=500))
    assert str(bad.value) == "leader_lease: must be a timedelta of at least 1 s, got 0.5 s"
    with pytest.raises(ValidationError) as wrong:
        Client(dsn, leader_lease=5)  # type: ignore[arg-type]
    assert str(wrong.value) == "leader_lease: must be a timedelta of at least 1 s, got 5"
    assert Client(dsn, leader_lease=timedelta(seconds=7)).leader_lease == timedelta(seconds=7)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("AWA_DATABASE_URL", "DATABASE_URL")}
    return subprocess.run([sys.executable, "-m", "awa_tui", *args], capture_output=True, text=True, env=env,
                          timeout=60, stdin=subprocess.DEVNULL)


def test_cli_run_refuses_a_bad_leader_lease_in_one_line(dsn: str) -> None:
    for value, shown in (("0.5", "0.5"), ("nan", "nan"), ("inf", "inf")):
        result = _cli("run", "--demo", "--dsn", dsn, "--leader-lease", value)
        assert (result.returncode, result.stderr) == (
            1, f"error: --leader-lease: must be between 1 and 86400 seconds, got {shown}\n")


def test_cli_runtime_list_names_the_lock_holder(dsn: str, conn: psycopg.Connection[Any], electors: Any) -> None:
    client = Client(dsn, operator="tester@test")
    client.runtime.snapshot(is_leader=True)
    stale = Client(dsn, operator="tester@test")
    stale.runtime.snapshot(is_leader=True)  # a leader killed with -9 leaves this row behind
    holder = LeaderElector(dsn, instance_id=client.identity.instance_id, lease=timedelta(seconds=60))
    try:
        assert holder.step() is True
        rows = {r["instance_id"]: r for r in json.loads(_cli("runtime", "list", "--dsn", dsn, "--json").stdout)}
        assert {k: (r["role"], r["is_leader"]) for k, r in rows.items()} == {
            str(client.identity.instance_id): ("leader", True), str(stale.identity.instance_id): ("follower", True),
        }
        text = _cli("runtime", "list", "--dsn", dsn).stdout.splitlines()
        shown = re.fullmatch(
            rf"leader: {re.escape(socket.gethostname())} pid {os.getpid()} "
            rf"\(instance {str(client.identity.instance_id)[:8]}\) \(lease (\d+\.\d)s left\)", text[-1])
        assert shown is not None, text[-1]
        assert 0 < float(shown.group(1)) <= 60.0  # the CLI's own start-up ate some of it
        # Expired (as if frozen for a minute): the same line says STALLED.
        conn.execute("UPDATE awa.leader_lease SET expires_at = now() - interval '1 second'")
        assert _cli("runtime", "list", "--dsn", dsn).stdout.splitlines()[-1] == (
            f"leader: STALLED {socket.gethostname()} pid {os.getpid()}"
            f" (instance {str(client.identity.instance_id)[:8]}) (lease expired; a standby deposes it)")
    finally:
        holder.release()
        client.close()
        stale.close()
