"""S11 under concurrency: racing evaluators and operators on real connections."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import psycopg
from engine_helpers import at, fire_times, force, job_count, race, schedule_row

from awa_tui import Client

BASE = "2025-01-01T00:00:00"


def test_racing_evaluators_write_exactly_one_job_per_fire(dsn: str, conn: psycopg.Connection[Any]) -> None:
    clients = [Client(dsn, operator=f"racer{i}@test") for i in range(3)]
    for client in clients:  # every runtime registers the same schedules
        for n in range(10):
            client.periodic(f"catch-{n}", "* * * * * *", "k", missed_fire_policy="catch_up")
            client.periodic(f"coal-{n}", "*/2 * * * * *", "k")
        client.sync()
    force(conn, "UPDATE awa.cron_jobs SET last_enqueued_at = %s, created_at = %s, next_fire_at = NULL",
          (at(BASE), at(BASE)))
    nows = [at(BASE) + timedelta(seconds=s, milliseconds=100) for s in range(1, 41)]
    results = race(clients, nows)
    per_fire = Counter(
        (r["name"], r["fire"])
        for r in conn.execute(
            "SELECT metadata ->> 'cron_name' AS name, metadata ->> 'cron_fire_time' AS fire FROM awa.jobs"
        )
    )
    assert set(per_fire.values()) == {1}
    for n in range(10):
        assert fire_times(conn, f"catch-{n}") == [
            (at(BASE) + timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ") for s in range(1, 41)
        ]
        assert fire_times(conn, f"coal-{n}") == [
            (at(BASE) + timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ") for s in range(2, 41, 2)
        ]
    assert sum(r.fired for r in results) == job_count(conn) == 10 * 40 + 10 * 20
    for client in clients:
        client.close()


def test_racing_catch_up_batches_never_double(dsn: str, conn: psycopg.Connection[Any]) -> None:
    clients = [Client(dsn, catch_up_limit=100) for _ in range(2)]
    for client in clients:
        client.periodic("replay", "* * * * * *", "k", missed_fire_policy="catch_up")
        client.sync()
    force(conn, "UPDATE awa.cron_jobs SET last_enqueued_at = %s, next_fire_at = NULL", (at(BASE),))
    now = at(BASE) + timedelta(seconds=1000)
    race(clients, [now] * 12)
    assert fire_times(conn, "replay") == [
        (at(BASE) + timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ") for s in range(1, 1001)
    ]
    for client in clients:
        client.close()


def test_pause_holding_the_row_lock_wins_over_a_pass(
    client: Client, dsn: str, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("contested", "* * * * *", last=BASE)
    register("bystander", "* * * * *", last=BASE)
    with psycopg.connect(dsn) as operator:
        with operator.transaction():
            operator.execute("SELECT * FROM awa.cron_jobs WHERE name = 'contested' FOR UPDATE")
            operator.execute(
                "UPDATE awa.cron_jobs SET paused_at = now(), paused_by = 'ops' WHERE name = 'contested'"
            )
            # The pass runs while the pause is uncommitted: it must neither fire nor wait.
            result = client.evaluate(now=at("2025-01-01T00:01:00"))
            assert [j.name for j in result.jobs] == ["bystander"]
            assert result.lost_races == 1
        result = client.evaluate(now=at("2025-01-01T00:02:00"))
        assert [j.name for j in result.jobs] == ["bystander"]
    assert fire_times(conn, "contested") == []
    row = schedule_row(conn, "contested")
    assert (row["last_enqueued_at"], row["paused_by"]) == (at(BASE), "ops")


def test_rolled_back_pause_lets_the_next_pass_fire(
    client: Client, dsn: str, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("contested", "* * * * *", last=BASE)
    with psycopg.connect(dsn) as operator:
        operator.execute("SELECT * FROM awa.cron_jobs WHERE name = 'contested' FOR UPDATE")
        assert client.evaluate(now=at("2025-01-01T00:01:00")).jobs == []
        operator.rollback()
    result = client.evaluate(now=at("2025-01-01T00:01:00"))
    assert [(j.name, j.fire_time) for j in result.jobs] == [("contested", "2025-01-01T00:01:00Z")]


def test_pause_committed_between_read_and_fire_wins(
    client: Client, dsn: str, conn: psycopg.Connection[Any], register: Any
) -> None:
    """The CAS statement re-checks `paused_at IS NULL` on the row it updates (S11)."""
    register("contested", "* * * * *", last=BASE)
    from awa_tui.engine.firing import evaluator

    rows = evaluator.due_schedules(conn, at("2025-01-01T00:01:00"))
    plan, _ = evaluator.plan_fires(rows[0], at("2025-01-01T00:01:00"), 1000)
    assert plan is not None
    client.actions.pause("contested", operator="ops")  # lands after the read, before the fire
    assert evaluator.fire_batch(conn, [plan]) == []
    assert job_count(conn) == 0
    assert schedule_row(conn, "contested")["last_enqueued_at"] == at(BASE)


def test_definition_change_between_read_and_fire_wins(
    client: Client, dsn: str, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("contested", "* * * * *", last=BASE)
    from awa_tui.engine.firing import evaluator

    rows = evaluator.due_schedules(conn, at("2025-01-01T00:01:00"))
    plan, _ = evaluator.plan_fires(rows[0], at("2025-01-01T00:01:00"), 1000)
    redeploy = Client(dsn)
    redeploy.periodic("contested", "0 0 * * *", "test.job")
    assert redeploy.sync() == {"inserted": 0, "updated": 1}
    assert plan is not None and evaluator.fire_batch(conn, [plan]) == []
    assert job_count(conn) == 0
    redeploy.close()


def test_two_plans_from_the_same_read_fire_once(client: Client, conn: psycopg.Connection[Any], register: Any) -> None:
    """Two runtimes that read the same row: the second CAS matches nothing (S11)."""
    register("contested", "* * * * * *", last=BASE, missed_fire_policy="catch_up")
    from awa_tui.engine.firing import evaluator

    now = at(BASE) + timedelta(seconds=5)
    row = evaluator.due_schedules(conn, now)[0]
    first, _ = evaluator.plan_fires(row, now, 1000)
    second, _ = evaluator.plan_fires(row, now, 1000)
    assert first is not None and second is not None
    assert len(evaluator.fire_batch(conn, [first])) == 5
    assert evaluator.fire_batch(conn, [second]) == []
    assert fire_times(conn, "contested") == [
        (at(BASE) + timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ") for s in range(1, 6)
    ]
