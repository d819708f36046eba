"""Health transitions with exact instants on a real Postgres (S41, S42): the leader's
evaluation is called with an injected `now`; jobs end at exact instants."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from engine_helpers import at, force
from health_helpers import failures, finish, health, register

from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.schedules.definition import Schedule


def transitions(conn: psycopg.Connection[Any], name: str) -> list[tuple[str, str | None, str]]:
    rows = conn.execute(
        "SELECT at, from_health, to_health FROM awa.health_transitions WHERE name = %s ORDER BY id", (name,)
    ).fetchall()
    return [(r["at"].isoformat(), r["from_health"], r["to_health"]) for r in rows]


def test_late_then_ok(client: Any, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "minutely", "* * * * *", at("2025-01-01T00:00:00"), max_lateness=60)
    client.evaluate(now=at("2025-01-01T00:00:30"))  # plans the hint: 00:01:00
    client.runtime.evaluate_health(now=at("2025-01-01T00:02:00"))  # 60 s after the instant: within
    assert health(conn, "minutely") == ("ok", None)
    client.runtime.evaluate_health(now=at("2025-01-01T00:02:01"))
    assert health(conn, "minutely") == (
        "late", "the fire due at 2025-01-01T00:01:00Z was not enqueued within 60 s (max_lateness)")
    client.evaluate(now=at("2025-01-01T00:02:05"))  # coalesces into one fire (00:02:00)
    client.runtime.evaluate_health(now=at("2025-01-01T00:02:06"))
    assert health(conn, "minutely") == ("ok", None)
    assert transitions(conn, "minutely") == [
        ("2025-01-01T00:02:01+00:00", "ok", "late"),
        ("2025-01-01T00:02:06+00:00", "late", "ok"),
    ]
    since = conn.execute("SELECT since FROM awa.cron_health WHERE name = 'minutely'").fetchone()
    assert since is not None and since["since"] == at("2025-01-01T00:02:06")


def test_the_client_default_max_lateness_applies(dsn: str, conn: psycopg.Connection[Any]) -> None:
    from datetime import timedelta

    from awa_tui.engine.client import Client

    with Client(dsn, max_lateness=timedelta(seconds=10)) as client:
        register(client, conn, "strict", "* * * * *", at("2025-01-01T00:00:00"))
        register(client, conn, "loose", "* * * * *", at("2025-01-01T00:00:00"), max_lateness=120)
        client.evaluate(now=at("2025-01-01T00:00:30"))
        client.runtime.evaluate_health(now=at("2025-01-01T00:01:11"))
        assert health(conn, "strict")[0] == "late"
        assert health(conn, "loose")[0] == "ok"
        stored = conn.execute("SELECT name, max_lateness FROM awa.cron_jobs ORDER BY name").fetchall()
        assert [(r["name"], r["max_lateness"]) for r in stored] == [("loose", 120), ("strict", 10)]


def test_a_hand_written_row_without_expectations_is_late_after_60_s(client: Any, conn: psycopg.Connection[Any]) -> None:
    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind, created_at) "
                 "VALUES ('by-hand', '* * * * *', 'test.job', '2025-01-01T00:00:00Z')")
    client.evaluate(now=at("2025-01-01T00:00:30"))
    client.runtime.evaluate_health(now=at("2025-01-01T00:02:00"))
    assert health(conn, "by-hand")[0] == "ok"
    client.runtime.evaluate_health(now=at("2025-01-01T00:02:01"))
    assert health(conn, "by-hand")[0] == "late"


def _fire(client: Any, conn: psycopg.Connection[Any], name: str, now: str) -> int:
    result = client.evaluate(now=at(now))
    ids = [j.id for j in result.jobs if j.name == name]
    assert len(ids) == 1, result
    return ids[0]


def test_fails_twice_then_succeeds(client: Any, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "flaky", "* * * * *", at("2025-01-01T00:00:00"), max_consecutive_failures=1)
    first = _fire(client, conn, "flaky", "2025-01-01T00:01:00")
    finish(conn, first, "discarded", at("2025-01-01T00:01:05"))
    client.runtime.evaluate_health(now=at("2025-01-01T00:01:10"))
    assert (health(conn, "flaky"), failures(conn, "flaky")) == (("ok", None), 1)
    second = _fire(client, conn, "flaky", "2025-01-01T00:02:00")
    finish(conn, second, "discarded", at("2025-01-01T00:02:05"))
    client.runtime.evaluate_health(now=at("2025-01-01T00:02:10"))
    assert (health(conn, "flaky"), failures(conn, "flaky")) == (
        ("failing", "2 consecutive failed jobs (max_consecutive_failures 1)"), 2)
    third = _fire(client, conn, "flaky", "2025-01-01T00:03:00")
    finish(conn, third, "completed", at("2025-01-01T00:03:05"))
    client.runtime.evaluate_health(now=at("2025-01-01T00:03:10"))
    assert (health(conn, "flaky"), failures(conn, "flaky")) == (("ok", None), 0)
    assert transitions(conn, "flaky") == [
        ("2025-01-01T00:02:10+00:00", "ok", "failing"),
        ("2025-01-01T00:03:10+00:00", "failing", "ok"),
    ]


def test_without_a_bound_the_last_failed_job_is_failing(client: Any, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "plain", "* * * * *", at("2025-01-01T00:00:00"))
    job = _fire(client, conn, "plain", "2025-01-01T00:01:00")
    finish(conn, job, "discarded", at("2025-01-01T00:01:05"))
    client.runtime.evaluate_health(now=at("2025-01-01T00:01:10"))
    assert health(conn, "plain") == ("failing", "the last job failed")


def test_a_success_after_expect_success_within_is_missed(client: Any, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "report", "* * * * *", at("2025-01-01T00:00:00"), expect_success_within=30)
    job = _fire(client, conn, "report", "2025-01-01T00:01:00")
    client.runtime.evaluate_health(now=at("2025-01-01T00:01:29"))  # not decided yet
    assert health(conn, "report") == ("ok", None)
    finish(conn, job, "completed", at("2025-01-01T00:01:31"))  # one second past 00:01:30
    client.runtime.evaluate_health(now=at("2025-01-01T00:01:31"))
    assert health(conn, "report") == (
        "missed", "no success for the fire at 2025-01-01T00:01:00Z within 30 s (expect_success_within)")
    # The next instant's job succeeds in time: decided ok at once.
    nxt = _fire(client, conn, "report", "2025-01-01T00:02:00")
    finish(conn, nxt, "completed", at("2025-01-01T00:02:30"))
    client.runtime.evaluate_health(now=at("2025-01-01T00:02:31"))
    assert health(conn, "report") == ("ok", None)


def test_no_success_at_all_is_missed_at_the_deadline(client: Any, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "silent", "* * * * *", at("2025-01-01T00:00:00"), expect_success_within=30,
             max_lateness=3600)
    _fire(client, conn, "silent", "2025-01-01T00:01:00")
    client.runtime.evaluate_health(now=at("2025-01-01T00:01:30"))  # the deadline itself
    assert health(conn, "silent")[0] == "missed"


def test_paused_is_never_late(client: Any, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "held", "* * * * *", at("2025-01-01T00:00:00"))
    client.evaluate(now=at("2025-01-01T00:00:30"))
    client.actions.pause("held", operator="tester")
    client.runtime.evaluate_health(now=at("2025-01-02T00:00:00"))  # a day of instants due
    assert health(conn, "held") == ("paused", "paused by tester")


def test_retired_and_broken(client: Any, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "gone", "* * * * *", at("2025-01-01T00:00:00"))
    register(client, conn, "bad", "* * * * *", at("2025-01-01T00:00:00"))
    client.actions.retire("gone", operator="tester")
    conn.execute("UPDATE awa.cron_jobs SET cron_expr = '61 * * * *' WHERE name = 'bad'")
    client.runtime.evaluate_health(now=at("2025-01-01T00:05:00"))
    assert health(conn, "gone") == ("retired", "retired by tester")
    state, reason = health(conn, "bad")
    assert state == "broken" and reason is not None and "61" in reason


def test_autopause_at_exactly_n_and_resume_resets(client: Any, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "sick", "* * * * *", at("2025-01-01T00:00:00"), pause_after_failures=3)
    for minute in (1, 2):
        job = _fire(client, conn, "sick", f"2025-01-01T00:0{minute}:00")
        finish(conn, job, "discarded", at(f"2025-01-01T00:0{minute}:05"))
    row = conn.execute("SELECT paused_at, paused_by FROM awa.cron_jobs WHERE name = 'sick'").fetchone()
    assert row == {"paused_at": None, "paused_by": None}
    assert failures(conn, "sick") == 2
    job = _fire(client, conn, "sick", "2025-01-01T00:03:00")
    finish(conn, job, "discarded", at("2025-01-01T00:03:05"))
    row = conn.execute("SELECT paused_at IS NOT NULL AS paused, paused_by FROM awa.cron_jobs WHERE name = 'sick'"
                       ).fetchone()
    assert row == {"paused": True, "paused_by": "awa-autopause"}
    audit = conn.execute("SELECT operator, action, detail FROM awa.audit_log WHERE target = 'sick' "
                         "AND action = 'pause'").fetchall()
    assert audit == [{"operator": "awa-autopause", "action": "pause",
                      "detail": {"reason": "3 consecutive failed jobs (pause_after_failures 3)", "job_id": job}}]
    client.runtime.evaluate_health(now=at("2025-01-01T00:03:10"))
    assert health(conn, "sick") == (
        "paused", "paused by awa-autopause after 3 consecutive failed jobs (pause_after_failures 3)")
    client.actions.resume("sick", operator="tester")
    assert failures(conn, "sick") == 0
    # No audit context leaks into the worker's transaction afterwards.
    leaked = conn.execute("SELECT current_setting('awa.operator', true) AS op").fetchone()
    assert leaked is not None and leaked["op"] in (None, "")


@pytest.mark.parametrize(("field", "value", "message"), [
    ("max_lateness", 0, "max_lateness: must be positive, got 0"),
    ("max_lateness", -5, "max_lateness: must be positive, got -5"),
    ("expect_success_within", 0, "expect_success_within: must be positive, got 0"),
    ("max_consecutive_failures", 0, "max_consecutive_failures: must be an integer 1..1000000, got 0"),
    ("pause_after_failures", -1, "pause_after_failures: must be an integer 1..1000000, got -1"),
    ("max_lateness", 1.5, "max_lateness: must be a whole number of seconds, got 1.5 s"),
])
def test_zero_or_negative_expectations_are_refused(field: str, value: object, message: str) -> None:
    with pytest.raises(ValidationError) as exc:
        Schedule.build("x", "* * * * *", "k", **{field: value})  # type: ignore[arg-type]
    assert str(exc.value) == message


def test_a_hand_written_zero_is_refused_by_the_database(client: Any, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "guarded", "* * * * *", at("2025-01-01T00:00:00"))
    with pytest.raises(psycopg.errors.CheckViolation) as exc:
        conn.execute("UPDATE awa.cron_jobs SET max_lateness = 0 WHERE name = 'guarded'")
    assert 'violates check constraint "cron_jobs_max_lateness_positive"' in str(exc.value)


def test_expectations_are_part_of_the_definition(client: Any, conn: psycopg.Connection[Any]) -> None:
    from datetime import timedelta

    register(client, conn, "declared", "* * * * *", at("2025-01-01T00:00:00"),
             max_lateness=timedelta(minutes=2), expect_success_within=timedelta(minutes=5),
             max_consecutive_failures=2, pause_after_failures=4)
    info = client.reads.get_schedule("declared")
    assert (info.max_lateness, info.expect_success_within, info.max_consecutive_failures,
            info.pause_after_failures) == (120, 300, 2, 4)


def test_a_removed_schedule_takes_its_health_with_it(client: Any, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "doomed", "* * * * *", at("2025-01-01T00:00:00"))
    client.evaluate(now=at("2025-01-01T00:00:30"))
    client.runtime.evaluate_health(now=at("2025-01-01T00:05:00"))
    assert health(conn, "doomed")[0] == "late"
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_health").fetchone() == {"n": 1}
    client.actions.remove("doomed", operator="tester")
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_health").fetchone() == {"n": 0}


def test_an_expectation_change_is_audited_and_fenced_like_the_definition(dsn: str, conn: psycopg.Connection[Any]
                                                                         ) -> None:
    from awa_tui.engine.client import Client

    with Client(dsn) as first:
        first.periodic("watched", "* * * * *", "test.job", max_lateness=60)
        first.sync()
    with Client(dsn) as second:
        second.periodic("watched", "* * * * *", "test.job", max_lateness=120)
        second.sync()
    audit = conn.execute("SELECT operator, action, before, after FROM awa.audit_log WHERE target = 'watched'"
                         ).fetchall()
    assert audit == [{"operator": "awa-sync", "action": "sync_definition", "before": {"max_lateness": 60},
                      "after": {"max_lateness": 120}}]
    # An owned row: an additive sync of another value is a quiet no-op (S5, the fence).
    force(conn, "UPDATE awa.cron_jobs SET owner = 'billing' WHERE name = 'watched'")
    conn.execute("UPDATE awa.cron_jobs SET max_lateness = 30 WHERE name = 'watched'")
    row = conn.execute("SELECT max_lateness FROM awa.cron_jobs WHERE name = 'watched'").fetchone()
    assert row == {"max_lateness": 120}


def test_the_built_in_default_is_stored_as_null_so_an_upgrade_rewrites_nothing(dsn: str,
                                                                            conn: psycopg.Connection[Any]) -> None:
    from awa_tui.engine.client import Client

    # A row as it was before expectations existed (NULL), then the same definition synced.
    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind) VALUES ('old', '* * * * *', 'test.job')")
    with Client(dsn) as client:
        client.periodic("old", "* * * * *", "test.job")
        assert client.sync() == {"inserted": 0, "updated": 0}
    row = conn.execute("SELECT max_lateness FROM awa.cron_jobs WHERE name = 'old'").fetchone()
    assert row == {"max_lateness": None}
