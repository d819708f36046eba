"""S15: a poison row is isolated. It is skipped (logged once until it changes), shown as
BROKEN with its reason by every view, and never stops another schedule from firing."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
import pytest
from engine_helpers import at, fire_times
from poison_seed import HEALTHY, JOBS_TARGET, POISON, broken, seed

from awa_tui import Client
from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.firing import evaluator
from awa_tui.engine.read import views

# Rows the evaluator never fetches: a hint that is never due, paused, retired.
NOT_FETCHED = {"p-next-inf", "p-paused-inf", "p-retired-neg-inf"}
# Odd but sound rows: they fire like the healthy ones.
FIRING = sorted([*HEALTHY, *(name for name, (_, fault) in POISON.items() if fault is None)])


def _skipped_name(message: str) -> str:
    return message.split("'")[1]


def test_poison_rows_never_stop_the_others(client: Client, conn: psycopg.Connection[Any],
                                           caplog: pytest.LogCaptureFixture) -> None:
    huge = seed(conn)
    caplog.set_level(logging.ERROR, logger="awa_tui.evaluator")
    expected_errors = {name: fault for name, fault in broken().items() if name not in NOT_FETCHED}
    for minute in (1, 2, 3):
        fire = f"2025-01-01T00:0{minute}:00Z"
        result = client.evaluate(now=at(fire))
        assert sorted((j.name, j.fire_time) for j in result.jobs) == sorted((n, fire) for n in [*FIRING, huge])
        skipped = {_skipped_name(m): m.split(" skipped: ", 1)[1] for m in result.errors}
        assert skipped == expected_errors
    for name in [*FIRING, huge]:
        assert fire_times(conn, name) == [f"2025-01-01T00:0{m}:00Z" for m in (1, 2, 3)]
    # Logged once per row over three passes, not once per pass.
    logged = [r.getMessage() for r in caplog.records]
    assert sorted(logged) == sorted(f"schedule {n!r} skipped: {f}" for n, f in expected_errors.items())
    assert all("\x1b" not in line for line in logged)
    # No broken row was marked fired.
    marked = conn.execute(
        "SELECT name FROM awa.cron_jobs WHERE name = ANY(%s) AND awa.safe_ts(last_enqueued_at) >= "
        "'2025-01-01T00:01:00Z'", (list(expected_errors),)
    ).fetchall()
    assert marked == []


def test_a_changed_fault_is_logged_again_and_a_repaired_row_forgotten(
    client: Client, conn: psycopg.Connection[Any], caplog: pytest.LogCaptureFixture
) -> None:
    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind, created_at) "
                 "VALUES ('r', '* * * * *', 'k', '2025-01-01T00:00:00Z')")
    conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = 'infinity' WHERE name = 'r'")
    caplog.set_level(logging.ERROR, logger="awa_tui.evaluator")
    client.evaluate(now=at("2025-01-01T00:01:00"))
    client.evaluate(now=at("2025-01-01T00:02:00"))
    conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = '-infinity' WHERE name = 'r'")
    client.evaluate(now=at("2025-01-01T00:03:00"))
    conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = NULL WHERE name = 'r'")
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:04:00")).jobs] == ["2025-01-01T00:04:00Z"]
    conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = 'infinity', next_fire_at = NULL WHERE name = 'r'")
    client.evaluate(now=at("2025-01-01T00:05:00"))
    assert [r.getMessage() for r in caplog.records] == [
        "schedule 'r' skipped: last_enqueued_at infinity is outside the supported range 0001-01-03..9999-12-29 UTC",
        "schedule 'r' skipped: last_enqueued_at -infinity is outside the supported range 0001-01-03..9999-12-29 UTC",
        "schedule 'r' skipped: last_enqueued_at infinity is outside the supported range 0001-01-03..9999-12-29 UTC",
    ]


def test_a_refused_chunk_is_bisected_to_the_refused_rows(client: Client, conn: psycopg.Connection[Any]) -> None:
    """A refusal no guard foresees (here a trigger of the operator's) costs only its rows."""
    names = [f"s{i:03}" for i in range(600)]  # >= HASH_JOINS_FROM: the SET LOCAL transaction path too
    conn.execute(
        "INSERT INTO awa.cron_jobs (name, cron_expr, kind, created_at) "
        "SELECT n, '* * * * *', 'k', '2025-01-01T00:00:00Z' FROM unnest(%s::text[]) n", (names,)
    )
    conn.execute(
        """
        CREATE FUNCTION public.refuse_some() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.metadata ->> 'cron_name' IN ('s007', 's433') THEN
                RAISE EXCEPTION 'refused by policy: %', NEW.metadata ->> 'cron_name';
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER refuse_some BEFORE INSERT ON awa.jobs FOR EACH ROW EXECUTE FUNCTION public.refuse_some();
        CREATE FUNCTION public.refuse_every() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'refused: every job';
        END $$;
        """
    )
    for chunk in (5000, 64):
        evaluator._logged.clear()
        now = at("2025-01-01T00:01:00") if chunk == 5000 else at("2025-01-01T00:02:00")
        result = evaluator.evaluate(conn, now, chunk=chunk)
        assert sorted(j.name for j in result.jobs) == [n for n in names if n not in ("s007", "s433")]
        assert sorted(result.errors) == [
            "schedule 's007' skipped: the database refused its fire: 'refused by policy: s007'",
            "schedule 's433' skipped: the database refused its fire: 'refused by policy: s433'",
        ]
        assert result.lost_races == 0
    assert fire_times(conn, "s008") == ["2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z"]
    assert fire_times(conn, "s007") == []
    # A refusal of every row is no poison row: past REFUSED_ROWS_MAX the pass fails, as before.
    conn.execute("DROP TRIGGER refuse_some ON awa.jobs")
    conn.execute("CREATE TRIGGER refuse_all BEFORE INSERT ON awa.jobs FOR EACH ROW "
                 "EXECUTE FUNCTION public.refuse_every()")
    with pytest.raises(psycopg.errors.RaiseException, match=r"^refused: every job\n"):
        evaluator.evaluate(conn, at("2025-01-01T00:03:00"))
    assert fire_times(conn, "s008") == ["2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z"]


def test_every_engine_view_renders_poison_rows(client: Client, conn: psycopg.Connection[Any]) -> None:
    huge = seed(conn)
    now = at("2025-01-01T00:00:30")
    expected = {**broken()}
    listed = {r.name: r.fault for r in client.reads.list_schedules()}
    assert {n: f for n, f in listed.items() if f} == expected
    assert listed[huge] is None and all(listed[n] is None for n in FIRING)

    page = client.reads.schedule_page(limit=1000, now=now)
    assert {r.name: r.fault for r in page.rows if r.fault} == expected
    by_name = {r.name: r for r in page.rows}
    assert all(by_name[n].next_fire is None for n in expected)  # a BROKEN row fires nothing
    assert by_name["a-healthy"].next_fire == at("2025-01-01T00:01:00")
    assert by_name["p-last-inf"].last_enqueued_at is None  # unloadable: shown as unknown
    assert by_name[JOBS_TARGET].lateness is None  # its newest job's fire time is no instant

    for name in [*POISON, huge, *HEALTHY, JOBS_TARGET]:
        row = client.reads.get_schedule(name)
        assert row.fault == expected.get(name)
        detail = client.reads.schedule_detail(name, now=now)
        assert (detail.next == []) == (name in expected or row.state == "retired")
        if name in expected:
            with pytest.raises(ValidationError) as caught:
                client.reads.next_fires(name, 3, after=now)
            assert str(caught.value) == expected[name]
    assert client.reads.get_schedule("p-args-bignum").args == '{"n": 1' + "0" * 5000 + "}"
    assert client.reads.get_schedule("p-args-nested").args == {"a": {"b": [None, True, 15 * 10**299, "\x1b[2J"]}}
    assert client.reads.get_schedule("p-tags-null").tags == ["ok", "NULL"]

    recent = client.reads.recent_fires(JOBS_TARGET)
    assert [(r.created_at, r.fire_time, r.manual, r.lateness) for r in recent] == [
        (at("2025-01-01T00:00:05"), "99999-01-01T00:00:00Z", False, None),
        (at("2025-01-01T00:00:05"), "", False, None),
        (at("2025-01-01T00:00:05"), "0044-03-15 BC", False, None),
        (None, "infinity", False, None),
        (None, "not a time", False, None),
        (None, "2025-01-01T00:00:00Z", False, None),
    ]
    runtimes = client.reads.list_runtimes()
    assert sorted((r.pid, r.started_at, r.last_seen_at, r.stopped_at, r.fresh) for r in runtimes) == [
        (-1, None, None, None, False), (2147483647, None, None, None, False),
    ]
    assert views.list_queues(conn)  # counts only, but over the same rows


def test_a_broken_row_holds_no_hint_so_its_repair_is_seen_next_pass(
    client: Client, conn: psycopg.Connection[Any]
) -> None:
    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind, created_at) "
                 "VALUES ('x', '* * * * *', 'k', '2025-01-01T00:00:00Z')")
    conn.execute("UPDATE awa.cron_jobs SET priority = 9 WHERE name = 'x'")
    result = client.evaluate(now=at("2025-01-01T00:01:00"))
    assert result.errors == ["schedule 'x' skipped: priority: must be an integer 1..4, got 9"]
    assert conn.execute("SELECT next_fire_at FROM awa.cron_jobs WHERE name = 'x'").fetchone() == {
        "next_fire_at": None
    }
    conn.execute("UPDATE awa.cron_jobs SET priority = 3 WHERE name = 'x'")
    result = client.evaluate(now=at("2025-01-01T00:02:00"))
    assert (result.errors, [j.fire_time for j in result.jobs]) == ([], ["2025-01-01T00:02:00Z"])
