"""S23, S27-S29, S31: operator lifecycle actions, audited, with clear one-line errors."""

from __future__ import annotations

from datetime import timedelta

import pytest
from reconcile_helpers import db_now, declare, job_count, row

from awa_tui import Client, Conflict, NotFound, ReadOnly, ValidationError


def test_restore_replays_nothing_from_the_retired_period(client, conn):
    """An hourly catch_up schedule retired for five hours creates zero jobs for those hours."""
    client.periodic("hourly", "0 * * * *", "test.job", missed_fire_policy="catch_up")
    client.sync()
    # It last fired at the top of the hour five hours ago, then was retired right after.
    conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = date_trunc('hour', now()) - interval '5 hours'")
    client.actions.retire("hourly")
    conn.execute("UPDATE awa.cron_jobs SET retired_at = retired_at - interval '5 hours'")  # no-op: fenced
    client.actions.pause("hourly")
    restored = client.actions.restore("hourly")
    now = db_now(conn)
    assert restored.retired_at is None and restored.last_enqueued_at <= now
    assert now - restored.last_enqueued_at < timedelta(seconds=5)
    assert restored.paused_at is not None  # S28: pause state is kept
    client.actions.resume("hourly")
    assert client.evaluate().fired == 0
    assert job_count(conn) == 0
    # The next real fire after the boundary is the only one.
    next_hour = row(conn, "hourly")["next_fire_at"]
    result = client.evaluate(now=next_hour + timedelta(seconds=1))
    assert [j.fire_time for j in result.jobs] == [next_hour.strftime("%Y-%m-%dT%H:%M:%SZ")]


def test_restore_never_moves_the_fire_boundary_backwards(client, conn):
    client.periodic("tick", "0 * * * *", "test.job")
    client.sync()
    future = db_now(conn) + timedelta(hours=2)
    conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = %s", (future,))
    client.actions.retire("tick")
    assert client.actions.restore("tick").last_enqueued_at == future


def test_each_action_is_audited_with_operator_and_before_after(dsn, client, conn):
    client.periodic("job", "0 * * * *", "test.job")
    client.sync()
    client.actions.adopt("job", "billing", operator="alice")
    client.actions.transfer("job", "payments", operator="bob")
    client.actions.retire("job", operator="carol")
    client.actions.restore("job", operator="dave")
    entries = list(reversed(client.reads.list_audit("job")))
    assert [(e.action, e.operator) for e in entries] == [
        ("adopt", "alice"), ("transfer", "bob"), ("retire", "carol"), ("restore", "dave")]
    assert entries[0].before["owner"] is None and entries[0].after["owner"] == "billing"
    assert entries[1].before["owner"] == "billing" and entries[1].after["owner"] == "payments"
    assert entries[2].before["retired_at"] is None and entries[2].after["retired_by"] == "carol"
    assert entries[3].before["retired_at"] is not None and entries[3].after["retired_at"] is None
    assert all(e.at is not None for e in entries)


def test_lifecycle_errors_are_one_line_and_specific(client, conn):
    client.periodic("free", "0 * * * *", "test.job")
    client.periodic("mine", "0 * * * *", "test.job")
    client.sync()
    client.actions.adopt("mine", "billing")
    cases = [
        (lambda: client.actions.adopt("nope", "billing"), NotFound, "unknown schedule 'nope'"),
        (lambda: client.actions.adopt("mine", "billing"), Conflict, "already owned by 'billing'"),
        (lambda: client.actions.adopt("mine", "payments"), Conflict, "owned by 'billing'; use transfer"),
        (lambda: client.actions.transfer("free", "billing"), Conflict, "unowned; use adopt"),
        (lambda: client.actions.transfer("mine", "billing"), Conflict, "already owned"),
        (lambda: client.actions.restore("free"), Conflict, "not retired"),
        (lambda: client.actions.retire_owner("ghost"), NotFound, "owner 'ghost' has no schedules"),
        (lambda: client.actions.restore_owner("billing"), Conflict, "no retired schedules"),
        (lambda: client.actions.adopt("free", ""), ValidationError, "owner"),
        (lambda: client.actions.retire("free", operator=" "), ValidationError, "operator"),
    ]
    for action, error, text in cases:
        with pytest.raises(error, match=text) as info:
            action()
        assert "\n" not in str(info.value)
    client.actions.retire("free")
    with pytest.raises(Conflict, match="already retired"):
        client.actions.retire("free")
    client.actions.retire_owner("billing")
    with pytest.raises(Conflict, match="already retired"):
        client.actions.retire_owner("billing")


def test_read_only_clients_are_refused_every_lifecycle_action(dsn, client):
    client.periodic("job", "0 * * * *", "test.job")
    client.sync()
    viewer = Client(dsn, read_only=True)
    for action in (lambda: viewer.actions.adopt("job", "x"), lambda: viewer.actions.transfer("job", "x"),
                   lambda: viewer.actions.retire("job"), lambda: viewer.actions.restore("job"),
                   lambda: viewer.actions.retire_owner("x"), lambda: viewer.actions.restore_owner("x"),
                   lambda: viewer.runtime.reconcile(), lambda: viewer.runtime.publish()):
        with pytest.raises(ReadOnly):
            action()
    assert isinstance(viewer.reads.plan(), list) and isinstance(viewer.reads.list_owners(), list)
    viewer.close()


def test_retire_and_restore_void_only_the_touched_owner_certificate(dsn, conn, client):
    declared = {}
    for owner in ("a", "b"):
        declared[owner] = declare(dsn, owner, [f"{owner}1"])
        declared[owner].sync()
        declared[owner].runtime.publish()
    client.runtime.reconcile()
    client.actions.retire("a1")
    certs = {r["owner"]: r["certificate_hash"]
             for r in conn.execute("SELECT owner, certificate_hash FROM awa.owners").fetchall()}
    assert certs == {"a": None, "b": declared["b"].runtime.manifest.hash}
    for c in declared.values():
        c.close()


def test_remove_of_an_owned_schedule_voids_its_owner_certificate(dsn, conn, client):
    billing = declare(dsn, "billing", ["invoice"])
    billing.sync()
    billing.runtime.publish()
    client.runtime.reconcile()
    client.actions.remove("invoice")
    assert conn.execute("SELECT certificate_hash FROM awa.owners").fetchone()["certificate_hash"] is None
    billing.runtime.publish()
    client.runtime.reconcile()  # the owner's manifest still wants it: inserted again, owned
    assert row(conn, "invoice")["owner"] == "billing"
    billing.close()
