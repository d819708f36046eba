"""The health duty judges candidates, not every schedule (S42, issue 18): each pass judges
the schedules whose health can have changed plus one keyset slice of all names (the
sweep). The sweep is one name per pass here, so a schedule judged at the pass asserted is
judged because it is a candidate, not because the sweep happened upon it. Exact instants,
a real Postgres."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from engine_helpers import at
from health_helpers import finish, health, register

from awa_tui.engine import migrations
from awa_tui.engine.health.rules import evaluate_health


def judge(conn: psycopg.Connection[Any], now: str) -> tuple[list[tuple[str, str | None, str]], int]:
    """One pass with a one-name sweep: (name, from, to) of each transition, and how many
    schedules it judged."""
    result = evaluate_health(conn, at(now), sweep=1)
    return [(t.name, t.from_health, t.to_health) for t in result.transitions], result.judged


def fillers(client: Any, conn: psycopg.Connection[Any], *names: str) -> None:
    """Hourly schedules that stay ok at every instant of these tests."""
    for name in names:
        register(client, conn, name, "0 * * * *", at("2025-01-01T00:00:00"))


def fire(client: Any, name: str, now: str) -> int:
    """The evaluator's pass at `now`; the id of `name`'s job."""
    ids = [j.id for j in client.evaluate(now=at(now)).jobs if j.name == name]
    assert len(ids) == 1
    return ids[0]


def sweep_after(conn: psycopg.Connection[Any]) -> str | None:
    row = conn.execute("SELECT sweep_after FROM awa.health_meta").fetchone()
    return row["sweep_after"] if row else None


def test_late_by_time_alone_is_judged_at_the_first_pass_past_max_lateness(
        client: Any, conn: psycopg.Connection[Any]) -> None:
    fillers(client, conn, "f1", "f2", "f3", "f4", "f5")
    register(client, conn, "minutely", "* * * * *", at("2025-01-01T00:00:00"), max_lateness=60)
    client.evaluate(now=at("2025-01-01T00:00:30"))  # each fires 00:00; hints 00:01 and 01:00
    assert judge(conn, "2025-01-01T00:00:40") == ([], 6)  # the six fires name their schedules
    # Nothing changes but the time: within max_lateness, only the sweep's name is judged.
    assert judge(conn, "2025-01-01T00:02:00") == ([], 1)
    # One second later the due index names it: judged (with the sweep's next name), late.
    assert judge(conn, "2025-01-01T00:02:01") == ([("minutely", "ok", "late")], 2)
    assert health(conn, "minutely") == (
        "late", "the fire due at 2025-01-01T00:01:00Z was not enqueued within 60 s (max_lateness)")
    assert sweep_after(conn) == "f3"


def test_paused_then_resumed_is_paused_then_ok_in_consecutive_passes(
        client: Any, conn: psycopg.Connection[Any]) -> None:
    fillers(client, conn, "f1", "f2", "f3", "f4", "f5")
    register(client, conn, "zz-held", "* * * * *", at("2025-01-01T00:00:00"))
    client.evaluate(now=at("2025-01-01T00:00:30"))  # each fires 00:00
    assert judge(conn, "2025-01-01T00:00:40") == ([], 6)  # the six fires name their schedules
    client.actions.pause("zz-held", operator="tester")  # audited by the database: named next pass
    assert judge(conn, "2025-01-01T00:00:50") == ([("zz-held", "ok", "paused")], 2)
    assert health(conn, "zz-held") == ("paused", "paused by tester")
    client.actions.resume("zz-held", operator="tester")
    assert judge(conn, "2025-01-01T00:01:00") == ([("zz-held", "paused", "ok")], 2)
    # Steady again: the audit rows were read once; only the sweep's name is judged.
    assert judge(conn, "2025-01-01T00:01:10") == ([], 1)
    assert sweep_after(conn) == "f4"


def test_a_hand_inserted_broken_row_is_broken_exactly_when_the_sweep_reaches_it(
        client: Any, conn: psycopg.Connection[Any]) -> None:
    fillers(client, conn, "a1", "a2", "c1")
    # Plain SQL, as psql would: no audit row, no hint, nothing fires; only the sweep sees it.
    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind, created_at) "
                 "VALUES ('b-broken', '61 * * * *', 'test.job', '2025-01-01T00:00:00Z')")
    assert judge(conn, "2025-01-01T00:00:10") == ([], 1)  # a1
    assert judge(conn, "2025-01-01T00:00:20") == ([], 1)  # a2
    assert health(conn, "b-broken") == ("ok", None)
    changes, judged = judge(conn, "2025-01-01T00:00:30")  # b-broken
    assert (changes, judged) == ([("b-broken", "ok", "broken")], 1)
    state, reason = health(conn, "b-broken")
    assert state == "broken" and reason is not None and "61" in reason
    # Now recorded unhealthy, it is a candidate every pass; the sweep goes on and wraps.
    assert judge(conn, "2025-01-01T00:00:40") == ([], 2)  # c1 + b-broken
    assert sweep_after(conn) == "c1"
    assert judge(conn, "2025-01-01T00:00:50") == ([], 1)  # past the last name: b-broken only
    assert sweep_after(conn) is None
    assert judge(conn, "2025-01-01T00:01:00") == ([], 2)  # a1 again + b-broken


def test_failing_then_recovered_through_the_failure_count(client: Any, conn: psycopg.Connection[Any]) -> None:
    fillers(client, conn, "f1", "f2", "f3", "f4", "f5")
    register(client, conn, "zz-flaky", "* * * * *", at("2025-01-01T00:00:00"), max_consecutive_failures=1)
    first = fire(client, "zz-flaky", "2025-01-01T00:01:00")  # the fillers fire 00:00 here too
    finish(conn, first, "discarded", at("2025-01-01T00:01:05"))
    assert judge(conn, "2025-01-01T00:01:10") == ([], 6)  # the six fires name their schedules
    # One failure counted, within the bound: judged (the count names it), still ok.
    assert judge(conn, "2025-01-01T00:01:20") == ([], 2)
    second = fire(client, "zz-flaky", "2025-01-01T00:02:00")
    finish(conn, second, "discarded", at("2025-01-01T00:02:05"))
    assert judge(conn, "2025-01-01T00:02:10") == ([("zz-flaky", "ok", "failing")], 2)
    third = fire(client, "zz-flaky", "2025-01-01T00:03:00")
    finish(conn, third, "completed", at("2025-01-01T00:03:05"))
    assert judge(conn, "2025-01-01T00:03:10") == ([("zz-flaky", "failing", "ok")], 2)
    # Recovered, the count reset, no fire since: only the sweep's name.
    assert judge(conn, "2025-01-01T00:03:20") == ([], 1)


def expect_due(conn: psycopg.Connection[Any], name: str) -> str | None:
    row = conn.execute("SELECT expect_due_at FROM awa.cron_health WHERE name = %s", (name,)).fetchone()
    return row["expect_due_at"].isoformat() if row and row["expect_due_at"] else None


def test_expect_success_within_is_judged_once_per_deadline(client: Any, conn: psycopg.Connection[Any]) -> None:
    """v016: not every pass (before, each schedule declaring it was judged on every one)."""
    fillers(client, conn, *(f"f{i}" for i in range(1, 10)))
    register(client, conn, "zz-report", "* * * * *", at("2025-01-01T00:00:00"), expect_success_within=60,
             max_lateness=3600)
    job = fire(client, "zz-report", "2025-01-01T00:00:30")  # fires 00:00 (with the fillers)
    assert judge(conn, "2025-01-01T00:00:40") == ([], 10)  # the ten fires name their schedules
    assert expect_due(conn, "zz-report") == "2025-01-01T00:01:00+00:00"
    # Before its deadline nothing but the sweep's name is judged.
    assert judge(conn, "2025-01-01T00:00:50") == ([], 1)
    # At the deadline itself, no success: judged, missed.
    assert judge(conn, "2025-01-01T00:01:00") == ([("zz-report", "ok", "missed")], 2)
    assert expect_due(conn, "zz-report") is None  # no fire's deadline ahead
    finish(conn, job, "completed", at("2025-01-01T00:01:01"))  # too late for 00:00
    nxt = fire(client, "zz-report", "2025-01-01T00:01:05")
    finish(conn, nxt, "completed", at("2025-01-01T00:01:10"))  # in time for 00:01
    assert judge(conn, "2025-01-01T00:01:20") == ([("zz-report", "missed", "ok")], 2)
    assert expect_due(conn, "zz-report") == "2025-01-01T00:02:00+00:00"
    assert judge(conn, "2025-01-01T00:01:30") == ([], 1)
    # The 00:01 deadline: judged once (it succeeded in time: ok), then nothing ahead.
    assert judge(conn, "2025-01-01T00:02:00") == ([], 2)
    assert expect_due(conn, "zz-report") is None
    assert judge(conn, "2025-01-01T00:02:10") == ([], 1)
    assert health(conn, "zz-report") == ("ok", None)


def test_an_edited_bound_moves_the_deadline(client: Any, conn: psycopg.Connection[Any]) -> None:
    fillers(client, conn, *(f"f{i}" for i in range(1, 10)))
    register(client, conn, "zz-report", "* * * * *", at("2025-01-01T00:00:00"), expect_success_within=600,
             max_lateness=3600)
    fire(client, "zz-report", "2025-01-01T00:00:30")
    assert judge(conn, "2025-01-01T00:00:40") == ([], 10)
    assert expect_due(conn, "zz-report") == "2025-01-01T00:10:00+00:00"
    # A hand edit (audited by the database) names it: judged, and its deadline follows the bound.
    conn.execute("UPDATE awa.cron_jobs SET expect_success_within = 30 WHERE name = 'zz-report'")
    assert judge(conn, "2025-01-01T00:00:50") == ([("zz-report", "ok", "missed")], 2)
    conn.execute("UPDATE awa.cron_jobs SET expect_success_within = 120 WHERE name = 'zz-report'")
    assert judge(conn, "2025-01-01T00:01:00") == ([("zz-report", "missed", "ok")], 2)
    assert expect_due(conn, "zz-report") == "2025-01-01T00:02:00+00:00"


def test_the_upgrade_sets_the_deadlines_after_the_last_pass(empty_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """v016 on a database judged by the old duty: a deadline the last pass did not reach
    yet is set; one it already judged is not; no bound or no fires: none."""
    every = migrations.available()
    monkeypatch.setattr(migrations, "available", lambda: [m for m in every if m.version < 16])
    migrations.migrate(empty_dsn)
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind, expect_success_within) VALUES "
                     "('pending', '* * * * *', 'k', 60), ('judged', '* * * * *', 'k', 30), "
                     "('unbound', '* * * * *', 'k', NULL), ('quiet', '* * * * *', 'k', 60)")
        conn.execute("INSERT INTO awa.cron_health (name, recent_fires) VALUES "
                     "('pending', '{2025-01-01T00:01:00Z,2025-01-01T00:00:00Z}'), "
                     "('judged', '{2025-01-01T00:00:00Z}'), ('unbound', '{2025-01-01T00:01:00Z}'), "
                     "('quiet', '{}')")
        conn.execute("UPDATE awa.health_meta SET evaluated_at = '2025-01-01T00:01:30Z'")
    monkeypatch.setattr(migrations, "available", lambda: every)
    assert migrations.migrate(empty_dsn) == [m.version for m in every if m.version >= 16]
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        due = {r[0]: r[1] for r in conn.execute("SELECT name, expect_due_at FROM awa.cron_health")}
    assert due == {"pending": at("2025-01-01T00:02:00"), "judged": None, "unbound": None, "quiet": None}


def test_a_bulk_change_is_judged_over_passes_of_at_most_audit_batch_entries(
        client: Any, conn: psycopg.Connection[Any]) -> None:
    """Five pauses are five audit entries; with a batch of two, three passes read them
    (2, 2, 1), each judging the schedules its entries name, the first two saying there is
    more to read; then the trail is read up. A bulk change of a million is judged in slices
    of AUDIT_BATCH, never in one pass that holds the leader."""
    fillers(client, conn, "f1", "f2", "f3", "f4", "f5")
    client.evaluate(now=at("2025-01-01T00:00:30"))
    evaluate_health(conn, at("2025-01-01T00:00:40"), sweep=1)  # the fires' names, and the registrations
    start = seen(conn)
    for name in ("f1", "f2", "f3", "f4", "f5"):
        client.actions.pause(name, operator="tester")
    passes = [evaluate_health(conn, at(f"2025-01-01T00:00:5{i}"), sweep=1, audit_batch=2) for i in range(4)]
    assert [p.audit_behind for p in passes] == [True, True, False, False]
    assert [sorted(t.name for t in p.transitions) for p in passes] == [["f1", "f2"], ["f3", "f4"], ["f5"], []]
    assert [p.transitions[0].to_health for p in passes[:3]] == ["paused"] * 3
    assert seen(conn) == start + 5


def seen(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT audit_seen_id FROM awa.health_meta").fetchone()
    assert row is not None
    return int(row["audit_seen_id"])
