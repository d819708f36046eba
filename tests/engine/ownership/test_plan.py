"""S34: plans are previews from one REPEATABLE READ snapshot, without the protocol lock."""

from __future__ import annotations

import dataclasses
import json
import uuid
from datetime import timedelta

import psycopg
import pytest
from psycopg.rows import dict_row
from reconcile_helpers import codes, db_now, declare, owner_plan, result_for, retired_names

from awa_tui import Client, NotFound
from awa_tui.engine.core.db import PROTOCOL_LOCK_KEY
from awa_tui.engine.ownership import reconcile
from awa_tui.engine.read.models import OwnerCounts


def _table_state(conn):
    out = {}
    for table in ("cron_jobs", "owners", "runtime_instances", "audit_log", "jobs"):
        rows = conn.execute(f"SELECT to_jsonb(t) AS r FROM awa.{table} t ORDER BY 1::text").fetchall()
        out[table] = sorted(json.dumps(r["r"], sort_keys=True) for r in rows)
    return out


def _scenario(dsn):
    _old = declare(dsn, "billing", ["invoice", "dunning"])
    _old.sync()
    _old.close()
    new = declare(dsn, "billing", ["invoice"], grace=timedelta(0))
    new.runtime.publish()
    return new


def test_plan_changes_nothing(dsn, conn):
    new = _scenario(dsn)
    before = _table_state(conn)
    viewer = Client(dsn, read_only=True)
    plan = owner_plan(viewer, "billing")
    assert plan.retirements == ["dunning"] and plan.will_retire
    viewer.reads.list_owners()
    assert _table_state(conn) == before
    viewer.close()
    new.close()


def test_plan_during_a_concurrent_reconcile_is_consistent_and_takes_no_protocol_lock(dsn, conn):
    new = _scenario(dsn)
    leader = Client(dsn, operator="tester@test")
    # The planner opens its snapshot first and plans...
    planner = psycopg.connect(dsn, autocommit=True, row_factory=dict_row)
    planner.execute("SET lock_timeout = '200ms'")  # would fail fast if it tried to lock
    planner.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    first = reconcile.compute_plans(planner, "billing")
    held = planner.execute(
        "SELECT count(*) AS n FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory'"
    ).fetchone()["n"]
    assert held == 0
    # ...the leader reconciles and commits while the plan's snapshot is still open: it is
    # not blocked by the plan, and the plan does not see its effect...
    assert result_for(leader.runtime.reconcile(), "billing")["retired"] == ["dunning"]
    assert retired_names(conn) == {"dunning"}
    second = reconcile.compute_plans(planner, "billing")
    strip = [{k: v for k, v in p.items() if k != "now"} for p in (first[0], second[0])]
    assert strip[0] == strip[1]
    planner.execute("COMMIT")
    # ...and a new plan does.
    after = reconcile.plan(planner, "billing")[0]
    assert after["retirements"] == [] and after["schedules"] == {"active": 1, "retired": 1}
    planner.close()
    leader.close()
    new.close()


def test_plan_is_not_blocked_by_a_holder_of_the_protocol_lock(dsn, conn):
    new = _scenario(dsn)
    holder = psycopg.connect(dsn, autocommit=True)
    holder.execute("BEGIN")
    holder.execute("SELECT pg_advisory_xact_lock(%s)", (PROTOCOL_LOCK_KEY,))
    viewer = Client(dsn, read_only=True)
    with viewer.db.connection() as c:
        c.execute("SET lock_timeout = '200ms'")
    assert owner_plan(viewer, "billing").retirements == ["dunning"]
    assert viewer.reads.list_owners()[0].owner == "billing"
    holder.execute("ROLLBACK")
    holder.close()
    viewer.close()
    new.close()


def test_plan_reports_every_blocking_reason(dsn, conn):
    t0 = db_now(conn)
    observer = Client(dsn, read_only=True, operator="tester@test")
    setup = Client(dsn, operator="tester@test")
    # no fresh declaration
    gone = declare(dsn, "gone", ["g1"])
    gone.sync()
    # mixed manifests
    mixed_a, mixed_b = declare(dsn, "mixed", ["m1"]), declare(dsn, "mixed", ["m1", "m2"])
    for c in (mixed_a, mixed_b):
        c.sync()
        c.runtime.publish(now=t0)
    # conflicts: unowned, foreign, retired desired
    setup.periodic("loose", "0 * * * *", "test.job")
    setup.sync()
    foreign = declare(dsn, "other", ["theirs"])
    foreign.sync()
    conflicted = declare(dsn, "conflicted", ["c1", "tomb"])
    conflicted.sync()
    setup.actions.retire("tomb")
    conflicted.periodic("loose", "0 * * * *", "test.job")
    conflicted.periodic("theirs", "0 * * * *", "test.job")
    conflicted.runtime.publish(now=t0)
    # grace remaining and an incapable runtime
    slow_old = declare(dsn, "slow", ["s1", "s2"])
    slow_old.sync()
    slow = declare(dsn, "slow", ["s1"], grace=timedelta(minutes=10))
    slow.runtime.publish(now=t0)
    plans = {p.owner: p for p in observer.reads.plan(now=t0 + timedelta(seconds=1))}
    assert codes(plans["gone"]) == {"no_fresh_declaration"}
    assert codes(plans["mixed"]) == {"mixed_manifests"}
    assert codes(plans["conflicted"]) == {"conflict", "retired_desired"}
    assert {(c["name"], c["kind"], c["owner"]) for c in plans["conflicted"].conflicts} == {
        ("loose", "unowned", None), ("theirs", "foreign", "other"), ("tomb", "retired", "conflicted")}
    grace = next(b for b in plans["slow"].blockers if b["code"] == "grace_remaining")
    assert grace["seconds_left"] == pytest.approx(599, abs=1) and grace["blocks"] == ["retirements"]
    assert plans["slow"].retirements == ["s2"] and not plans["slow"].will_retire
    # An older binary's fresh snapshot blocks retirement for everyone.
    conn.execute(
        "INSERT INTO awa.runtime_instances (instance_id, hostname, pid, version, started_at, last_seen_at) "
        "VALUES (%s, 'old', 7, '0.6.7', %s, %s)", (uuid.uuid4(), t0, t0))
    plans = {p.owner: p for p in observer.reads.plan(now=t0 + timedelta(seconds=1))}
    assert all("incapable_runtime" in codes(p) for p in plans.values())
    for blocker in plans["slow"].blockers:
        assert blocker["message"] and "\n" not in blocker["message"]
    with pytest.raises(NotFound, match="unknown owner 'nobody'"):
        observer.reads.plan("nobody")
    for c in (gone, mixed_a, mixed_b, foreign, conflicted, slow_old, slow, setup, observer):
        c.close()


def test_list_owners_summarises_each_owner(dsn, conn):
    t0 = db_now(conn)
    old = declare(dsn, "billing", ["invoice", "dunning", "ledger"])
    old.sync()
    new = declare(dsn, "billing", ["invoice", "dunning"], grace=timedelta(minutes=5))
    new.runtime.publish(now=t0)
    leader = Client(dsn, operator="tester@test")
    leader.runtime.reconcile(now=t0)
    leader.actions.retire("dunning")
    (summary,) = leader.reads.list_owners(now=t0 + timedelta(seconds=10))
    assert summary.owner == "billing"
    assert summary.fresh_runtimes == 1
    assert summary.manifest_hashes == [new.runtime.manifest.hash]
    assert summary.certificate_hash is None  # the retire voided it
    assert (summary.schedules_owned, summary.schedules_retired) == (2, 1)
    assert summary.grace_required_s == 300
    assert summary.agreement_since is None  # a retired desired name stops the clock
    assert {b["code"] for b in summary.blockers} == {"retired_desired"}
    assert summary.pending == OwnerCounts(inserts=0, updates=0, retirements=1)
    json.dumps(dataclasses.asdict(summary), default=str)
    for c in (old, new, leader):
        c.close()
