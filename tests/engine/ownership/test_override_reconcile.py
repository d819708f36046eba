"""Issue 16: ownership reconciliation treats an overridden row as still declared: it
neither reports it as drifted nor rewrites the operator's values, and it keeps the
code's side of the override up to date."""

from __future__ import annotations

from datetime import timedelta

import pytest
from reconcile_helpers import db_now, declare, owner_plan, result_for, row

from awa_tui import Client
from awa_tui.engine.actions.overrides import OverrideRequest


@pytest.fixture
def leader(dsn):
    client = Client(dsn, operator="tester@test")
    yield client
    client.close()


def test_an_overridden_owned_row_is_declared_and_survives_reconciliation(dsn, conn, leader):
    t0 = db_now(conn)
    first = declare(dsn, "billing", {"invoice": "0 * * * *"})
    first.sync()
    first.close()
    leader.actions.override("invoice", OverrideRequest(cron="*/5 * * * *", priority=1), operator="alice@ops")
    same = declare(dsn, "billing", {"invoice": "0 * * * *"})
    same.runtime.publish(now=t0)
    plan = owner_plan(leader, "billing", now=t0)
    assert (plan.updates, plan.inserts, plan.conflicts, plan.retirements) == ([], [], [], [])
    result = result_for(leader.runtime.reconcile(now=t0), "billing")
    assert (result["updated"], result["retired"]) == ([], [])
    kept = row(conn, "invoice")
    assert (kept["cron_expr"], kept["priority"], kept["retired_at"]) == ("*/5 * * * *", 1, None)
    assert kept["overridden"] == {"cron_expr": "0 * * * *", "priority": 2}
    same.close()
    # The code changes the overridden expression: only the code's side moves.
    changed = declare(dsn, "billing", {"invoice": "30 * * * *"}, grace=timedelta(days=1))
    changed.runtime.publish(now=t0 + timedelta(seconds=1))
    plan = owner_plan(leader, "billing", now=t0 + timedelta(seconds=1))
    assert plan.updates == [{"name": "invoice", "changes": {"cron_expr": {"from": "0 * * * *", "to": "30 * * * *"}}}]
    result = result_for(leader.runtime.reconcile(now=t0 + timedelta(seconds=1)), "billing")
    assert result["updated"] == ["invoice"]
    synced = row(conn, "invoice")
    assert (synced["cron_expr"], synced["priority"]) == ("*/5 * * * *", 1)
    assert synced["overridden"] == {"cron_expr": "30 * * * *", "priority": 2}
    leader.actions.reset_override("invoice", operator="alice@ops")
    back = row(conn, "invoice")
    assert (back["cron_expr"], back["priority"], back["overridden"]) == ("30 * * * *", 2, None)
    assert owner_plan(leader, "billing", now=t0 + timedelta(seconds=1)).updates == []
    changed.close()


def test_a_manifest_published_before_v010_reads_with_the_defaults(dsn, conn, leader):
    """An older runtime's manifest (no cron_written, no jitter_ms) during a rolling deploy:
    no spurious update of existing rows, and a new schedule is inserted unjittered."""
    t0 = db_now(conn)
    first = declare(dsn, "billing", {"invoice": "0 * * * *"})
    first.sync()
    first.close()
    old = declare(dsn, "billing", {"invoice": "0 * * * *", "dunning": "0 10 * * *"})
    old.runtime.publish(now=t0)
    conn.execute("UPDATE awa.runtime_instances SET manifest = (SELECT jsonb_object_agg(key, value - 'cron_written' "
                 "- 'jitter_ms') FROM jsonb_each(manifest)) WHERE manifest IS NOT NULL")
    assert conn.execute("SELECT count(*) AS n FROM awa.runtime_instances, jsonb_each(manifest) e "
                        "WHERE e.value ? 'jitter_ms'").fetchone() == {"n": 0}
    plan = owner_plan(leader, "billing", now=t0)
    assert (plan.updates, [i["name"] for i in plan.inserts]) == ([], ["dunning"])
    result = result_for(leader.runtime.reconcile(now=t0), "billing")
    assert (result["updated"], result["inserted"]) == ([], ["dunning"])
    added = row(conn, "dunning")
    assert (added["cron_expr"], added["cron_written"], added["jitter_ms"]) == ("0 10 * * *", None, 0)
    old.close()
