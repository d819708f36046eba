"""Issue 16: jitter delays each fire's job run_at by a stable offset in [0, jitter).

The fire is enqueued at its instant (created_at, cron_fire_time, lateness unchanged);
only run_at moves. The oracle is the documented formula written out with hashlib, and
pinned literals for fixed names and instants.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from engine_helpers import at, force
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from awa_tui import Client
from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.schedules.definition import Schedule


@pytest.fixture
def other_dsn(pg_admin_dsn: str, template_db: str) -> Any:
    """A second migrated database: the second leader's own deployment."""
    name = f"awa_t_jitter_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_admin_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(name), sql.Identifier(template_db)))
    yield make_conninfo(pg_admin_dsn, dbname=name)
    with psycopg.connect(pg_admin_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

JITTER = timedelta(minutes=2)


def _documented_offset(name: str, fire_iso: str, jitter_ms: int) -> timedelta:
    digest = hashlib.sha256(f"awa-jitter:{name}\x00{fire_iso}".encode()).digest()
    return timedelta(milliseconds=int.from_bytes(digest[:8], "big") % jitter_ms)


def _jobs(conn: psycopg.Connection[Any], name: str) -> list[tuple[str, Any]]:
    rows = conn.execute(
        "SELECT metadata ->> 'cron_fire_time' AS fire, run_at FROM awa.jobs "
        "WHERE metadata ->> 'cron_name' = %s ORDER BY id", (name,)).fetchall()
    return [(r["fire"], r["run_at"]) for r in rows]


def _deploy(dsn: str, operator: str) -> Client:
    client = Client(dsn, operator=operator)
    client.periodic("billing.invoices", "*/5 * * * *", "k", jitter=JITTER)
    client.periodic("plain", "*/5 * * * *", "k")
    client.sync()
    return client


def _pin_created(conn: psycopg.Connection[Any]) -> None:
    force(conn, "UPDATE awa.cron_jobs SET created_at = %s, next_fire_at = NULL", (at("2025-01-01T00:00:00"),))


# Pinned: the documented hash of ("billing.invoices", instant) modulo 120000 ms.
PINNED = [
    ("2025-01-01T00:00:00Z", timedelta(milliseconds=30341)),
    ("2025-01-01T00:05:00Z", timedelta(milliseconds=18213)),
    ("2025-01-01T00:10:00Z", timedelta(milliseconds=14053)),
]


def test_pinned_offsets_follow_the_documented_formula() -> None:
    for fire_iso, offset in PINNED:
        assert _documented_offset("billing.invoices", fire_iso, 120000) == offset


def test_two_leaders_and_a_restart_plan_the_same_run_times(
    dsn: str, conn: psycopg.Connection[Any], other_dsn: str
) -> None:
    with psycopg.connect(other_dsn, autocommit=True, row_factory=dict_row) as other:
        leaders = [(_deploy(dsn, "a@test"), conn), (_deploy(other_dsn, "b@test"), other)]
        for _, c in leaders:
            _pin_created(c)
        for leader, _ in leaders:
            assert leader.evaluate(now=at("2025-01-01T00:00:00") + timedelta(milliseconds=300)).fired == 2
            assert leader.evaluate(now=at("2025-01-01T00:05:01")).fired == 2
            leader.close()
        # A restart: new processes, same databases, the next instant.
        for c_dsn, who in ((dsn, "a2@test"), (other_dsn, "b2@test")):
            restarted = _deploy(c_dsn, who)
            assert restarted.evaluate(now=at("2025-01-01T00:10:00")).fired == 2
            restarted.close()
        expected = [(fire, at(fire) + offset) for fire, offset in PINNED]
        assert _jobs(conn, "billing.invoices") == expected
        assert _jobs(other, "billing.invoices") == expected
        # Unjittered: run_at is the insert's now(), never before the instant.
        for fire, run_at in _jobs(conn, "plain"):
            assert run_at >= at(fire)


def test_racing_evaluators_fire_once_with_the_planned_run_time(dsn: str, conn: psycopg.Connection[Any]) -> None:
    a, b = _deploy(dsn, "a@test"), _deploy(dsn, "b@test")
    _pin_created(conn)
    now = at("2025-01-01T00:05:00")
    assert a.evaluate(now=now).fired + b.evaluate(now=now).fired == 2
    assert _jobs(conn, "billing.invoices") == [("2025-01-01T00:05:00Z", now + timedelta(milliseconds=18213))]
    a.close()
    b.close()


def test_catch_up_fires_each_get_their_own_offset(client: Client, conn: psycopg.Connection[Any]) -> None:
    client.periodic("reports.daily", "*/5 * * * *", "k", jitter=timedelta(seconds=90),
                    missed_fire_policy="catch_up")
    client.sync()
    force(conn, "UPDATE awa.cron_jobs SET created_at = %s, last_enqueued_at = %s, next_fire_at = NULL",
          (at("2025-01-01T00:00:00"), at("2025-01-01T00:00:00")))
    assert client.evaluate(now=at("2025-01-01T00:15:30")).fired == 3
    fires = ["2025-01-01T00:05:00Z", "2025-01-01T00:10:00Z", "2025-01-01T00:15:00Z"]
    assert _jobs(conn, "reports.daily") == [
        (f, at(f) + _documented_offset("reports.daily", f, 90000)) for f in fires
    ]
    # The ledger shows the planned run time of each job.
    assert [j.run_at for j in client.reads.list_jobs(schedule="reports.daily")][::-1] == [
        at(f) + _documented_offset("reports.daily", f, 90000) for f in fires
    ]


def test_a_jittered_job_waits_for_its_run_at(client: Client, conn: psycopg.Connection[Any]) -> None:
    client.periodic("billing.invoices", "*/5 * * * *", "k", jitter=JITTER)
    client.sync()
    _pin_created(conn)
    client.evaluate(now=at("2025-01-01T00:05:00"))
    # Claimable only once DB time passes run_at: the worker's claim compares run_at <= now().
    due = conn.execute("SELECT run_at <= now() AS due FROM awa.jobs").fetchone()
    assert due == {"due": True}  # 2025 is in the past of this DB clock
    force(conn, "UPDATE awa.jobs SET run_at = now() + interval '1 hour'")
    from awa_tui.engine.jobs.store import claim_jobs
    assert claim_jobs(conn, ["k"], 10) == []


@pytest.mark.parametrize(("cron", "jitter", "message"), [
    ("*/5 * * * *", -timedelta(seconds=1), "jitter: must not be negative, got -0:00:01"),
    ("*/5 * * * *", timedelta(minutes=5),
     "jitter: 0:05:00 must be shorter than the shortest period 0:05:00 of '*/5 * * * *'"),
    ("0 9 * * 1-5", timedelta(days=1),
     "jitter: 1 day, 0:00:00 must be shorter than the shortest period 1 day, 0:00:00 of '0 9 * * 1-5'"),
    ("0,10 * * * *", timedelta(minutes=10),
     "jitter: 0:10:00 must be shorter than the shortest period 0:10:00 of '0,10 * * * *'"),
    ("H/15 * * * *", timedelta(minutes=15),
     "jitter: 0:15:00 must be shorter than the shortest period 0:15:00 of 'H/15 * * * *'"),
    ("*/5 * * * *", timedelta(microseconds=1500), "jitter: must be a whole number of milliseconds, got 0:00:00.001500"),
    ("*/5 * * * *", 30, "jitter: expected a timedelta, got 30"),
])
def test_bad_jitter_is_refused_in_one_line(client: Client, conn: Any, cron: str, jitter: Any, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        client.periodic("x", cron, "k", jitter=jitter)
    assert str(info.value) == message
    assert client.sync() == {"inserted": 0, "updated": 0}
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone() == {"n": 0}


def test_the_longest_jitter_shorter_than_the_period_is_accepted() -> None:
    schedule = Schedule.build("x", "0 9 * * 1-5", "k", jitter=timedelta(hours=23, minutes=59, seconds=59))
    assert schedule.jitter_ms == 86399000


def test_a_hand_written_negative_jitter_is_refused_by_the_database(client: Client, conn: Any) -> None:
    client.periodic("x", "*/5 * * * *", "k")
    client.sync()
    with pytest.raises(psycopg.errors.CheckViolation, match="cron_jobs_jitter_ms_range"):
        conn.execute("UPDATE awa.cron_jobs SET jitter_ms = -1")
