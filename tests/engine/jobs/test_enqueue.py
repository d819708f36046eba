"""Enqueueing a one-off or delayed job: on the engine's connection, or in the app's own
transaction (it exists exactly when the app's writes commit); deduplicated by a key; shown
beside fired jobs with its source."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from awa_tui import Client, Job, ValidationError


def test_an_enqueued_job_runs_with_its_context(client: Client, conn: Any) -> None:
    seen: list[Job] = []
    client.register_handler("mail.send", seen.append)
    job_id = client.enqueue("mail.send", {"to": "a@example.com"}, queue="mail", priority=1, max_attempts=3,
                            tags=["signup"])
    assert [(job.id, state) for job, state in client.work_once()] == [(job_id, "completed")]
    (job,) = seen
    assert (job.kind, job.args, job.queue, job.priority, job.max_attempts, job.attempt, job.tags) == (
        "mail.send", {"to": "a@example.com"}, "mail", 1, 3, 1, ["signup"])
    assert (job.schedule, job.fire_time, job.manual, job.triggered_by, job.source) == (
        None, None, False, None, "enqueued")
    assert job.enqueued_at is not None and job.enqueued_at.tzinfo is not None
    (summary,) = client.reads.list_jobs()
    assert (summary.id, summary.schedule, summary.source, summary.state) == (job_id, None, "enqueued", "completed")


def test_a_delayed_job_waits_for_its_time(client: Client, conn: Any) -> None:
    client.register_handler("later", lambda job: None)
    job_id = client.enqueue("later", delay=timedelta(hours=1))
    at = datetime(2031, 1, 2, 3, 4, 5, tzinfo=UTC)
    pinned = client.enqueue("later", run_at=at)
    assert client.work_once() == []
    row = conn.execute("SELECT run_at - created_at AS wait FROM awa.jobs WHERE id = %s", (job_id,)).fetchone()
    assert row["wait"] == timedelta(hours=1)  # one statement: created_at and run_at share now()
    assert conn.execute("SELECT run_at FROM awa.jobs WHERE id = %s", (pinned,)).fetchone()["run_at"] == at


def test_inside_the_apps_transaction_the_job_exists_exactly_when_the_app_commits(
        client: Client, conn: Any, dsn: str) -> None:
    client.register_handler("order.ship", lambda job: None)
    conn.execute("CREATE TABLE orders (id int PRIMARY KEY)")
    with psycopg.connect(dsn) as app:  # the app's own connection, in a transaction
        app.execute("INSERT INTO orders VALUES (1)")
        kept = client.enqueue("order.ship", {"order": 1}, conn=app)
        assert client.work_once() == []  # not visible before the commit
        app.commit()
        app.execute("INSERT INTO orders VALUES (2)")
        dropped = client.enqueue("order.ship", {"order": 2}, conn=app)
        app.rollback()
    assert [job.id for job, _ in client.work_once()] == [kept]
    ids = [r["id"] for r in conn.execute("SELECT id FROM awa.jobs ORDER BY id")]
    assert ids == [kept] and dropped != kept
    assert [r["id"] for r in conn.execute("SELECT id FROM orders")] == [1]


def test_a_unique_key_held_by_a_waiting_job_adds_nothing_and_frees_once_it_finishes(client: Client, conn: Any) -> None:
    client.register_handler("sync.user", lambda job: None)
    first = client.enqueue("sync.user", {"user": 7}, unique_key="sync:7")
    assert client.enqueue("sync.user", {"user": 7}, unique_key="sync:7") == first
    assert conn.execute("SELECT count(*) AS n FROM awa.jobs").fetchone()["n"] == 1
    client.work_once()
    again = client.enqueue("sync.user", {"user": 7}, unique_key="sync:7")
    assert again != first


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"kind": ""}, "kind: a handler needs a non-empty kind, got ''"),
    ({"args": [1]}, "args: a mapping"),
    ({"priority": 9}, r"priority: 1 \(first\) to 4, got 9"),
    ({"max_attempts": 0}, "max_attempts: 1 to 1000, got 0"),
    ({"delay": timedelta(seconds=1), "run_at": datetime(2030, 1, 1, tzinfo=UTC)}, "give one of them, not both"),
    ({"run_at": datetime(2030, 1, 1)}, r"run_at: an aware datetime \(with its zone\)"),
    ({"delay": timedelta(seconds=-1)}, "delay: a timedelta of 0 or more"),
    ({"unique_key": ""}, "unique_key: a non-empty string"),
])
def test_enqueue_checks_what_it_is_given(client: Client, conn: Any, kwargs: dict[str, Any], error: str) -> None:
    options = {"kind": "k", **kwargs}
    with pytest.raises(ValidationError, match=error):
        client.enqueue(options.pop("kind"), **options)
    assert conn.execute("SELECT count(*) AS n FROM awa.jobs").fetchone()["n"] == 0
