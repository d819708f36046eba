"""The claim's cost does not grow with the backlog: with or without named queues it reads
each queue's index in order and stops at the batch (EXPLAIN ANALYZE, rolled back, on a
backlog of 50,000 waiting jobs over 5 queues), and it claims the best jobs of all queues."""

from __future__ import annotations

from typing import Any

import pytest

from awa_tui.engine.jobs.store import CLAIM_SQL

LIMIT = 10
QUEUES = 5


def _plan(conn: Any, queues: list[str] | None, sql: str = CLAIM_SQL) -> dict[str, Any]:
    params = {"kinds": ["k"], "queues": queues, "limit": LIMIT, "claimed_by": None, "exclude": []}
    with conn.transaction(force_rollback=True):  # ANALYZE runs the claim: its writes are undone
        rows = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchall()
    return rows[0]["QUERY PLAN"][0]["Plan"]


def _job_rows_read(node: dict[str, Any]) -> int:
    """Rows of awa.jobs that the plan's scans returned or filtered away, over all their loops."""
    own = 0
    if node.get("Relation Name") == "jobs" and "Scan" in node["Node Type"]:
        per_loop = node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
        own = per_loop * node["Actual Loops"]
    return own + sum(_job_rows_read(child) for child in node.get("Plans", []))


def _scans(node: dict[str, Any]) -> set[str]:
    found = {node["Node Type"]} if node.get("Relation Name") == "jobs" else set()
    return found.union(*(_scans(child) for child in node.get("Plans", [])))


@pytest.fixture
def backlog(conn: Any) -> Any:
    conn.execute(
        "INSERT INTO awa.jobs (kind, queue, priority, run_at) "
        "SELECT 'k', 'q' || (n % 5), 1 + n % 4, now() - (n || ' seconds')::interval "
        "FROM generate_series(1, 50000) AS n")
    conn.execute("ANALYZE awa.jobs")
    return conn


def test_a_claim_over_every_queue_reads_a_batch_per_queue_not_the_backlog(backlog: Any) -> None:
    plan = _plan(backlog, None)
    # Each queue's best LIMIT, one probe per queue (and one past the last) to find the queues,
    # and the LIMIT claimed rows found again by id to update: nothing near the 50,000 waiting.
    # (The probe past the last queue reads one row or none, by server version.)
    assert QUEUES * LIMIT + QUEUES + LIMIT <= _job_rows_read(plan) <= QUEUES * LIMIT + (QUEUES + 1) + LIMIT
    assert "Seq Scan" not in _scans(plan)


def test_a_claim_of_named_queues_reads_only_their_batches(backlog: Any) -> None:
    plan = _plan(backlog, ["q1", "q2"])  # their best LIMIT each, and the LIMIT claimed updated
    assert _job_rows_read(plan) == 2 * LIMIT + LIMIT
    assert "Seq Scan" not in _scans(plan)


def test_the_claim_takes_the_best_jobs_of_every_queue(backlog: Any) -> None:
    """By hand: job n has priority 1 + n % 4 and run_at now - n s; the best are priority 1
    (n = 4, 8, 12 ...), oldest first (largest n): 50000, 49996, ... over all queues."""
    params = {"kinds": ["k"], "queues": None, "limit": LIMIT, "claimed_by": None, "exclude": []}
    with backlog.transaction(force_rollback=True):
        got = sorted(r["id"] for r in backlog.execute(CLAIM_SQL, params).fetchall())
        ids = {r["id"]: r["n"] for r in backlog.execute(
            "SELECT id, row_number() OVER (ORDER BY id) AS n FROM awa.jobs").fetchall()}
    assert sorted(ids[i] for i in got) == list(range(50000 - 4 * (LIMIT - 1), 50001, 4))


def test_the_claim_before_this_one_read_the_whole_backlog_without_its_own_index(backlog: Any) -> None:
    """The negative control: v020's claim (one ORDER BY over every queue), without the index
    over every queue v022 dropped, reads the whole backlog for a batch of ten."""
    v020 = CLAIM_SQL[CLAIM_SQL.index("claim AS ("):]
    v020 = ("WITH claim AS (SELECT j.id FROM awa.jobs j WHERE j.state IN ('available', 'retryable') "
            "AND j.run_at <= now() AND j.kind = ANY(%(kinds)s::text[]) "
            "AND (%(queues)s::text[] IS NULL OR j.queue = ANY(%(queues)s::text[])) "
            "AND NOT (j.queue = ANY(%(exclude)s::text[])) "
            "ORDER BY j.priority, j.run_at, j.id LIMIT %(limit)s FOR UPDATE SKIP LOCKED) "
            + v020[v020.index("UPDATE awa.jobs"):])
    assert _job_rows_read(_plan(backlog, None, v020)) >= 50000
