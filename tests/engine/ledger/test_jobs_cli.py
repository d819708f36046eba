"""`awa-tui jobs ...` and `awa-tui cron why|history`, run as the real executable."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from cli_helpers import awa, awa_json, one_line_error
from ledger_helpers import at, lead, register

from awa_tui import Client


def _audit_count(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone()
    assert row is not None
    return int(row["n"])


def _state(conn: psycopg.Connection[Any], job_id: int) -> str:
    row = conn.execute("SELECT state FROM awa.jobs WHERE id = %s", (job_id,)).fetchone()
    assert row is not None
    return str(row["state"])


@pytest.fixture
def fired(client: Client, conn: psycopg.Connection[Any]) -> dict[str, int]:
    """`nightly` fired three times (00:01, 00:02, 00:03): the first failed and was discarded,
    the second runs, the third waits; `other` fired once."""
    register(client, conn, "nightly", "* * * * *", at("2025-01-01T00:00:30"), max_attempts=1, queue="q1")
    register(client, conn, "other", "* * * * *", at("2025-01-01T00:00:30"), queue="q2")
    lead(conn, at("2025-01-01T00:00:00"))
    ids: dict[str, int] = {}
    for minute in (1, 2, 3):
        for job in client.evaluate(now=at(f"2025-01-01T00:0{minute}:00")).jobs:
            ids[f"{job.name}{minute}"] = job.id

    def fail(job: Any) -> None:
        raise ValueError("bad input\x1b[31m")

    client.register_handler("test.job", fail)
    conn.execute("UPDATE awa.jobs SET state = 'completed' WHERE id > %s AND metadata ->> 'cron_name' = 'other'",
                 (ids["other1"],))
    conn.execute("UPDATE awa.jobs SET run_at = now() + interval '1 hour' WHERE id <> %s", (ids["nightly1"],))
    assert [s for _, s in client.work_once()] == ["discarded"]
    conn.execute("UPDATE awa.jobs SET state = 'running', attempt = 1 WHERE id = %s", (ids["nightly2"],))
    return ids


def test_jobs_list_filters(dsn: str, fired: dict[str, int]) -> None:
    rows = awa_json("jobs", "list", "--schedule", "nightly", "--dsn", dsn)
    assert [(r["id"], r["state"], r["result"], r["fire_time"]) for r in rows] == [
        (fired["nightly3"], "available", "waiting", "2025-01-01T00:03:00+00:00"),
        (fired["nightly2"], "running", "running", "2025-01-01T00:02:00+00:00"),
        (fired["nightly1"], "discarded", "failed", "2025-01-01T00:01:00+00:00"),
    ]
    assert [r["id"] for r in awa_json("jobs", "list", "--state", "discarded", "--dsn", dsn)] == [fired["nightly1"]]
    assert [r["id"] for r in awa_json("jobs", "list", "--queue", "q2", "--limit", "1", "--dsn", dsn)] == [
        fired["other3"]]
    assert len(awa_json("jobs", "list", "--since", "1h", "--dsn", dsn)) == 6
    assert len(awa_json("jobs", "list", "--since", "today", "--dsn", dsn)) == 6  # all created just now
    assert awa_json("jobs", "list", "--since", "2999-01-01T00:00:00Z", "--dsn", dsn) == []
    text = awa("jobs", "list", "--schedule", "nightly", "--dsn", dsn).stdout
    assert "ValueError: bad input\\x1b[31m" in text and "\x1b" not in text


def test_jobs_show(dsn: str, fired: dict[str, int]) -> None:
    detail = awa_json("jobs", "show", str(fired["nightly1"]), "--dsn", dsn)
    assert (detail["job"]["state"], [a["error"] for a in detail["attempts"]]) == (
        "discarded", ["ValueError: bad input\x1b[31m"])
    assert detail["attempts"][0]["traceback"].endswith("ValueError: bad input\x1b[31m\n")
    text = awa("jobs", "show", str(fired["nightly1"]), "--dsn", dsn).stdout
    assert "attempt 1 (" in text and "ValueError: bad input\\x1b[31m" in text and "\x1b" not in text


def test_jobs_retry_and_cancel_are_audited(dsn: str, conn: psycopg.Connection[Any], fired: dict[str, int]) -> None:
    retried = awa_json("jobs", "retry", str(fired["nightly1"]), "--operator", "ops-fay", "--dsn", dsn)
    assert (retried["id"], retried["state"]) == (fired["nightly1"], "available")
    cancelled = awa_json("jobs", "cancel", str(fired["nightly3"]), "--operator", "ops-fay", "--dsn", dsn)
    assert (cancelled["id"], cancelled["state"]) == (fired["nightly3"], "cancelled")
    rows = conn.execute(
        "SELECT operator, action, target, before, after FROM awa.audit_log WHERE action LIKE 'job_%' ORDER BY id"
    ).fetchall()
    assert rows == [
        {"operator": "ops-fay", "action": "job_retry", "target": f"job:{fired['nightly1']}",
         "before": {"state": "discarded"}, "after": {"state": "available"}},
        {"operator": "ops-fay", "action": "job_cancel", "target": f"job:{fired['nightly3']}",
         "before": {"state": "available"}, "after": {"state": "cancelled"}},
    ]


def test_refused_job_actions_write_nothing(dsn: str, conn: psycopg.Connection[Any], fired: dict[str, int]) -> None:
    audited = _audit_count(conn)
    done = fired["nightly1"]
    assert one_line_error(awa("jobs", "cancel", str(done), "--dsn", dsn)) == (
        f"error: job {done} is finished (state discarded): only a waiting or running job can be cancelled")
    assert one_line_error(awa("jobs", "retry", str(fired["other1"]), "--dsn", dsn)) == (
        f"error: job {fired['other1']} cannot be retried: it is already waiting to run (state available)")
    assert one_line_error(awa("jobs", "show", "999999", "--dsn", dsn)) == "error: unknown job 999999"
    assert one_line_error(awa("jobs", "retry", "999999", "--dsn", dsn)) == "error: unknown job 999999"
    assert (_state(conn, fired["nightly2"]), _state(conn, fired["other1"]), _audit_count(conn)) == (
        "running", "available", audited)


def test_jobs_bad_input(dsn: str, fired: dict[str, int]) -> None:
    assert one_line_error(awa("jobs", "list", "--state", "done", "--dsn", dsn)) == (
        "error: state: expected one of available, running, completed, retryable, discarded, cancelled, got 'done'")
    assert one_line_error(awa("jobs", "list", "--since", "2 days", "--dsn", dsn)) == (
        "error: --since: expected a duration (90s, 2h, 14d), today, yesterday or an ISO-8601 instant, got '2 days'")
    assert one_line_error(awa("jobs", "list", "--schedule", "nope", "--dsn", dsn)) == (
        "error: unknown schedule 'nope'")
    assert one_line_error(awa("jobs", "prune", "--older-than", "soon", "--dsn", dsn)) == (
        "error: --older-than: expected a duration such as 90s, 15m, 1h30m, 14d, got 'soon'")


def test_jobs_prune_by_hand(dsn: str, conn: psycopg.Connection[Any], fired: dict[str, int]) -> None:
    # Finished long ago: the discarded nightly1 and the completed other2, other3.
    conn.execute("UPDATE awa.jobs SET finalized_at = now() - interval '30 days' WHERE state IN ('completed', "
                 "'discarded')")
    dry = awa_json("jobs", "prune", "--older-than", "14d", "--keep", "1", "--dry-run", "--dsn", dsn)
    assert (dry["deleted"], dry["by_schedule"], dry["dry_run"]) == (2, {"nightly": 1, "other": 1}, True)
    out = awa("jobs", "prune", "--older-than", "14d", "--keep", "1", "--operator", "ops-gus", "--dsn", dsn)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("pruned 2 finished jobs (finished before ")
    left = {r["id"] for r in conn.execute("SELECT id FROM awa.jobs").fetchall()}
    # other keeps its last job (other3); nightly its running and waiting ones.
    assert left == {fired["nightly2"], fired["nightly3"], fired["other1"], fired["other3"]}


def test_cron_why_and_history(dsn: str, fired: dict[str, int]) -> None:
    answer = awa_json("cron", "why", "nightly", "--at", "2025-01-01T00:01:00Z", "--dsn", dsn)
    assert (answer["verdict"]["verdict"], answer["verdict"]["job_id"], answer["verdict"]["error"]) == (
        "fired", fired["nightly1"], "ValueError: bad input\x1b[31m")
    text = awa("cron", "why", "nightly", "--at", "2025-01-01T00:01:00Z", "--dsn", dsn).stdout
    assert text.startswith("nightly: due instant 2025-01-01T00:01:00Z: fired (job ")
    assert "failed: ValueError: bad input\\x1b[31m" in text and "\x1b" not in text
    history = awa_json("cron", "history", "nightly", "--since", "2025-01-01T00:00:00Z", "--until",
                       "2025-01-01T00:03:30Z", "--dsn", dsn)
    assert [(h["instant"], h["verdict"], h["job_id"]) for h in history] == [
        ("2025-01-01T00:01:00+00:00", "fired", fired["nightly1"]),
        ("2025-01-01T00:02:00+00:00", "fired", fired["nightly2"]),
        ("2025-01-01T00:03:00+00:00", "fired", fired["nightly3"]),
    ]


def test_cron_why_and_history_bad_input(dsn: str, conn: psycopg.Connection[Any], fired: dict[str, int]) -> None:
    audited = _audit_count(conn)
    assert one_line_error(awa("cron", "why", "nope", "--dsn", dsn)) == "error: unknown schedule 'nope'"
    assert one_line_error(awa("cron", "why", "nightly", "--at", "yesterday", "--dsn", dsn)) == (
        "error: --at: expected an ISO-8601 instant such as 2025-03-08T00:00:00Z, got 'yesterday'")
    assert one_line_error(awa("cron", "history", "nightly", "--since", "2025-01-02T00:00:00Z", "--until",
                              "2025-01-01T00:00:00Z", "--dsn", dsn)) == (
        "error: --since 2025-01-02T00:00:00+00:00 is after --until 2025-01-01T00:00:00+00:00: the range is reversed")
    assert one_line_error(awa("cron", "history", "nightly", "--since", "x1", "--dsn", dsn)) == (
        "error: --since: expected a duration (90s, 2h, 14d), today, yesterday or an ISO-8601 instant, got 'x1'")
    assert _audit_count(conn) == audited
