"""S16 pause/resume, S17 trigger, S20 audit: operator actions on real rows."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
import pytest
from engine_helpers import at, fire_times, force, schedule_row

from awa_tui import Client, Conflict, NotFound, ReadOnly, ValidationError


def _db_now(conn: psycopg.Connection[Any]) -> Any:
    return conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]


# --- pause / resume (S16) ------------------------------------------------------------------


def test_pause_and_resume_record_operator_and_db_time(client: Client, conn: Any, register: Any) -> None:
    register("p", "* * * * *", last="2025-01-01T00:00:00")
    before = _db_now(conn)
    paused = client.actions.pause("p", operator="alice@ops")
    after = _db_now(conn)
    row = schedule_row(conn, "p")
    assert row["paused_by"] == "alice@ops"
    assert before <= row["paused_at"] <= after
    assert paused.paused_at == row["paused_at"]
    assert row["last_enqueued_at"] == at("2025-01-01T00:00:00")
    resumed = client.actions.resume("p", operator="bob@ops")
    row = schedule_row(conn, "p")
    assert (row["paused_at"], row["paused_by"], resumed.paused_at) == (None, None, None)
    assert row["last_enqueued_at"] == at("2025-01-01T00:00:00")


def test_resume_with_coalesce_fires_once(client: Client, conn: Any, register: Any) -> None:
    register("c", "* * * * *", last="2025-01-01T00:00:00")
    client.actions.pause("c")
    assert client.evaluate(now=at("2025-01-01T00:10:00")).jobs == []
    assert schedule_row(conn, "c")["last_enqueued_at"] == at("2025-01-01T00:00:00")
    client.actions.resume("c")
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:10:30")).jobs] == ["2025-01-01T00:10:00Z"]
    assert client.evaluate(now=at("2025-01-01T00:10:30")).jobs == []


def test_resume_with_catch_up_replays_in_order_bounded(dsn: str, conn: Any) -> None:
    client = Client(dsn, operator="tester@test", catch_up_limit=3)
    client.periodic("r", "* * * * *", "k", missed_fire_policy="catch_up")
    client.sync()
    force(conn, "UPDATE awa.cron_jobs SET last_enqueued_at = '2025-01-01T00:00:00Z', next_fire_at = NULL")
    client.actions.pause("r")
    assert client.evaluate(now=at("2025-01-01T00:05:00")).jobs == []
    client.actions.resume("r")
    now = at("2025-01-01T00:05:00")
    assert [j.fire_time for j in client.evaluate(now=now).jobs] == [
        "2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z", "2025-01-01T00:03:00Z",
    ]
    assert [j.fire_time for j in client.evaluate(now=now).jobs] == ["2025-01-01T00:04:00Z", "2025-01-01T00:05:00Z"]
    assert client.evaluate(now=now).jobs == []
    client.close()


@pytest.mark.parametrize("action", ["pause", "resume", "trigger", "remove"])
def test_unknown_schedule_is_a_clear_error(client: Client, conn: Any, action: str) -> None:
    with pytest.raises(NotFound) as caught:
        getattr(client.actions, action)("no-such-schedule")
    assert str(caught.value) == "unknown schedule 'no-such-schedule'"
    assert conn.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone() == {"n": 0}


def test_pause_twice_and_resume_unpaused_are_conflicts_without_audit(client: Client, conn: Any) -> None:
    client.periodic("p", "* * * * *", "k")
    client.sync()
    with pytest.raises(Conflict, match="is not paused"):
        client.actions.resume("p")
    client.actions.pause("p", operator="alice@ops")
    with pytest.raises(Conflict, match=r"already paused \(by alice@ops\)"):
        client.actions.pause("p", operator="bob@ops")
    assert [r["action"] for r in conn.execute("SELECT action FROM awa.audit_log")] == ["pause"]


def test_pausing_leaves_existing_jobs_untouched(client: Client, conn: Any, register: Any) -> None:
    register("p", "* * * * *", last="2025-01-01T00:00:00")
    client.evaluate(now=at("2025-01-01T00:01:00"))
    client.actions.trigger("p")
    conn.execute(
        "INSERT INTO awa.jobs (kind, state, attempt, metadata) VALUES "
        "('test.job', 'running', 1, '{\"cron_name\": \"p\"}'), "
        "('test.job', 'retryable', 2, '{\"cron_name\": \"p\"}'), "
        "('test.job', 'discarded', 25, '{\"cron_name\": \"p\"}')"
    )
    jobs_before = conn.execute("SELECT *, xmin::text AS xmin FROM awa.jobs ORDER BY id").fetchall()
    client.actions.pause("p")
    assert conn.execute("SELECT *, xmin::text AS xmin FROM awa.jobs ORDER BY id").fetchall() == jobs_before
    assert [j["state"] for j in jobs_before] == ["available", "available", "running", "retryable", "discarded"]


# --- trigger (S17) ---------------------------------------------------------------------------


def test_trigger_while_paused_inserts_one_job_and_keeps_the_boundary(
    client: Client, conn: Any, register: Any
) -> None:
    register("t", "0 0 * * *", last="2025-01-01T00:00:00", args={"a": 1}, queue="q", priority=3,
             max_attempts=4, tags=["x"], metadata={"team": "t"})
    client.actions.pause("t", operator="alice@ops")
    job = client.actions.trigger("t", operator="bob@ops")
    rows = conn.execute("SELECT * FROM awa.jobs").fetchall()
    assert len(rows) == 1 and rows[0]["id"] == job.id
    columns = ("kind", "queue", "args", "state", "priority", "attempt", "max_attempts", "tags")
    assert {k: rows[0][k] for k in columns} == {
        "kind": "test.job", "queue": "q", "args": {"a": 1}, "state": "available", "priority": 3, "attempt": 0,
        "max_attempts": 4, "tags": ["x"],
    }
    metadata = rows[0]["metadata"]
    assert (metadata["triggered_manually"], metadata["cron_name"], metadata["team"]) == (True, "t", "t")
    row = schedule_row(conn, "t")
    assert (row["last_enqueued_at"], row["paused_by"]) == (at("2025-01-01T00:00:00"), "alice@ops")


def test_trigger_is_refused_for_a_retired_schedule(client: Client, conn: Any) -> None:
    client.periodic("gone", "* * * * *", "k")
    client.sync()
    force(conn, "UPDATE awa.cron_jobs SET retired_at = now(), retired_by = 'ops' WHERE name = 'gone'")
    with pytest.raises(Conflict, match="'gone' is retired"):
        client.actions.trigger("gone")
    assert conn.execute("SELECT count(*) AS n FROM awa.jobs").fetchone() == {"n": 0}
    assert conn.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone() == {"n": 0}


def test_trigger_does_not_disturb_the_next_automatic_fire(client: Client, conn: Any, register: Any) -> None:
    register("t", "*/10 * * * *", last="2025-01-01T00:00:00")
    client.actions.trigger("t")
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:10:00")).jobs] == ["2025-01-01T00:10:00Z"]
    assert fire_times(conn, "t") == [None, "2025-01-01T00:10:00Z"]


# --- audit (S20) -------------------------------------------------------------------------------


def test_every_action_is_audited_with_operator_db_time_and_before_after(
    client: Client, conn: Any, register: Any
) -> None:
    register("a", "* * * * *", last="2025-01-01T00:00:00", queue="work")
    start = _db_now(conn)
    client.actions.pause("a", operator="op1")
    client.actions.resume("a", operator="op2")
    job = client.actions.trigger("a", operator="op3")
    client.actions.queue_pause("work", operator="op4")
    client.actions.queue_resume("work", operator="op5")
    client.actions.queue_drain("work", operator="op6")
    client.actions.remove("a", operator="op7")
    end = _db_now(conn)
    entries = conn.execute("SELECT * FROM awa.audit_log ORDER BY id").fetchall()
    assert [(e["operator"], e["action"], e["target"]) for e in entries] == [
        ("op1", "pause", "a"), ("op2", "resume", "a"), ("op3", "trigger", "a"),
        ("op4", "queue_pause", "queue:work"), ("op5", "queue_resume", "queue:work"),
        ("op6", "queue_drain", "queue:work"), ("op7", "remove", "a"),
    ]
    times = [e["at"] for e in entries]
    assert start <= times[0] and times == sorted(times) and times[-1] <= end
    pause, resume, trigger, qpause, qresume, drain, remove = entries
    assert (pause["before"]["paused_at"], pause["after"]["paused_by"]) == (None, "op1")
    # Instants inside before/after are ISO-8601, exactly the DB values.
    assert datetime.fromisoformat(pause["after"]["paused_at"]) == pause["at"]
    assert pause["after"]["last_enqueued_at"] == "2025-01-01T00:00:00+00:00"
    assert pause["before"]["last_enqueued_at"] == pause["after"]["last_enqueued_at"] is not None
    assert (resume["before"]["paused_by"], resume["after"]["paused_at"]) == ("op1", None)
    assert trigger["after"] == {"job_id": job.id}
    assert (qpause["before"]["paused"], qpause["after"]["paused"], qpause["after"]["paused_by"]) == (False, True, "op4")
    assert (qresume["before"]["paused"], qresume["after"]["paused"]) == (True, False)
    assert (drain["before"], drain["after"], drain["detail"]) == (
        {"waiting": 1}, {"waiting": 0}, {"queue": "work", "cancelled": 1},
    )
    assert (remove["before"]["name"], remove["before"]["cron_expr"], remove["after"]) == ("a", "* * * * *", None)


@pytest.mark.parametrize(
    "statement",
    ["UPDATE awa.audit_log SET operator = 'mallory'", "DELETE FROM awa.audit_log", "TRUNCATE awa.audit_log"],
)
def test_audit_log_is_append_only(client: Client, conn: Any, statement: str) -> None:
    client.periodic("a", "* * * * *", "k")
    client.sync()
    client.actions.pause("a", operator="op1")
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
        conn.execute(statement)  # type: ignore[arg-type]  # literal test SQL
    assert [(r["operator"], r["action"]) for r in conn.execute("SELECT * FROM awa.audit_log")] == [("op1", "pause")]


@pytest.mark.parametrize("label", ["", "   ", "x" * 201, "two\nlines", "bell\x07"])
def test_invalid_operator_label_is_refused(client: Client, conn: Any, label: str) -> None:
    client.periodic("a", "* * * * *", "k")
    client.sync()
    with pytest.raises(ValidationError, match=r"^operator:"):
        client.actions.pause("a", operator=label)
    with pytest.raises(ValidationError, match=r"^operator:"):
        Client(client.dsn, operator=label)
    assert schedule_row(conn, "a")["paused_at"] is None
    assert conn.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone() == {"n": 0}


def test_read_only_client_refuses_every_mutation(dsn: str, client: Client, conn: Any) -> None:
    client.periodic("a", "* * * * *", "k", queue="q")
    client.sync()
    observer = Client(dsn, read_only=True)
    observer.periodic("a", "* * * * *", "k")
    for target, action, args in [
        (observer.actions, "pause", ("a",)), (observer.actions, "resume", ("a",)),
        (observer.actions, "trigger", ("a",)), (observer.actions, "remove", ("a",)),
        (observer.actions, "queue_pause", ("q",)), (observer.actions, "queue_resume", ("q",)),
        (observer.actions, "queue_drain", ("q",)),
        (observer, "sync", ()), (observer, "evaluate", ()), (observer, "work_once", ()), (observer, "migrate", ()),
    ]:
        with pytest.raises(ReadOnly, match="refused: this client is read-only"):
            getattr(target, action)(*args)
    assert [r.name for r in observer.reads.list_schedules()] == ["a"]
    with pytest.raises(ReadOnly, match="the database is read-only"), observer.db.connection() as session:
        session.execute("UPDATE awa.cron_jobs SET paused_at = now()")  # refused by the server itself
    observer.close()
    assert conn.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone() == {"n": 0}
    assert schedule_row(conn, "a")["paused_at"] is None
