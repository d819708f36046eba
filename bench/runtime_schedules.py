"""Schedules made at run time through the public API (docs/runtime-schedules.md), at scale:
a bulk create of N per-tenant schedules, then single creates, edits and deletes inside an
application's own transaction with the N registered, then a bulk edit and a bulk delete.

    .venv/bin/python -m bench.runtime_schedules [--schedules 1000000] [--singles 300]

The bench server (AWA_BENCH_DATABASE_URL, else the embedded PostgreSQL of bench/), a fresh
database. The fleet is what a per-tenant app makes: "report at HH:MM in the tenant's zone",
five zones, one schedule per tenant, built with `Schedule.build` (validation included in
the time: it is the app's cost) and written by `Client.create_schedules` (the audit trail
included: one entry per schedule, written by the database). A single create, edit or
delete runs in the app's own transaction (`conn=`) together with an INSERT of its own row,
then commits: the time of the whole transaction, as the app waits for it.
Targets (the issue's): N = 1M made in < 60 s; a single create's p99 < 10 ms at 1M; edits
and deletes reported beside it. Prints a Markdown table and writes
bench/results/runtime-schedules.json.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import psycopg

from awa_tui import Client
from awa_tui.engine.migrations import migrate
from awa_tui.engine.schedules.definition import Schedule
from bench.common import RESULTS_DIR, percentile, start_server

ZONES = ("UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo", "Australia/Sydney")
OWNER = "tenants"
BULK_TARGET_S = 60.0  # 1M made through the public API
SINGLE_P99_TARGET_MS = 10.0


def tenant(i: int, hour_shift: int = 0) -> Schedule:
    return Schedule.build(f"tenant-{i:07d}.report", f"{i % 60} {(i // 60 + hour_shift) % 24} * * 1", "report",
                          {"tenant": i}, timezone=ZONES[i % len(ZONES)])


def _timed(step: Callable[[], Any]) -> float:
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def _in_app_transaction(dsn: str, count: int, action: Callable[[psycopg.Connection[Any], int], Any]) -> list[float]:
    """Milliseconds of each app transaction: the app's own row, then the action, committed."""
    out = []
    with psycopg.connect(dsn) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_signups (tenant int PRIMARY KEY)")
        conn.commit()
        for k in range(count):
            start = time.perf_counter()
            with conn.transaction():
                conn.execute("INSERT INTO bench_signups VALUES (%s) ON CONFLICT DO NOTHING", (k,))
                action(conn, k)
            out.append((time.perf_counter() - start) * 1000)
    return out


def _quantiles(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": percentile(ms, 0.5) or 0.0, "p99_ms": percentile(ms, 0.99) or 0.0,
            "max_ms": max(ms) if ms else 0.0}


def single_changes(dsn: str, client: Client, first: int, count: int) -> dict[str, dict[str, float]]:
    """`count` tenants from number `first` on, each created, then each edited, then each
    deleted, one app transaction per call (`_in_app_transaction`): the milliseconds of each
    kind (p50, p99, max). What they leave behind is what was there before (and the app's rows)."""
    extra = [tenant(first + k) for k in range(count)]
    return {
        "single_create": _quantiles(_in_app_transaction(
            dsn, count, lambda conn, k: client.create_schedule(
                extra[k].name, extra[k].cron_expr, "report", {"tenant": first + k}, owner=OWNER, conn=conn,
                timezone=extra[k].timezone))),
        "single_edit": _quantiles(_in_app_transaction(
            dsn, count, lambda conn, k: client.update_schedule(
                extra[k].name, owner=OWNER, conn=conn, cron_expr=f"{k % 60} 9 * * 2"))),
        "single_delete": _quantiles(_in_app_transaction(
            dsn, count, lambda conn, k: client.delete_schedule(extra[k].name, owner=OWNER, conn=conn))),
    }


def measure(dsn: str, n: int, singles: int) -> dict[str, Any]:
    migrate(dsn)
    client = Client(dsn, operator="bench@runtime-schedules")
    result: dict[str, Any] = {"schedules": n, "singles": singles}
    fleet: list[Schedule] = []
    result["build_s"] = _timed(lambda: fleet.extend(tenant(i) for i in range(n)))
    result["create_s"] = _timed(lambda: client.create_schedules(fleet, owner=OWNER))
    result["bulk_create_s"] = result["build_s"] + result["create_s"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE awa.cron_jobs")
        made = conn.execute("SELECT count(*) FROM awa.cron_jobs WHERE origin = 'api'").fetchone()
        audited = conn.execute("SELECT count(*) FROM awa.audit_log WHERE action = 'create'").fetchone()
    assert made is not None and audited is not None
    result["made"], result["audited"] = made[0], audited[0]
    result.update(single_changes(dsn, client, n, singles))
    moved = [tenant(i, hour_shift=1) for i in range(n)]
    result["bulk_edit_s"] = _timed(lambda: client.update_schedules(moved, owner=OWNER))
    result["bulk_delete_s"] = _timed(lambda: client.delete_schedules([s.name for s in fleet], owner=OWNER))
    client.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--schedules", type=int, default=1_000_000)
    parser.add_argument("--singles", type=int, default=300)
    args = parser.parse_args()
    server = start_server()
    try:
        with server.database("runtime_schedules") as dsn:
            result = measure(dsn, args.schedules, args.singles)
    finally:
        server.stop()
    n = result["schedules"]
    verdict = "PASS" if n < 1_000_000 or result["bulk_create_s"] < BULK_TARGET_S else "FAIL"
    single = "PASS" if result["single_create"]["p99_ms"] < SINGLE_P99_TARGET_MS else "FAIL"
    print(f"| {n:,} schedules made at run time (PostgreSQL {server.version}) | value | target |")
    print("|---|---:|---|")
    print(f"| bulk create: build (Schedule.build) | {result['build_s']:.1f} s | |")
    print(f"| bulk create: create_schedules (audited) | {result['create_s']:.1f} s | |")
    print(f"| bulk create, whole | {result['bulk_create_s']:.1f} s "
          f"({n / result['bulk_create_s']:,.0f}/s) | 1M < {BULK_TARGET_S:.0f} s: {verdict} |")
    for key, words in (("single_create", "single create"), ("single_edit", "single edit"),
                       ("single_delete", "single delete")):
        q = result[key]
        target = f"p99 < {SINGLE_P99_TARGET_MS:.0f} ms: {single}" if key == "single_create" else ""
        print(f"| {words} in the app's transaction, p50 / p99 / max | {q['p50_ms']:.2f} / {q['p99_ms']:.2f} / "
              f"{q['max_ms']:.2f} ms | {target} |")
    print(f"| bulk edit (every schedule's hour) | {result['bulk_edit_s']:.1f} s | |")
    print(f"| bulk delete | {result['bulk_delete_s']:.1f} s | |")
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "runtime-schedules.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
