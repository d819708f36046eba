"""`awa-tui check` exit codes for each case (S43), through the real executable against a
real Postgres. Health is evaluated at database time just before each run, as the leader's
duty does; leadership is taken by this test's own session (awa.leader_acquire)."""

from __future__ import annotations

import json
import re
import uuid
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from cli_helpers import awa
from engine_helpers import force

import awa_tui
from awa_tui.engine.core.db import LEADER_LOCK_KEY


def db_now(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("SELECT clock_timestamp() AS t").fetchone()
    assert row is not None
    return row["t"]


@pytest.fixture
def leader(dsn: str) -> Any:
    """Take leadership (lock and a one-hour lease) on a session of its own."""
    from awa_tui.engine.core.db import connect

    held = connect(dsn, application_name="test leader")

    def take(start: datetime | None = None, lease: timedelta = timedelta(hours=1),
             instance: uuid.UUID | None = None) -> None:
        row = held.execute("SELECT got FROM awa.leader_acquire(%s, %s, %s, %s)",
                           (LEADER_LOCK_KEY, instance or uuid.uuid4(), lease, start)).fetchone()
        assert row is not None and row["got"]

    yield take
    held.close()


def late(client: Any, conn: psycopg.Connection[Any], name: str, **kwargs: Any) -> None:
    client.periodic(name, "* * * * *", "test.job", **kwargs)
    client.sync()
    force(conn, "UPDATE awa.cron_jobs SET next_fire_at = now() - interval '5 minutes' WHERE name = %s", (name,))


def fresh(client: Any, conn: psycopg.Connection[Any], name: str, **kwargs: Any) -> None:
    client.periodic(name, "* * * * *", "test.job", **kwargs)
    client.sync()
    force(conn, "UPDATE awa.cron_jobs SET next_fire_at = now() + interval '1 minute' WHERE name = %s", (name,))


def failed_job(conn: psycopg.Connection[Any], name: str, *, fire_offset_s: int = 0, state: str = "discarded") -> None:
    row = conn.execute(
        "INSERT INTO awa.jobs (kind, state, metadata) VALUES ('test.job', 'running', "
        "jsonb_build_object('cron_name', %s::text, 'cron_fire_time', (now() - make_interval(secs => %s))::text))"
        " RETURNING id", (name, fire_offset_s)).fetchone()
    assert row is not None
    conn.execute("UPDATE awa.jobs SET state = %s, finalized_at = now() WHERE id = %s", (state, row["id"]))


def run_check(dsn: str, *args: str) -> tuple[int, list[str]]:
    result = awa("check", "--dsn", dsn, *args)
    assert "Traceback" not in result.stderr
    return result.returncode, result.stdout.splitlines()


def test_all_ok_exits_0(client: Any, conn: psycopg.Connection[Any], dsn: str, leader: Any) -> None:
    leader()
    fresh(client, conn, "fine")
    client.runtime.evaluate_health()
    code, lines = run_check(dsn)
    assert (code, lines) == (0, ["OK: 0 unhealthy of 1 schedules; leader ok"])


def test_late_exits_1(client: Any, conn: psycopg.Connection[Any], dsn: str, leader: Any) -> None:
    leader()
    late(client, conn, "slow", max_lateness=60)
    fresh(client, conn, "fine")
    client.runtime.evaluate_health()
    code, lines = run_check(dsn)
    assert code == 1
    assert len(lines) == 2
    assert lines[0].startswith("WARNING late slow (queue default) since ")
    assert lines[0].endswith("was not enqueued within 60 s (max_lateness)")
    assert lines[1] == "WARNING: 1 unhealthy of 2 schedules (late 1); leader ok"


@pytest.mark.parametrize("case", ["failing", "missed", "broken", "autopaused"])
def test_critical_schedules_exit_2(client: Any, conn: psycopg.Connection[Any], dsn: str, leader: Any,
                                   case: str) -> None:
    leader()
    if case == "failing":
        fresh(client, conn, "x")
        failed_job(conn, "x")
    elif case == "missed":
        fresh(client, conn, "x", expect_success_within=30)
        failed_job(conn, "x", fire_offset_s=120, state="cancelled")
    elif case == "broken":
        fresh(client, conn, "x")
        conn.execute("UPDATE awa.cron_jobs SET cron_expr = '99 * * * *' WHERE name = 'x'")
    else:
        fresh(client, conn, "x", pause_after_failures=1)
        failed_job(conn, "x")
    client.runtime.evaluate_health()
    code, lines = run_check(dsn)
    health = "paused" if case == "autopaused" else case
    assert code == 2, lines
    assert lines[0].startswith(f"CRITICAL {health} x (queue default) since ")
    expected = {"failing": "failing 1", "missed": "missed 1", "broken": "broken 1", "autopaused": "autopaused 1"}
    assert lines[-1] == f"CRITICAL: 1 unhealthy of 1 schedules ({expected[case]}); leader ok"


def test_no_leader_exits_2(client: Any, conn: psycopg.Connection[Any], dsn: str) -> None:
    fresh(client, conn, "fine")
    client.runtime.evaluate_health()
    code, lines = run_check(dsn)
    assert (code, lines) == (2, [
        "CRITICAL fleet no_leader: no live leader: no runtime holds the leader lock",
        "CRITICAL: 0 unhealthy of 1 schedules; 1 fleet problem(s)",
    ])


def test_stalled_leader_exits_2(client: Any, conn: psycopg.Connection[Any], dsn: str, leader: Any) -> None:
    leader(start=db_now(conn) - timedelta(hours=2))  # its one-hour lease expired an hour ago
    fresh(client, conn, "fine")
    client.runtime.evaluate_health()
    code, lines = run_check(dsn)
    assert code == 2
    assert lines[0].startswith("CRITICAL fleet stalled: leader stalled: its lease expired at ")


def test_stale_health_evaluation_exits_2(client: Any, conn: psycopg.Connection[Any], dsn: str, leader: Any) -> None:
    leader()
    fresh(client, conn, "fine")
    client.runtime.evaluate_health(now=db_now(conn) - timedelta(seconds=45))
    code, lines = run_check(dsn)
    assert code == 2
    assert lines[0].startswith("CRITICAL fleet stale_health: leader stalled: health last evaluated 4")
    assert lines[0].endswith(" s ago")


def test_a_runtime_on_another_schema_version_warns_or_exits_2(client: Any, conn: psycopg.Connection[Any], dsn: str,
                                                     leader: Any) -> None:
    leader()
    client.runtime.publish()
    conn.execute("UPDATE awa.runtime_instances SET schema_version = 7, hostname = 'old-host', pid = 42")
    client.runtime.evaluate_health()
    at = conn.execute("SELECT max(version) AS v FROM awa.schema_migrations").fetchone()["v"]
    # A runtime of an older release (a rolling deploy): a warning naming both, not critical.
    code, lines = run_check(dsn)
    assert code == 1
    assert lines[0] == (f"WARNING fleet schema_overlap: rolling deploy: awa-tui {awa_tui.__version__} (schema 7) "
                        f"still running on schema {at}; older runtimes do not lead")
    # A runtime built for a newer schema than the database's: critical.
    conn.execute("UPDATE awa.runtime_instances SET schema_version = %s", (at + 1,))
    code, lines = run_check(dsn)
    assert code == 2
    assert lines[0] == f"CRITICAL fleet schema: runtime old-host:42 runs schema {at + 1}, the database is at {at}"


def test_unreachable_database_exits_3() -> None:
    result = awa("check", "--dsn", "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    assert result.returncode == 3
    assert result.stdout.startswith("UNKNOWN: ") and len(result.stdout.splitlines()) == 1
    assert result.stderr == "error: " + result.stdout.removeprefix("UNKNOWN: ")


def test_unknown_schedule_exits_3(client: Any, conn: psycopg.Connection[Any], dsn: str, leader: Any) -> None:
    leader()
    result = awa("check", "--dsn", dsn, "--schedule", "nope")
    assert (result.returncode, result.stdout, result.stderr) == (
        3, "UNKNOWN: unknown schedule 'nope'\n", "error: unknown schedule 'nope'\n")


def test_a_database_without_the_schema_exits_3(empty_dsn: str) -> None:
    result = awa("check", "--dsn", empty_dsn)
    assert (result.returncode, result.stderr) == (3, "error: the database has no awa schema; run `awa-tui migrate`\n")


def test_selection_by_owner_schedule_and_tag(client: Any, conn: psycopg.Connection[Any], dsn: str,
                                             leader: Any) -> None:
    leader()
    late(client, conn, "slow", tags=["nightly"])
    fresh(client, conn, "fine", tags=["hourly"])
    force(conn, "UPDATE awa.cron_jobs SET owner = 'billing' WHERE name = 'fine'")
    client.runtime.evaluate_health()
    assert run_check(dsn, "--owner", "billing") == (0, ["OK: 0 unhealthy of 1 schedules; leader ok"])
    assert run_check(dsn, "--schedule", "fine")[0] == 0
    assert run_check(dsn, "--schedule", "slow")[0] == 1
    assert run_check(dsn, "--tag", "hourly")[0] == 0
    assert run_check(dsn, "--tag", "nightly")[0] == 1


def test_json_report(client: Any, conn: psycopg.Connection[Any], dsn: str, leader: Any) -> None:
    leader()
    late(client, conn, "slow")
    client.runtime.evaluate_health()
    result = awa("check", "--dsn", dsn, "--json")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert (data["status"], data["exit_code"], data["checked"], data["fleet"]) == ("warning", 1, 1, [])
    assert data["counts"] == {"ok": 0, "late": 1, "failing": 0, "missed": 0, "paused": 0, "retired": 0,
                              "broken": 0, "finished": 0}
    assert [(s["name"], s["health"]) for s in data["unhealthy"]] == [("slow", "late")]


def _timed_out_pass(client: Any, conn: psycopg.Connection[Any], dsn: str, leader: Any) -> int:
    """The client leads; its pass gives up on a table another session holds (S59), and its
    snapshot carries that pass. Returns the holding session's pid."""
    from awa_tui.engine.core.db import connect
    from awa_tui.engine.firing.evaluator import PassTimedOut

    leader(instance=client.identity.instance_id)
    fresh(client, conn, "fine")
    client.runtime.evaluate_health()
    locker = connect(dsn, application_name="psql")
    try:
        with locker.transaction():
            locker.execute("LOCK TABLE awa.cron_jobs IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(PassTimedOut):
                client.evaluate()
        client.runtime.snapshot(is_leader=True)
        return locker.info.backend_pid
    finally:
        locker.close()


def test_a_timed_out_pass_is_critical_and_names_its_blocker(client: Any, conn: psycopg.Connection[Any], dsn: str,
                                                             leader: Any) -> None:
    holder = _timed_out_pass(client, conn, dsn, leader)
    code, lines = run_check(dsn)
    assert code == 2 and len(lines) == 2
    assert re.fullmatch(
        r"CRITICAL fleet pass_timed_out: the leader's last pass \(\S+\) gave up after 2\.\d s waiting; "
        rf"blocked by session {holder} \(user postgres, psql, idle in transaction\) holding table awa\.cron_jobs: "
        r"LOCK TABLE awa\.cron_jobs", lines[0]), lines[0]
    assert lines[1] == "CRITICAL: 0 unhealthy of 1 schedules; 1 fleet problem(s)"
    # The next pass that completes clears it.
    client.evaluate()
    client.runtime.snapshot(is_leader=True)
    assert run_check(dsn) == (0, ["OK: 0 unhealthy of 1 schedules; leader ok"])


def test_json_names_the_blocker_of_a_timed_out_pass(client: Any, conn: psycopg.Connection[Any], dsn: str,
                                                    leader: Any) -> None:
    holder = _timed_out_pass(client, conn, dsn, leader)
    result = awa("check", "--dsn", dsn, "--json")
    assert result.returncode == 2
    data = json.loads(result.stdout)
    assert (data["status"], [p["code"] for p in data["fleet"]]) == ("critical", ["pass_timed_out"])
    assert set(data["fleet"][0]) == {"code", "message", "blockers", "warning"}
    assert data["fleet"][0]["blockers"] == [{
        "pid": holder, "user": "postgres", "application": "psql", "state": "idle in transaction",
        "kind": "LOCK TABLE awa.cron_jobs", "waited_for": "table awa.cron_jobs"}]


SECRET = "Hunter2-S3cret"


def test_a_blockers_secret_literal_is_never_kept_logged_or_shown(client: Any, conn: psycopg.Connection[Any],
                                                                  dsn: str, leader: Any) -> None:
    """The blocking session's last statement carries a password: the report names the
    session and the statement's kind, never its text (Postgres hides it from other roles)."""
    from awa_tui.engine.core.db import connect
    from awa_tui.engine.firing.evaluator import PassTimedOut

    conn.execute("DROP ROLE IF EXISTS sec_blocker_ro1")
    conn.execute("CREATE ROLE sec_blocker_ro1")
    leader(instance=client.identity.instance_id)
    fresh(client, conn, "fine")
    client.runtime.evaluate_health()
    locker = connect(dsn, application_name="psql")
    try:
        with locker.transaction():
            locker.execute("LOCK TABLE awa.cron_jobs IN ACCESS EXCLUSIVE MODE")
            locker.execute(f"ALTER ROLE sec_blocker_ro1 PASSWORD '{SECRET}'")
            holder = locker.info.backend_pid
            # Control: the session's text, as the old report copied it (its first 200
            # characters), holds the secret; what follows proves it is left out.
            row = conn.execute("SELECT left(query, 200) AS q FROM pg_stat_activity WHERE pid = %s",
                               (holder,)).fetchone()
            assert row is not None and SECRET in row["q"]
            with pytest.raises(PassTimedOut) as raised:
                client.evaluate()
        client.runtime.snapshot(is_leader=True)
    finally:
        locker.close()
        conn.execute("DROP ROLE IF EXISTS sec_blocker_ro1")
    logged = str(raised.value)  # the run loop logs the pass's error as it is
    assert SECRET not in logged and "holding table awa.cron_jobs: ALTER ROLE" in logged
    stored = conn.execute("SELECT recent_passes::text AS p FROM awa.runtime_instances WHERE instance_id = %s",
                          (client.identity.instance_id,)).fetchone()
    assert stored is not None and SECRET not in stored["p"] and '"kind": "ALTER ROLE"' in stored["p"]
    code, lines = run_check(dsn)
    assert code == 2 and SECRET not in "\n".join(lines)
    assert lines[0].endswith(f"blocked by session {holder} (user postgres, psql, idle in transaction) "
                             "holding table awa.cron_jobs: ALTER ROLE"), lines[0]
    result = awa("check", "--dsn", dsn, "--json")
    assert SECRET not in result.stdout + result.stderr
    assert json.loads(result.stdout)["fleet"][0]["blockers"][0]["kind"] == "ALTER ROLE"


def test_a_stalled_fleet_names_the_schedules_nobody_fires(client: Any, conn: psycopg.Connection[Any],
                                                          dsn: str) -> None:
    """No leader, and the health words all say ok (nobody judges): check names the
    schedules whose due fire is overdue by the database clock, the most overdue first."""
    fresh(client, conn, "fine")
    fresh(client, conn, "also-fine")
    client.runtime.evaluate_health()
    conn.execute("UPDATE awa.cron_jobs SET next_fire_at = now() - interval '66 seconds' WHERE name = 'fine'")
    conn.execute("UPDATE awa.cron_jobs SET next_fire_at = now() - interval '2 minutes' WHERE name = 'also-fine'")
    code, lines = run_check(dsn)
    assert (code, lines) == (2, [
        "CRITICAL fleet no_leader: no live leader: no runtime holds the leader lock",
        "CRITICAL fleet overdue: 2 schedules overdue, nothing fires them: also-fine, fine",
        "CRITICAL: 0 unhealthy of 2 schedules; 2 fleet problem(s)",
    ])


def test_a_held_lock_makes_check_unknown_within_its_bound(client: Any, conn: psycopg.Connection[Any],
                                                          dsn: str, leader: Any) -> None:
    """awa.cron_jobs held ACCESS EXCLUSIVE by an open transaction (a migration, a hand-run
    LOCK TABLE): check answers within --timeout, UNKNOWN (exit 3), naming the session in
    the way; once the lock is gone it reads as usual."""
    import time

    from awa_tui.engine.core.db import connect

    leader()
    fresh(client, conn, "fine")
    client.runtime.evaluate_health()
    locker = connect(dsn, application_name="the locker")
    try:
        locker.autocommit = False
        locker.execute("LOCK TABLE awa.cron_jobs IN ACCESS EXCLUSIVE MODE")
        held = conn.execute("SELECT count(*) AS n FROM pg_locks WHERE relation = 'awa.cron_jobs'::regclass "
                            "AND mode = 'AccessExclusiveLock' AND granted AND pid = %s",
                            (locker.info.backend_pid,)).fetchone()
        assert held is not None and held["n"] == 1  # the fault is in place
        started = time.monotonic()
        code, lines = run_check(dsn, "--timeout", "2")
        took = time.monotonic() - started
        assert code == 3, lines
        assert lines == [
            f"UNKNOWN: could not read the schedules' health within 2 s (blocked by session {locker.info.backend_pid} "
            "(user postgres, the locker, idle in transaction) holding table awa.cron_jobs: LOCK TABLE "
            "awa.cron_jobs); --timeout sets the bound"]
        assert took < 2 + 6, took  # the bound, plus the process's own start (a few seconds on a busy host)
    finally:
        locker.close()
    code, lines = run_check(dsn, "--timeout", "2")  # control: the lock gone, the usual answer
    assert (code, lines[-1]) == (0, "OK: 0 unhealthy of 1 schedules; leader ok")
