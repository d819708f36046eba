"""S25, S26, S31: definition sync, automatic retirement and its conditions, certificates.

Time is driven explicitly: runtimes publish and the leader reconciles at instants derived
from DB time, never by waiting.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from helpers import wait_for
from reconcile_helpers import codes, db_now, declare, owned, owner_plan, result_for, retired_names, row

from awa_tui import Client
from awa_tui.engine.ownership.agreement import CODE_COUNT_SQL

S = timedelta(seconds=1)


@pytest.fixture
def t0(conn):
    return db_now(conn)


@pytest.fixture
def leader(dsn):
    client = Client(dsn, operator="tester@test")
    yield client
    client.close()


def _seed(dsn, owner, names, **kwargs):
    """A first deploy of `owner` with `names`, synced (the names now exist, owned)."""
    client = declare(dsn, owner, names, **kwargs)
    client.sync()
    return client


def test_explicit_empty_manifest_retires_everything_the_owner_has(dsn, conn, leader, t0):
    _seed(dsn, "billing", ["invoice", "dunning"]).close()
    empty = declare(dsn, "billing", [])
    empty.runtime.publish(now=t0)
    result = result_for(leader.runtime.reconcile(now=t0), "billing")
    assert result["retired"] == ["dunning", "invoice"]
    assert owned(conn) == {"invoice": ("billing", True), "dunning": ("billing", True)}
    assert row(conn, "invoice")["retired_by"] == "awa-reconciler"
    empty.close()


def test_zero_fresh_declarations_never_retire(dsn, conn, leader, t0):
    old = _seed(dsn, "billing", ["invoice"])
    old.runtime.publish(now=t0)
    old.db.close_all()  # dies without a final snapshot
    for minutes in (1, 10, 60 * 24):
        result = result_for(leader.runtime.reconcile(now=t0 + timedelta(minutes=minutes)), "billing")
        assert result["retired"] == []
        assert "no_fresh_declaration" in {b["code"] for b in result["blockers"]}
    assert retired_names(conn) == set()


def test_definitions_sync_at_once_from_a_single_manifest(dsn, conn, leader, t0):
    _seed(dsn, "billing", {"invoice": "0 * * * *"}).close()
    conn.execute("UPDATE awa.cron_jobs SET next_fire_at = now() + interval '1 hour'")
    new = declare(dsn, "billing", {"invoice": "*/15 * * * *"}, grace=timedelta(days=1))
    new.runtime.publish(now=t0)
    plan = owner_plan(leader, "billing", now=t0)
    assert plan.will_update
    assert plan.updates == [{"name": "invoice",
                                "changes": {"cron_expr": {"from": "0 * * * *", "to": "*/15 * * * *"}}}]
    result = result_for(leader.runtime.reconcile(now=t0), "billing")  # no grace needed for definitions
    assert result["updated"] == ["invoice"] and result["certified"]
    synced = row(conn, "invoice")
    assert synced["cron_expr"] == "*/15 * * * *" and synced["next_fire_at"] is None
    audit = leader.reads.list_audit("invoice")[0]
    assert (audit.action, audit.operator) == ("sync_definition", "awa-reconciler")
    new.close()


def test_mixed_manifests_neither_retire_nor_overwrite(dsn, conn, leader, t0):
    _seed(dsn, "billing", {"invoice": "0 * * * *", "dunning": "0 * * * *"}).close()
    old = declare(dsn, "billing", {"invoice": "0 * * * *", "dunning": "0 * * * *"})
    new = declare(dsn, "billing", {"invoice": "*/5 * * * *"})  # drops dunning, redefines invoice
    for step in range(0, 120, 10):  # a long rolling deploy, both halves publishing
        at = t0 + step * S
        old.runtime.publish(now=at)
        new.runtime.publish(now=at)
        result = result_for(leader.runtime.reconcile(now=at), "billing")
        assert result["updated"] == [] and result["retired"] == []
        mixed = next(b for b in result["blockers"] if b["code"] == "mixed_manifests")
        # The names the two deploys disagree on: dunning (dropped) and invoice (redefined).
        assert "; they differ on 'dunning', 'invoice'; waiting for one" in mixed["message"]
    assert row(conn, "invoice")["cron_expr"] == "0 * * * *"
    assert retired_names(conn) == set()
    # The old half stops cleanly: the new manifest is the only one; sync and retire follow.
    old.close()
    at = t0 + 130 * S
    new.runtime.publish(now=at)
    result = result_for(leader.runtime.reconcile(now=at), "billing")
    assert result["updated"] == ["invoice"] and result["retired"] == ["dunning"]
    new.close()


def test_an_incapable_fresh_runtime_blocks_retirement_for_all_owners(dsn, conn, leader, t0):
    billing = _seed(dsn, "billing", ["invoice", "dunning"])
    payments = _seed(dsn, "payments", ["refund", "payout"])
    billing.close()
    payments.close()
    conn.execute(  # an older binary's snapshot: it knows no protocol (version 0)
        "INSERT INTO awa.runtime_instances (instance_id, hostname, pid, version, started_at, last_seen_at) "
        "VALUES (%s, 'old-host', 42, '0.6.7', %s, %s)", (uuid.uuid4(), t0, t0))
    new_billing = declare(dsn, "billing", ["invoice"])
    new_payments = declare(dsn, "payments", ["refund"])
    for step in (0, 10, 20):
        new_billing.runtime.publish(now=t0 + step * S)
        new_payments.runtime.publish(now=t0 + step * S)
        results = leader.runtime.reconcile(now=t0 + step * S)
        for owner in ("billing", "payments"):
            assert result_for(results, owner)["retired"] == []
            assert "incapable_runtime" in {b["code"] for b in result_for(results, owner)["blockers"]}
    assert retired_names(conn) == set()
    # Once the old runtime is stale (30 s window), both owners retire.
    at = t0 + 31 * S
    new_billing.runtime.publish(now=at)
    new_payments.runtime.publish(now=at)
    results = leader.runtime.reconcile(now=at)
    assert result_for(results, "billing")["retired"] == ["dunning"]
    assert result_for(results, "payments")["retired"] == ["payout"]
    new_billing.close()
    new_payments.close()


@pytest.mark.parametrize(("interval_s", "window_s"), [(5, 30), (10, 30), (20, 60)])
def test_freshness_window_is_max_30s_and_3_intervals_in_db_time(dsn, conn, interval_s, window_s):
    runtime = declare(dsn, "billing", ["invoice"], interval=timedelta(seconds=interval_s))
    runtime.sync()
    runtime.runtime.publish()
    observer = Client(dsn, read_only=True)
    # Age the snapshot in DB time and look with DB time (now=None).
    for age, fresh in ((window_s - 1, 1), (window_s + 1, 0)):
        conn.execute("UPDATE awa.runtime_instances SET last_seen_at = now() - %s", (timedelta(seconds=age),))
        assert owner_plan(observer, "billing").fresh_declarations == fresh, age
    observer.close()
    runtime.db.close_all()


def test_grace_is_honoured_and_reset_by_a_missed_evidence_window(dsn, conn, leader, t0):
    _seed(dsn, "billing", ["invoice", "dunning"]).close()
    new = declare(dsn, "billing", ["invoice"], grace=timedelta(minutes=5), interval=timedelta(seconds=10))

    def beat(seconds):
        at = t0 + seconds * S
        new.runtime.publish(now=at)
        return result_for(leader.runtime.reconcile(now=at), "billing")

    for second in range(0, 290, 20):  # evidence every 20 s (window 30 s): the clock runs
        result = beat(second)
        assert result["retired"] == [] and result["agreement_since"] == t0
    plan = owner_plan(leader, "billing", now=t0 + 280 * S)
    grace = next(b for b in plan.blockers if b["code"] == "grace_remaining")
    assert grace["seconds_left"] == pytest.approx(20)
    # Silence for 40 s (> the 30 s window): the next evidence restarts the clock.
    result = beat(320)
    assert result["agreement_since"] == t0 + 320 * S and result["retired"] == []
    for second in range(340, 620, 20):
        assert beat(second)["retired"] == []
    assert beat(620)["retired"] == ["dunning"]  # 300 s after the restart
    new.close()


def test_conflicts_are_checked_before_agreement_so_alternating_passes_cannot_run_the_clock(
    dsn, conn, leader, t0
):
    _seed(dsn, "billing", ["invoice", "dunning"]).close()
    new = declare(dsn, "billing", ["invoice", "legacy"], grace=timedelta(minutes=1))
    new.runtime.publish(now=t0)
    assert result_for(leader.runtime.reconcile(now=t0), "billing")["agreement_since"] == t0
    # A conflict appears (an additive runtime creates 'legacy' unowned... after it was
    # removed), between publications and passes that alternate every 10 s.
    leader.actions.remove("legacy")
    additive = Client(dsn, operator="tester@test")
    additive.periodic("legacy", "0 * * * *", "test.job")
    additive.sync()
    for second in range(10, 200, 10):
        at = t0 + second * S
        published = new.runtime.publish(now=at) if second % 20 else None
        result = result_for(leader.runtime.reconcile(now=at), "billing")
        assert result["agreement_since"] is None and result["retired"] == []
        assert published is None or published["agreement_since"] is None
    assert retired_names(conn) == set()
    leader.actions.adopt("legacy", "billing")
    for second in (200, 220, 240, 260):
        new.runtime.publish(now=t0 + second * S)
        result = result_for(leader.runtime.reconcile(now=t0 + second * S), "billing")
    assert result["agreement_since"] == t0 + 200 * S and result["retired"] == ["dunning"]
    additive.close()
    new.close()


def test_longest_grace_of_any_live_declaration_applies(dsn, conn, leader, t0):
    _seed(dsn, "billing", ["invoice", "dunning"]).close()
    short = declare(dsn, "billing", ["invoice"], grace=timedelta(seconds=0))
    long = declare(dsn, "billing", ["invoice"], grace=timedelta(minutes=2))
    for second in range(0, 120, 20):
        short.runtime.publish(now=t0 + second * S)
        long.runtime.publish(now=t0 + second * S)
        assert result_for(leader.runtime.reconcile(now=t0 + second * S), "billing")["retired"] == []
    short.runtime.publish(now=t0 + 120 * S)
    long.runtime.publish(now=t0 + 120 * S)
    assert result_for(leader.runtime.reconcile(now=t0 + 120 * S), "billing")["retired"] == ["dunning"]
    short.close()
    long.close()


def test_transfer_invalidates_exactly_the_two_owners_certificates(dsn, conn, leader, t0):
    clients = {}
    for owner, names in (("a", ["a1", "a2"]), ("b", ["b1"]), ("c", ["c1"])):
        clients[owner] = _seed(dsn, owner, names)
        clients[owner].runtime.publish(now=t0)
    leader.runtime.reconcile(now=t0)

    def certificates():
        rows = conn.execute("SELECT owner, certificate_hash FROM awa.owners ORDER BY owner").fetchall()
        return {r["owner"]: r["certificate_hash"] for r in rows}

    assert certificates() == {o: c.runtime.manifest.hash for o, c in clients.items()}
    leader.actions.transfer("a2", "b")
    assert certificates() == {"a": None, "b": None, "c": clients["c"].runtime.manifest.hash}
    audit = leader.reads.list_audit("a2")[0]
    assert audit.action == "transfer" and audit.detail == {"from_owner": "a", "to_owner": "b"}
    for client in clients.values():
        client.close()


def test_certified_owner_reconciles_from_the_certificate(dsn, conn, leader, t0):
    billing = _seed(dsn, "billing", ["invoice"])
    billing.runtime.publish(now=t0)
    leader.runtime.reconcile(now=t0)
    plan = owner_plan(leader, "billing", now=t0)
    assert plan.certificate.current and plan.blockers == []
    assert (plan.inserts, plan.updates, plan.retirements) == ([], [], [])
    # A row deleted behind the engine's back is noticed (the count no longer matches) and
    # the missing name is inserted again by the next pass.
    conn.execute("DELETE FROM awa.cron_jobs WHERE name = 'invoice'")
    billing.runtime.publish(now=t0 + 5 * S)
    assert result_for(leader.runtime.reconcile(now=t0 + 5 * S), "billing")["inserted"] == ["invoice"]
    billing.close()


def test_the_certificate_counts_the_owners_code_schedules_alone_from_their_own_index(dsn, conn, leader, t0):
    """An owner holding schedules made at run time besides its declared ones: making and
    deleting those leaves the certificate current (it counts the declared ones), a declared
    row deleted by hand is still noticed, and the count reads the declared rows alone."""
    billing = _seed(dsn, "billing", ["invoice", "dunning"])
    billing.runtime.publish(now=t0)
    leader.runtime.reconcile(now=t0)
    for i in range(3):
        leader.create_schedule(f"tenant-{i}", "0 8 * * 1", "report.build", owner="billing")
    leader.delete_schedule("tenant-0", owner="billing")
    billing.runtime.publish(now=t0 + 5 * S)
    assert result_for(leader.runtime.reconcile(now=t0 + 5 * S), "billing")["certified"]
    plan = owner_plan(leader, "billing", now=t0 + 5 * S)
    assert (plan.certificate.current, plan.certificate.size, plan.inserts) == (True, 2, [])
    assert (plan.schedules.active, plan.schedules.retired) == (4, 0)  # the plan counts every origin
    conn.execute("SET enable_seqscan = off")  # a table this small would be read whole
    shown = conn.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) " + CODE_COUNT_SQL,
                         {"owner": "billing"}).fetchone()["QUERY PLAN"][0]["Plan"]["Plans"][0]
    conn.execute("RESET enable_seqscan")
    assert (shown["Node Type"], shown["Index Name"], shown["Actual Rows"]) == (
        "Index Only Scan", "cron_jobs_owner_code_idx", 2), shown
    conn.execute("DELETE FROM awa.cron_jobs WHERE name = 'dunning'")
    billing.runtime.publish(now=t0 + 10 * S)
    assert result_for(leader.runtime.reconcile(now=t0 + 10 * S), "billing")["inserted"] == ["dunning"]
    billing.close()


def test_retire_owner_needs_no_live_runtime_and_restore_owner_brings_all_back(dsn, conn, leader):
    _seed(dsn, "billing", ["invoice", "dunning"]).close()
    leader.periodic("other", "0 * * * *", "test.job")
    leader.sync()
    result = leader.actions.retire_owner("billing")
    assert result.names == ["dunning", "invoice"] and result.count == 2
    assert retired_names(conn) == {"dunning", "invoice"}
    assert leader.reads.list_audit("owner:billing")[0].action == "retire_owner"
    restored = leader.actions.restore_owner("billing")
    assert restored.names == ["dunning", "invoice"]
    assert retired_names(conn) == set()


def test_reconcile_and_plan_agree(dsn, conn, leader, t0):
    _seed(dsn, "billing", {"invoice": "0 * * * *", "old": "0 * * * *"}).close()
    new = declare(dsn, "billing", {"invoice": "*/2 * * * *", "fresh": "0 * * * *"})
    new.runtime.publish(now=t0)
    plan = owner_plan(leader, "billing", now=t0)
    assert (plan.will_insert, plan.will_update, plan.will_retire) == (True, True, True)
    result = result_for(leader.runtime.reconcile(now=t0), "billing")
    assert result["inserted"] == [i["name"] for i in plan.inserts] == ["fresh"]
    assert result["updated"] == [u["name"] for u in plan.updates] == ["invoice"]
    assert result["retired"] == plan.retirements == ["old"]
    assert "blockers" in result and codes(owner_plan(leader, "billing", now=t0)) == set()
    new.close()


def test_a_running_authoritative_leader_reconciles_on_its_own(dsn, conn):
    _seed(dsn, "billing", {"invoice": "0 * * * *", "dunning": "0 * * * *"}).close()
    runtime = declare(dsn, "billing", {"invoice": "*/5 * * * *"}, grace=timedelta(0))
    runtime.start(run_worker=False)
    wait_for(lambda: retired_names(conn) == {"dunning"}, timeout=15, what="the leader to retire dunning")
    assert row(conn, "invoice")["cron_expr"] == "*/5 * * * *"
    runtime.close()
    assert conn.execute("SELECT stopped_at FROM awa.runtime_instances").fetchone()["stopped_at"] is not None


def test_an_operator_restore_gets_a_full_grace_before_the_manifest_retires_it_again(dsn, conn, leader, t0):
    _seed(dsn, "billing", ["invoice", "dunning"]).close()
    new = declare(dsn, "billing", ["invoice"], grace=timedelta(minutes=5), interval=timedelta(seconds=10))

    def beat(seconds):
        at = t0 + seconds * S
        new.runtime.publish(now=at)
        return result_for(leader.runtime.reconcile(now=at), "billing")

    for second in range(0, 300, 20):
        assert beat(second)["retired"] == []
    assert beat(300)["retired"] == ["dunning"]
    leader.actions.restore("dunning", now=t0 + 310 * S)
    # The restore touched billing: its agreement clock restarts at the next evidence.
    result = beat(320)
    assert result["retired"] == [] and result["agreement_since"] == t0 + 320 * S
    for second in range(340, 620, 20):
        assert beat(second)["retired"] == []
    assert beat(620)["retired"] == ["dunning"]
    new.close()
