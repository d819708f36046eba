"""Jobs stranded in `running` by a dead runtime go back to the queue (S19 hardening)."""

from __future__ import annotations

from datetime import timedelta

from engine_helpers import at

from awa_tui import Client
from awa_tui.engine.jobs import store as worker
from awa_tui.engine.jobs.context import Job


def _claim(runtime: Client, kind: str) -> Job:
    """Claim one job as `runtime`'s worker would, without running its handler."""
    with runtime.db.connection() as conn:
        (job,) = worker.claim_jobs(conn, [kind], 1, claimed_by=runtime.identity.instance_id)
    return job


def _job(conn, job_id):
    return conn.execute("SELECT state, attempt, errors, claimed_by FROM awa.jobs WHERE id = %s", (job_id,)).fetchone()


def _hint(conn, name):
    return conn.execute("SELECT next_fire_at FROM awa.cron_jobs WHERE name = %s", (name,)).fetchone()["next_fire_at"]


def _enqueue(conn, kind, max_attempts=25):
    row = conn.execute(
        "INSERT INTO awa.jobs (kind, max_attempts) VALUES (%s, %s) RETURNING id", (kind, max_attempts)
    ).fetchone()
    return row["id"]


def test_a_job_claimed_by_a_stopped_runtime_is_rescued_as_retryable(dsn, conn, client):
    dead = Client(dsn, operator="tester@test")
    dead.runtime.snapshot()
    job_id = _enqueue(conn, "report")
    job = _claim(dead, "report")
    assert job.id == job_id and _job(conn, job_id)["claimed_by"] == dead.identity.instance_id
    dead.runtime.snapshot(stopped=True)  # it stopped with the job still running
    dead.close()

    rescued = client.runtime.rescue_orphaned_jobs()

    assert rescued == [{"id": job_id, "state": "retryable"}]
    row = _job(conn, job_id)
    assert row["state"] == "retryable" and row["attempt"] == 1
    assert row["errors"][-1]["error"] == "rescued: the runtime running it stopped or went stale"


def test_a_job_of_a_stale_runtime_is_rescued_and_a_spent_one_discarded(dsn, conn, client):
    gone = Client(dsn, operator="tester@test", snapshot_interval=timedelta(seconds=10))
    gone.runtime.snapshot()
    spent_id = _enqueue(conn, "last-try", max_attempts=1)
    _claim(gone, "last-try")
    # Its last snapshot is 31 s old in DB time: past max(30 s, 3 x 10 s).
    conn.execute(
        "UPDATE awa.runtime_instances SET last_seen_at = now() - interval '31 seconds' WHERE instance_id = %s",
        (gone.identity.instance_id,),
    )
    gone.db.close_all()

    assert client.runtime.rescue_orphaned_jobs() == [{"id": spent_id, "state": "discarded"}]


def test_jobs_of_a_fresh_runtime_are_left_running(dsn, conn, client):
    alive = Client(dsn, operator="tester@test")
    alive.runtime.snapshot()
    job_id = _enqueue(conn, "long")
    _claim(alive, "long")

    assert client.runtime.rescue_orphaned_jobs() == []
    assert _job(conn, job_id)["state"] == "running"
    alive.close()


def test_a_hand_edit_of_the_expression_resets_the_next_fire_hint(register, client, conn):
    register("edited", "0 0 1 1 *", created="2025-06-01T00:00:00")  # yearly: the hint is far away
    client.evaluate(now=at("2025-06-01T00:00:00"))
    assert _hint(conn, "edited") == at("2026-01-01T00:00:00")

    conn.execute("UPDATE awa.cron_jobs SET cron_expr = '* * * * *' WHERE name = 'edited'")
    assert _hint(conn, "edited") is None
    # ... so the next pass plans it afresh and fires on the new expression at once.
    result = client.evaluate(now=at("2025-06-01T00:05:30"))
    assert [j.fire_time for j in result.jobs] == ["2025-06-01T00:05:00Z"]
