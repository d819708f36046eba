"""S22-S24, S30: declaring ownership, names, and publication of the declaration."""

from __future__ import annotations

import threading
from datetime import timedelta

import psycopg
import pytest
from helpers import wait_for
from psycopg.rows import dict_row
from reconcile_helpers import codes, declare, owned, owner_plan, row

from awa_tui import Client, Conflict, ValidationError
from awa_tui.engine.core.db import PROTOCOL_LOCK_KEY
from awa_tui.engine.ownership.manifest import PROTOCOL_VERSION, build_manifest


def test_new_names_are_inserted_at_once_owned_by_the_declaring_owner(dsn, conn):
    billing = declare(dsn, "billing", ["invoice", "dunning"])
    assert billing.sync() == {"inserted": 2, "updated": 0}
    assert owned(conn) == {"invoice": ("billing", False), "dunning": ("billing", False)}
    assert conn.execute("SELECT owner FROM awa.owners").fetchall() == [{"owner": "billing"}]
    billing.close()


def test_a_foreign_owned_name_fails_startup_naming_both_owners(dsn, conn):
    payments = declare(dsn, "payments", ["refund"])
    payments.sync()
    billing = declare(dsn, "billing", ["invoice", "refund"])
    with pytest.raises(Conflict, match=r"'refund' is owned by 'payments'.*owner 'billing'"):
        billing.start(run_worker=False, lead=False)
    # Nothing was written by the failed startup: not even its own new name.
    assert owned(conn) == {"refund": ("payments", False)}
    billing.close()
    payments.close()


def test_an_unowned_name_is_never_adopted_silently(dsn, conn, client):
    client.periodic("legacy", "*/5 * * * *", "test.job")
    client.sync()
    billing = declare(dsn, "billing", ["legacy"])
    billing.sync()
    billing.runtime.publish()
    billing.runtime.reconcile()
    assert owned(conn) == {"legacy": (None, False)}
    assert row(conn, "legacy")["cron_expr"] == "*/5 * * * *"
    plan = owner_plan(billing, "billing")
    assert plan.conflicts[0]["kind"] == "unowned"
    assert {"conflict"} <= codes(plan)
    # An operator adopts: the next pass synchronises the definition to the manifest.
    client.actions.adopt("legacy", "billing")
    billing.runtime.publish()
    billing.runtime.reconcile()
    assert row(conn, "legacy")["cron_expr"] == "0 * * * *"
    assert owner_plan(billing, "billing").blockers == []
    billing.close()


def test_non_authoritative_runtimes_stay_additive(dsn, conn):
    labelled = Client(dsn, owner="billing", operator="tester@test")
    labelled.periodic("plain", "0 * * * *", "test.job")
    labelled.sync()
    published = labelled.runtime.publish()
    assert published["manifest_hash"] is None
    assert owned(conn) == {"plain": (None, False)}
    snap = conn.execute("SELECT authoritative, manifest, manifest_hash, protocol_version "
                        "FROM awa.runtime_instances").fetchone()
    assert snap == {"authoritative": False, "manifest": None, "manifest_hash": None,
                    "protocol_version": PROTOCOL_VERSION}
    labelled.close()


def test_authoritative_runtime_must_name_a_valid_owner(dsn):
    with pytest.raises(ValidationError, match="owner"):
        Client(dsn, authoritative=True)
    with pytest.raises(ValidationError, match="owner"):
        Client(dsn, owner="bad\nname", authoritative=True)


def test_publication_carries_protocol_manifest_and_hash(dsn, conn):
    billing = declare(dsn, "billing", ["b", "a"], grace=timedelta(minutes=3), interval=timedelta(seconds=7))
    billing.sync()
    published = billing.runtime.publish()
    snap = conn.execute("SELECT * FROM awa.runtime_instances").fetchone()
    assert snap["protocol_version"] == PROTOCOL_VERSION
    assert snap["owner"] == "billing" and snap["authoritative"]
    assert sorted(snap["manifest"]) == ["a", "b"]
    assert snap["manifest"]["a"]["cron_expr"] == "0 * * * *"
    assert snap["manifest_hash"] == published["manifest_hash"] == billing.runtime.manifest.hash
    assert snap["retire_grace"] == timedelta(minutes=3)
    assert snap["snapshot_interval"] == timedelta(seconds=7)
    billing.close()


def test_manifest_hash_is_canonical():
    one = Client("", owner="o", authoritative=True)
    one.periodic("x", "0 * * * *", "k", {"b": 1, "a": [1, 2]})
    one.periodic("y", "@daily", "k")
    two = Client("", owner="o", authoritative=True)
    two.periodic("y", "@daily", "k")
    two.periodic("x", "0 * * * *", "k", {"a": [1, 2], "b": 1})
    assert one.runtime.manifest.hash == two.runtime.manifest.hash
    three = Client("", owner="o", authoritative=True)
    three.periodic("x", "0 * * * *", "k", {"a": [2, 1], "b": 1})
    three.periodic("y", "@daily", "k")
    assert three.runtime.manifest.hash != one.runtime.manifest.hash


def test_explicit_empty_manifest_is_published(dsn, conn):
    empty = declare(dsn, "billing", [])
    empty.sync()
    published = empty.runtime.publish()
    assert published["manifest_hash"] == build_manifest("billing", []).hash
    snap = conn.execute("SELECT manifest, manifest_hash FROM awa.runtime_instances").fetchone()
    assert snap == {"manifest": {}, "manifest_hash": published["manifest_hash"]}
    assert owner_plan(empty, "billing").fresh_declarations == 1
    empty.close()


def test_clean_close_ends_the_declaration_at_once_and_a_dead_runtime_goes_stale(dsn, conn):
    closing = declare(dsn, "billing", ["invoice"])
    closing.sync()
    closing.runtime.publish()
    dying = declare(dsn, "billing", ["invoice"])
    dying.runtime.publish()
    assert owner_plan(closing, "billing").fresh_declarations == 2
    closing.close()
    observer = Client(dsn, read_only=True)
    assert owner_plan(observer, "billing").fresh_declarations == 1
    # The dying runtime never closes: it stays fresh until its window passes.
    dying.db.close_all()
    later = conn.execute("SELECT now() + interval '31 seconds' AS t").fetchone()["t"]
    assert owner_plan(observer, "billing", now=later).fresh_declarations == 0
    observer.close()


def test_runtime_start_and_close_publish_and_end_the_declaration(dsn, conn):
    billing = declare(dsn, "billing", ["invoice"])
    billing.start(run_worker=False, lead=False)
    snap = conn.execute("SELECT manifest_hash, stopped_at FROM awa.runtime_instances").fetchone()
    assert snap == {"manifest_hash": billing.runtime.manifest.hash, "stopped_at": None}
    billing.close()
    assert conn.execute("SELECT stopped_at FROM awa.runtime_instances").fetchone()["stopped_at"] is not None


def test_publication_waits_for_the_protocol_lock(dsn, conn):
    """S24/S32: snapshot and declaration are written in one transaction under the lock."""
    billing = declare(dsn, "billing", ["invoice"])
    billing.sync()
    holder = psycopg.connect(dsn, autocommit=True, row_factory=dict_row)
    holder.execute("BEGIN")
    holder.execute("SELECT pg_advisory_xact_lock(%s)", (PROTOCOL_LOCK_KEY,))
    thread = threading.Thread(target=billing.runtime.publish)
    thread.start()
    wait_for(lambda: conn.execute(
        "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
    ).fetchone()["n"] == 1, what="publication to wait on the protocol lock")
    assert conn.execute("SELECT count(*) AS n FROM awa.runtime_instances").fetchone()["n"] == 0
    holder.execute("COMMIT")
    thread.join(10)
    holder.close()
    assert conn.execute("SELECT count(*) AS n FROM awa.runtime_instances").fetchone()["n"] == 1
    billing.close()


def test_re_registering_a_retired_name_starts_but_stays_inert_until_restored(dsn, conn, client):
    """S30."""
    billing = declare(dsn, "billing", ["invoice"])
    billing.sync()
    client.actions.retire("invoice")
    billing.close()
    again = declare(dsn, "billing", ["invoice"])
    again.start(run_worker=False, lead=False)  # startup succeeds
    again.runtime.reconcile()
    assert row(conn, "invoice")["retired_at"] is not None
    plan = owner_plan(again, "billing")
    message = "schedule 'invoice' is desired by 'billing' but retired; an operator must restore it"
    assert plan.conflicts == [{"name": "invoice", "kind": "retired", "owner": "billing", "message": message}]
    assert plan.blockers == [{"code": "retired_desired", "message": message, "blocks": ["updates", "retirements"],
                              "name": "invoice", "kind": "retired", "owner": "billing"}]
    client.actions.restore("invoice")
    after = owner_plan(again, "billing")
    assert (after.conflicts, after.blockers) == ([], [])
    again.close()
