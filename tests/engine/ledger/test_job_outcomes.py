"""Job outcomes the console's Jobs panel reads: each schedule's last result, failures in
the last 24 hours, the outcome strip."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
from ledger_helpers import at, lead, register

from awa_tui import Client


def test_last_results_fails_and_strip(client: Client, conn: psycopg.Connection[Any]) -> None:
    for name in ("ok", "failed", "running", "waiting", "none"):
        register(client, conn, name, "* * * * *", at("2025-01-01T00:00:30"))
    lead(conn, at("2025-01-01T00:00:00"))
    client.actions.pause("none", operator="ops-hal")
    client.evaluate(now=at("2025-01-01T00:01:00"))
    client.evaluate(now=at("2025-01-01T00:02:00"))
    ids = {(r["name"], r["fire"]): r["id"] for r in conn.execute(
        "SELECT id, metadata ->> 'cron_name' AS name, metadata ->> 'cron_fire_time' AS fire FROM awa.jobs")}
    assert len(ids) == 8  # four schedules fired twice; `none` is paused
    states = {"ok": "completed", "failed": "retryable", "running": "running", "waiting": "available"}
    for name, state in states.items():
        # The older job of each schedule failed (discarded); the newer one is in `state`.
        conn.execute("UPDATE awa.jobs SET state = 'discarded', errors = '[{\"attempt\": 1, \"error\": \"old\"}]' "
                     "WHERE id = %s", (ids[(name, "2025-01-01T00:01:00Z")],))
        conn.execute("UPDATE awa.jobs SET state = %s, errors = %s::jsonb WHERE id = %s",
                     (state, '[{"attempt": 1, "error": "boom"}]' if state == "retryable" else "[]",
                      ids[(name, "2025-01-01T00:02:00Z")]))
    results = client.reads.last_results()
    assert {n: (r.result, r.job_id, r.error) for n, r in results.items()} == {
        "ok": ("ok", ids[("ok", "2025-01-01T00:02:00Z")], None),
        "failed": ("failed", ids[("failed", "2025-01-01T00:02:00Z")], "boom"),
        "running": ("running", ids[("running", "2025-01-01T00:02:00Z")], None),
        "waiting": ("waiting", ids[("waiting", "2025-01-01T00:02:00Z")], None),
        "none": ("none", None, None),
    }
    # Every job was created just now (DB time): all failures are within 24 hours.
    assert client.reads.fails_24h() == {"ok": 1, "failed": 2, "running": 1, "waiting": 1}
    assert client.reads.fails_24h(now=client.reads.db_time() + timedelta(days=2)) == {}
    strip = client.reads.outcome_strip("failed", count=20, now=at("2025-01-01T00:02:30"))
    assert [(v.instant, v.verdict, v.result) for v in strip] == [
        (at("2025-01-01T00:01:00"), "fired", "failed"),
        (at("2025-01-01T00:02:00"), "fired", "failed"),
    ]
    paused = client.reads.outcome_strip("none", now=at("2025-01-01T00:02:30"))
    # Paused just now (DB time), long after these instants: at them it was not paused, a
    # leader led, nothing fired since. Pending; `why` adds that it is paused now.
    assert [(v.instant, v.verdict) for v in paused] == [
        (at("2025-01-01T00:01:00"), "pending"), (at("2025-01-01T00:02:00"), "pending")]
    waiting = client.reads.list_jobs(state="available")
    assert [(j.id, j.schedule, j.result) for j in waiting] == [(ids[("waiting", "2025-01-01T00:02:00Z")],
                                                                "waiting", "waiting")]
