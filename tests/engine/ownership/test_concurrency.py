"""S32, S35: the lock order holds under concurrent traffic; migrations beside a live leader."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

import psycopg
import pytest
from helpers import wait_for
from reconcile_helpers import declare

from awa_tui import AwaError, Client, Conflict
from awa_tui.engine import migrations
from awa_tui.engine.core.db import PROTOCOL_LOCK_KEY
from awa_tui.engine.migrations import Migration

ROUNDS = 20
RECONCILER_LABEL = "awa-reconciler"  # retired_by of an automatic retirement


def _run_all(workers: dict[str, Callable[[int], None]], rounds: int = ROUNDS) -> list[str]:
    """Run each worker `rounds` times in its own thread; return its errors: every error,
    a refusal too (a worker expecting one catches and checks it itself)."""
    errors: list[str] = []
    start = threading.Barrier(len(workers))

    def loop(name: str, step: Callable[[int], None]) -> None:
        start.wait()
        for i in range(rounds):
            try:
                step(i)
            except (AwaError, AssertionError) as exc:
                errors.append(f"{name}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=loop, args=item) for item in workers.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(t.is_alive() for t in threads), "a worker hung (lock wait?)"
    return errors


def test_crossing_two_owners_and_two_rows_never_deadlocks(dsn, conn):
    a = declare(dsn, "a", ["x", "a-only"])
    b = declare(dsn, "b", ["y", "b-only"])
    a.sync()
    b.sync()
    clients = [Client(dsn, operator=f"op{i}@test") for i in range(5)]
    xfer_x, xfer_y, lifecycle, leader, pauser = clients

    def swap(client: Client, name: str) -> None:
        current = client.reads.get_schedule(name).owner
        client.actions.transfer(name, "b" if current == "a" else "a")

    auto_retired: list[str] = []

    def retire_restore(i: int) -> None:
        for name in ("y", "x") if i % 2 else ("x", "y"):
            if lifecycle.reads.get_schedule(name).retired_at:
                lifecycle.actions.restore(name)  # only this worker restores: never refused
                continue
            try:
                lifecycle.actions.retire(name)
            except Conflict as exc:
                # The one race: the leader's reconciliation retired it (its owner's declaration
                # lacks it after a transfer) between the read and the retire.
                assert str(exc) == f"schedule {name!r} is already retired (by {RECONCILER_LABEL})", exc
                assert lifecycle.reads.get_schedule(name).retired_by == RECONCILER_LABEL
                auto_retired.append(name)

    def pause_resume(i: int) -> None:
        for name in ("x", "y"):
            (pauser.actions.resume if pauser.reads.get_schedule(name).paused_at else pauser.actions.pause)(name)

    def lead(i: int) -> None:
        leader.runtime.reconcile()
        leader.evaluate()

    errors = _run_all({
        "transfer x": lambda i: swap(xfer_x, "x"),
        "transfer y": lambda i: swap(xfer_y, "y"),
        "retire/restore": retire_restore,
        "publish": lambda i: (a.runtime.publish(), b.runtime.publish()),
        "leader": lead,
        "pause/resume": pause_resume,
    })
    assert errors == []
    owners = {r["name"]: r["owner"] for r in conn.execute("SELECT name, owner FROM awa.cron_jobs").fetchall()}
    assert set(owners) == {"x", "y", "a-only", "b-only"} and set(owners.values()) <= {"a", "b"}
    for client in (*clients, a, b):
        client.close()


def test_a_migration_touching_both_tables_beside_a_live_leader(dsn, conn, monkeypatch):
    """S35: cron_jobs is locked before jobs, so the migration waits for a live fire instead
    of deadlocking with it, and no per-second fire is lost or doubled."""
    leader = Client(dsn, operator="tester@test", snapshot_interval=timedelta(seconds=1))
    leader.periodic("every-second", "* * * * * *", "test.tick", missed_fire_policy="catch_up")
    leader.start(run_worker=False)

    def fires() -> list[str]:
        rows = conn.execute("SELECT metadata ->> 'cron_fire_time' AS f FROM awa.jobs ORDER BY id").fetchall()
        return [r["f"] for r in rows]

    wait_for(lambda: len(fires()) >= 2, timeout=15, what="the leader to fire")
    # The worst order for a deadlock: jobs first, hold it, then cron_jobs rows.
    touch_both = Migration(
        migrations.code_version() + 1,
        "s35_probe",
        "ALTER TABLE awa.jobs ADD COLUMN s35_probe text;"
        "SELECT pg_sleep(1.2);"
        "UPDATE awa.cron_jobs SET updated_at = updated_at;"
        "ALTER TABLE awa.cron_jobs ADD COLUMN s35_probe text;",
    )
    original = migrations.available()
    monkeypatch.setattr(migrations, "available", lambda: [*original, touch_both])
    assert migrations.migrate(dsn) == [touch_both.version]
    before = len(fires())
    wait_for(lambda: len(fires()) >= before + 3, timeout=15, what="fires after the migration")
    leader.close()
    seen = fires()
    assert len(seen) == len(set(seen)), "a fire was doubled"
    instants = sorted(datetime.fromisoformat(f.replace("Z", "+00:00")) for f in seen)
    gaps = [b - a for a, b in itertools.pairwise(instants)]
    assert set(gaps) == {timedelta(seconds=1)}, "a fire was lost"


@pytest.mark.parametrize("rounds", [10])
def test_reconcile_and_publications_serialise_without_errors(dsn, conn, rounds):
    runtimes = [declare(dsn, "billing", ["invoice", "dunning"]) for _ in range(3)]
    runtimes[0].sync()
    leaders = [Client(dsn, operator="tester@test") for _ in range(2)]
    workers: dict[str, Callable[[int], None]] = {
        f"runtime {i}": (lambda i, r=r: r.runtime.publish()) for i, r in enumerate(runtimes)
    }
    workers |= {f"leader {i}": (lambda i, c=c: c.runtime.reconcile()) for i, c in enumerate(leaders)}
    assert _run_all(workers, rounds) == []
    certificate = conn.execute("SELECT certificate_hash FROM awa.owners").fetchone()["certificate_hash"]
    assert certificate == runtimes[0].runtime.manifest.hash
    for client in (*runtimes, *leaders):
        client.close()


def test_job_traffic_never_waits_for_the_protocol_lock(dsn, conn, client):
    """S32: fires, triggers, pauses and the worker run while the protocol lock is held."""
    owner = declare(dsn, "billing", {"owned": "* * * * *"})
    owner.sync()
    client.periodic("free", "* * * * *", "test.job")
    client.sync()
    client.register_handler("test.job", lambda job: None)
    holder = psycopg.connect(dsn, autocommit=True)
    holder.execute("BEGIN")
    holder.execute("SELECT pg_advisory_xact_lock(%s)", (PROTOCOL_LOCK_KEY,))
    with client.db.connection() as c:
        c.execute("SET lock_timeout = '300ms'")  # any wait on the lock fails fast
    conn.execute("UPDATE awa.cron_jobs SET created_at = now() - interval '1 hour'")
    assert client.evaluate(now=datetime.now().astimezone() + timedelta(minutes=1)).fired == 2
    client.actions.trigger("owned")
    client.actions.pause("owned")
    client.actions.resume("owned")
    assert len(client.work_once(limit=10)) == 3
    holder.execute("ROLLBACK")
    holder.close()
    owner.close()


def test_the_leader_skips_reconciliation_while_the_protocol_lock_is_busy(dsn, conn, client):
    billing = declare(dsn, "billing", ["invoice"])
    billing.sync()
    billing.runtime.publish()
    holder = psycopg.connect(dsn, autocommit=True)
    holder.execute("BEGIN")
    holder.execute("SELECT pg_advisory_xact_lock(%s)", (PROTOCOL_LOCK_KEY,))
    with client.db.connection() as c:
        c.execute("SET lock_timeout = '300ms'")
    assert [r["skipped"] for r in client.runtime.reconcile(wait=False)] == [True]
    client.runtime.leader_pass()  # fires and returns at once, reconciliation deferred
    holder.execute("ROLLBACK")
    holder.close()
    assert [r["skipped"] for r in client.runtime.reconcile(wait=False)] == [False]
    billing.close()
