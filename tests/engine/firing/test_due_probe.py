"""S10 between vacuums: a minute boundary's fires leave one dead entry per fired row in the
due index, below the next pass's `now`. The due query's gate reads the index in order, which
marks those entries dead once no open transaction can see their rows; a bitmap scan of the range (the
planner's pick at a million rows) never does, and read every one of them on every idle pass
until autovacuum came (the negative control below)."""

from __future__ import annotations

from typing import Any

import psycopg
from engine_helpers import at
from helpers import wait_for

from awa_tui.engine.firing import evaluator

SEED_SQL = """
INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, missed_fire_policy, created_at, last_enqueued_at)
SELECT format('probe-%%s', lpad(i::text, 5, '0')), '* * * * *', 'UTC', 'k', 'coalesce', %(created)s, %(last)s
FROM generate_series(1, %(n)s) AS i
"""
N = 3000
PAGES_SQL = "SELECT count(DISTINCT (ctid::text::point)[0])::int AS pages FROM awa.cron_jobs"
UNGATED = evaluator.DUE_SQL.replace(f"\n  AND {evaluator.DUE_GATE} <= %(now)s", "")


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [node] + [n for child in node.get("Plans", []) for n in _nodes(child)]


def _plan(conn: psycopg.Connection[Any], statement: str, now: Any, *, bitmap: bool = False) -> list[dict[str, Any]]:
    """The nodes of `statement` as run at `now`. `bitmap`: the range read as a bitmap scan,
    the planner's pick at a million rows (at 3,000 it picks an ordered index scan of the
    range, which marks dead entries too)."""
    with conn.transaction():
        if bitmap:
            conn.execute("SET LOCAL enable_indexscan = off")
            conn.execute("SET LOCAL enable_indexonlyscan = off")
        plan = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, {"now": now}).fetchone()
    return _nodes(plan["QUERY PLAN"][0]["Plan"])


def _bitmap_read(conn: psycopg.Connection[Any], now: Any) -> tuple[int, int]:
    """(index entries, heap pages) a bitmap scan of the range reads, without the gate."""
    nodes = _plan(conn, UNGATED, now, bitmap=True)
    (index,) = [n for n in nodes if n["Node Type"] == "Bitmap Index Scan"]
    (heap,) = [n for n in nodes if n["Node Type"] == "Bitmap Heap Scan"]
    return index["Actual Rows"], heap.get("Exact Heap Blocks", 0)


def test_the_idle_probe_after_a_boundary_marks_its_dead_entries_once(conn: psycopg.Connection[Any]) -> None:
    assert UNGATED != evaluator.DUE_SQL  # the gate is where the control takes it out
    conn.execute("ALTER TABLE awa.cron_jobs SET (autovacuum_enabled = false)")  # dead rows stay dead
    conn.execute(SEED_SQL, {"n": N, "created": at("2025-01-01T00:00:00"), "last": at("2025-01-01T00:02:00")})
    assert evaluator.evaluate(conn, at("2025-01-01T00:03:00")).fired == N  # hints: 00:04
    conn.execute("VACUUM awa.cron_jobs")
    pages = conn.execute(PAGES_SQL).fetchone()["pages"]  # where the versions the boundary kills live
    assert evaluator.evaluate(conn, at("2025-01-01T00:04:00.300")).fired == N  # hints: 00:05
    idle = at("2025-01-01T00:04:30")

    # Negative control: without the gate, a bitmap scan reads all N dead entries and their
    # pages, on every pass.
    assert _bitmap_read(conn, idle) == (N, pages)
    assert _bitmap_read(conn, idle) == (N, pages)

    probe = _plan(conn, evaluator.DUE_SQL, idle)  # the idle pass's due query, once
    assert probe[0]["Actual Rows"] == 0
    (gate,) = [n for n in probe if n.get("Parent Relationship") == "InitPlan"]
    (scan,) = [n for n in _nodes(gate) if n.get("Relation Name") == "cron_jobs"]
    assert (scan["Node Type"], scan["Index Name"], scan["Actual Rows"]) in {
        ("Index Only Scan", "cron_jobs_due_idx", 1), ("Index Scan", "cron_jobs_due_idx", 1)}
    # The range itself was never read: the first live hint (00:05) is ahead of `now`.
    assert [n["Actual Loops"] for n in probe if n.get("Relation Name") == "cron_jobs" and n is not scan] == [0]
    # The gate met the dead entries in order and marked them, once no snapshot could still
    # see them (on a server shared with other databases a CREATE DATABASE holds every
    # database's horizon while it copies, so that can take a few passes): each poll runs the
    # idle pass's due query again, as the leader does every second.
    def marked() -> bool:
        conn.execute(evaluator.DUE_SQL, {"now": idle}).fetchall()
        return _bitmap_read(conn, idle) == (0, 0)

    wait_for(marked, timeout=30, interval=0.05, what="the gate to mark the dead entries")
    result = evaluator.evaluate(conn, idle)
    assert (result.examined, result.fired, result.errors) == (0, 0, [])
