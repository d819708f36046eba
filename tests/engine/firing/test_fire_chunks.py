"""Issue 18: the fire path's chunks at scale.

- a chunk's plans are sent as shapes (token, fires, hint...) once plus one name per plan,
  and each schedule still gets exactly its own jobs, in name then instant order;
- plans are computed once per shape of row (SharedPlans), equal to plan_fires row by row;
- a pass of several chunks fires on two connections, each schedule once;
- the CAS UPDATE reaches its rows by key, never by scanning the table (at 1M rows a scan
  per chunk was most of a minute boundary's time).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from engine_helpers import at, fire_times
from psycopg.rows import dict_row

from awa_tui import Client
from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.firing import evaluator

BASE = "2025-01-01T00:00:00"
NOW = at("2025-01-01T00:03:00")


def _row(name: str, **values: Any) -> dict[str, Any]:
    row = {"name": name, "cron_expr": "* * * * *", "timezone": "UTC", "missed_fire_policy": "coalesce",
           "last_enqueued_at": at("2025-01-01T00:02:00"), "next_fire_at": at("2025-01-01T00:03:00"),
           "created_at": at(BASE), "overlap": "allow", "start_at": None, "end_at": None, "max_fires": None,
           "fires_count": 0, "jitter_ms": 0, "fault": None}
    return {**row, **values}


def test_shared_plans_equal_plan_fires_row_by_row() -> None:
    rows = [
        _row("a"), _row("b", jitter_ms=5000), _row("c", kind="other"),  # one shape
        _row("d", timezone="Asia/Tokyo"),
        _row("e", missed_fire_policy="catch_up", last_enqueued_at=at(BASE), next_fire_at=None),
        _row("f", missed_fire_policy="catch_up", last_enqueued_at=at(BASE), next_fire_at=None, max_fires=2),
        _row("g", missed_fire_policy="catch_up", last_enqueued_at=at(BASE), next_fire_at=None, max_fires=4,
             fires_count=2),  # the same fires left as f: the same shape
        _row("g2", missed_fire_policy="catch_up", last_enqueued_at=at(BASE), next_fire_at=None, max_fires=4,
             fires_count=1),
        _row("h", last_enqueued_at=None, next_fire_at=None, created_at=at("2025-01-01T00:01:30")),
        _row("i", last_enqueued_at=None, next_fire_at=None, created_at=at("2025-01-01T00:04:30")),
        _row("j", end_at=at("2025-01-01T00:02:30")),
        _row("k", next_fire_at=at("2025-01-01T00:04:00")),  # not due
        _row("l", overlap="skip"),
    ]
    shared = evaluator.SharedPlans(NOW, 1000)
    got = [shared.plan(row) for row in rows]
    assert got == [evaluator.plan_fires(row, NOW, 1000) for row in rows]
    a, b, c = (got[i][0] for i in range(3))
    assert a is not None and b is not None and c is not None
    assert (a.name, b.name, c.name, b.jitter_ms) == ("a", "b", "c", 5000)
    assert a.fires is b.fires is c.fires  # computed once for the shape
    assert got[3][0] is not None and got[3][0].fires is not a.fires
    # f, g and g2 have the same token; g2 has one more fire left: a shape of its own.
    f_plan, g_plan, g2_plan = got[5][0], got[6][0], got[7][0]
    assert f_plan is not None and g_plan is not None and g2_plan is not None
    assert [x.at for x in f_plan.fires] == [at("2025-01-01T00:01:00"), at("2025-01-01T00:02:00")]
    assert f_plan.fires is g_plan.fires
    assert [x.at for x in g2_plan.fires] == [at("2025-01-01T00:01:00"), at("2025-01-01T00:02:00"),
                                             at("2025-01-01T00:03:00")]


def test_a_broken_row_is_refused_each_time_it_is_seen() -> None:
    shared = evaluator.SharedPlans(NOW, 1000)
    for name in ("x", "y"):
        with pytest.raises(ValidationError, match="cron_expr"):
            shared.plan(_row(name, cron_expr="61 * * * *"))
    assert shared.known == {}


def _offset(name: str, fire_iso: str, jitter_ms: int) -> timedelta:
    digest = hashlib.sha256(f"awa-jitter:{name}\x00{fire_iso}".encode()).digest()
    return timedelta(milliseconds=int.from_bytes(digest[:8], "big") % jitter_ms)


def test_one_chunk_of_mixed_shapes_gives_each_schedule_its_own_jobs(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    for name in ("m-1", "m-2", "m-3"):
        register(name, "* * * * *", last="2025-01-01T00:02:00")
    register("m-tokyo", "* * * * *", last="2025-01-01T00:02:00", timezone="Asia/Tokyo")
    register("m-catch", "* * * * *", last=BASE, missed_fire_policy="catch_up")
    register("m-jitter", "* * * * *", last=BASE, missed_fire_policy="catch_up", jitter=timedelta(seconds=30))
    result = evaluator.evaluate(conn, NOW)
    assert (result.fired, result.lost_races, result.errors) == (10, 0, [])
    three = ["2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z", "2025-01-01T00:03:00Z"]
    expected = {"m-1": three[2:], "m-2": three[2:], "m-3": three[2:], "m-tokyo": three[2:],
                "m-catch": three, "m-jitter": three}
    assert {name: fire_times(conn, name) for name in expected} == expected
    # One statement: jobs in name order, then instant order.
    rows = conn.execute("SELECT metadata ->> 'cron_name' AS name, metadata ->> 'cron_fire_time' AS fire, run_at, "
                        "created_at FROM awa.jobs ORDER BY id").fetchall()
    assert [(r["name"], r["fire"]) for r in rows] == [
        (name, fire) for name in sorted(expected) for fire in expected[name]]
    for r in rows:
        if r["name"] == "m-jitter":
            assert r["run_at"] == at(r["fire"]) + _offset("m-jitter", r["fire"], 30000)
        else:
            assert r["run_at"] == r["created_at"]  # runs at once
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs WHERE last_enqueued_at = %s",
                        (at("2025-01-01T00:03:00"),)).fetchone() == {"n": 6}


SEED_SQL = """
INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, missed_fire_policy, created_at, last_enqueued_at)
SELECT format('bulk-%%s', lpad(i::text, 6, '0')), '* * * * *', 'UTC', 'k', 'coalesce', %(created)s, %(last)s
FROM generate_series(1, %(n)s) AS i
"""


def test_a_pass_of_several_chunks_fires_on_two_connections(dsn: str, conn: psycopg.Connection[Any]) -> None:
    conn.execute(SEED_SQL, {"n": 300, "created": at(BASE), "last": at("2025-01-01T00:02:00")})
    lent: list[int] = []
    sent: list[str] = []

    class Recording(psycopg.Cursor[Any]):
        def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
            sent.append(str(query))
            return super().execute(query, *args, **kwargs)

    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row, cursor_factory=Recording) as spare:

        @contextmanager
        def more() -> Iterator[psycopg.Connection[Any]]:
            lent.append(spare.info.backend_pid)
            yield spare

        result = evaluator.evaluate(conn, NOW, chunk=50, more=more)
        assert (result.fired, result.lost_races, result.errors) == (300, 0, [])
        assert lent == [spare.info.backend_pid]  # one extra connection for the whole pass
        # It sent fire chunks (each in its own transaction that carries the timeouts, S59).
        chunks = sum(1 for q in sent if q.startswith("\n-- awa fire batch"))
        settings = sum(1 for q in sent if q.startswith("SELECT set_config('lock_timeout'"))
        assert chunks >= 1 and settings == chunks
    counts = conn.execute("SELECT metadata ->> 'cron_fire_time' AS fire, count(*) AS n, "
                          "count(DISTINCT metadata ->> 'cron_name') AS names FROM awa.jobs GROUP BY 1").fetchall()
    assert counts == [{"fire": "2025-01-01T00:03:00Z", "n": 300, "names": 300}]
    assert [j.name for j in result.jobs] == [f"bulk-{i:06d}" for i in range(1, 301)]  # send order kept
    assert evaluator.evaluate(conn, NOW, chunk=50).fired == 0


def test_one_chunk_takes_no_second_connection(conn: psycopg.Connection[Any]) -> None:
    conn.execute(SEED_SQL, {"n": 40, "created": at(BASE), "last": at("2025-01-01T00:02:00")})

    @contextmanager
    def more() -> Iterator[psycopg.Connection[Any]]:
        raise AssertionError("a pass of one chunk asked for a second connection")
        yield conn  # pragma: no cover

    assert evaluator.evaluate(conn, NOW, chunk=50, more=more).fired == 40


def _scans(node: dict[str, Any]) -> Iterator[tuple[str, str]]:
    if "Relation Name" in node:
        yield node["Relation Name"], node["Node Type"]
    for child in node.get("Plans", []):
        yield from _scans(child)


def _chunk_scans(conn: psycopg.Connection[Any], statement: str, n: int) -> list[tuple[str, str]]:
    rows = evaluator.due_schedules(conn, NOW)
    plans = [p for p in (evaluator.plan_fires(r, NOW, 1000)[0] for r in rows) if p is not None][:n]
    params = evaluator._batch_params(sorted(plans, key=lambda p: p.name), NOW)
    with conn.transaction():
        conn.execute("SET LOCAL enable_nestloop = off")  # as _run_batch does for a big chunk
        plan = conn.execute("EXPLAIN (FORMAT JSON) " + statement, params, prepare=False).fetchone()
    assert plan is not None
    return [scan for scan in _scans(plan["QUERY PLAN"][0]["Plan"]) if scan[0] == "cron_jobs"]


KEY_GUARD = "      AND c.name = ANY(%(names)s::text[])\n"


def test_the_cas_update_reaches_its_rows_by_key(conn: psycopg.Connection[Any]) -> None:
    conn.execute(SEED_SQL, {"n": 50000, "created": at(BASE), "last": at("2025-01-01T00:02:00")})
    conn.execute("ANALYZE awa.cron_jobs")
    n = evaluator.HASH_JOINS_FROM + 100
    scans = _chunk_scans(conn, evaluator.FIRE_BATCH_SQL, n)
    assert scans and all(kind != "Seq Scan" for _, kind in scans), scans
    # Negative control: without the key condition the planner scans the whole table.
    assert KEY_GUARD in evaluator.FIRE_BATCH_SQL
    assert ("cron_jobs", "Seq Scan") in _chunk_scans(conn, evaluator.FIRE_BATCH_SQL.replace(KEY_GUARD, ""), n)
