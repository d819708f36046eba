"""Bulk actions (engine/actions/bulk.py) on a real Postgres: exact done/skipped results, one audit
row per schedule, batch boundaries, a concurrent single pause, adopt of what an owner
declares, dry runs that write nothing, and one-line refusals."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest
from bulk_helpers import NOW, audit_rows, footprint, row_states
from engine_helpers import force
from helpers import wait_for
from psycopg.rows import dict_row
from reconcile_helpers import declare

from awa_tui import Client, Conflict, NotFound, ReadOnly, ValidationError
from awa_tui.engine.actions import ops
from awa_tui.engine.actions.bulk import BulkResult, Skipped
from awa_tui.filters import parse


def test_pause_by_names_reports_skips_and_audits_each_schedule(fleet: Client, conn: Any) -> None:
    result = fleet.actions.bulk("pause", ["tick", "billing-report", "ghost", "tock", "tick"], operator="bob@ops")
    assert result == BulkResult(
        "pause", ("tick", "tock"),
        (Skipped("billing-report", "already paused (by alice@ops)"), Skipped("ghost", "unknown schedule")),
        dry_run=False, batches=1,
    )
    assert (result.selected, len(result.done), len(result.skipped)) == (4, 2, 2)
    assert {n: s[0] for n, s in row_states(conn).items()} == {
        "100%_off": None, "bad-zone": None, "billing-report": "alice@ops", "nightly-billing": None,
        "sync-users": None, "tick": "bob@ops", "tock": "bob@ops"}
    assert audit_rows(conn, "bob@ops") == [("pause", "tick"), ("pause", "tock")]


def test_resume_by_filter(fleet: Client, conn: Any) -> None:
    fleet.actions.pause("tick", operator="alice@ops")
    result = fleet.actions.bulk("resume", where=parse("queue:q1"), operator="bob@ops", now=NOW)
    assert (result.done, result.skipped) == (("tick",), (
        Skipped("bad-zone", "not paused"), Skipped("sync-users", "not paused"), Skipped("tock", "not paused")))
    assert audit_rows(conn, "bob@ops") == [("resume", "tick")]
    assert row_states(conn)["tick"][0] is None


def test_trigger_writes_one_job_and_one_event_per_schedule(fleet: Client, conn: Any) -> None:
    result = fleet.actions.bulk("trigger", ["tick", "sync-users", "billing-report"], operator="bob@ops")
    assert (result.done, result.skipped) == (
        ("billing-report", "tick"), (Skipped("sync-users", "retired; restore it before triggering"),))
    jobs = conn.execute("SELECT id, metadata ->> 'cron_name' AS name, metadata ->> 'triggered_by' AS by, kind "
                        "FROM awa.jobs ORDER BY name").fetchall()
    assert [(j["name"], j["by"], j["kind"]) for j in jobs] == [
        ("billing-report", "bob@ops", "report.run"), ("tick", "bob@ops", "tick")]
    assert result.job_ids == {j["name"]: j["id"] for j in jobs}
    events = conn.execute(
        "SELECT target, after FROM awa.audit_log WHERE operator = 'bob@ops' ORDER BY target").fetchall()
    assert [(e["target"], e["after"]) for e in events] == [
        ("billing-report", {"job_id": result.job_ids["billing-report"]}), ("tick", {"job_id": result.job_ids["tick"]})]


def test_retire_and_restore_void_exactly_the_owners_touched(fleet: Client, conn: Any) -> None:
    force(conn, "INSERT INTO awa.owners (owner, certificate_hash, certificate_size) VALUES "
                "('billing', 'h1', 2), ('payments', 'h2', 1)")
    retired = fleet.actions.bulk("retire", where=parse("owner:billing"), operator="bob@ops", now=NOW)
    assert (retired.done, retired.skipped) == (("billing-report", "nightly-billing"), ())
    certs = conn.execute("SELECT owner, certificate_hash FROM awa.owners ORDER BY owner").fetchall()
    assert [(c["owner"], c["certificate_hash"]) for c in certs] == [("billing", None), ("payments", "h2")]
    again = fleet.actions.bulk("retire", ["nightly-billing", "sync-users"], operator="bob@ops", now=NOW)
    assert (again.done, again.skipped) == ((), (
        Skipped("nightly-billing", "already retired (by bob@ops)"),
        Skipped("sync-users", "already retired (by carol@ops)")))
    restored = fleet.actions.bulk("restore", ["nightly-billing", "sync-users", "tick"], operator="dave@ops")
    assert (restored.done, restored.skipped) == (("nightly-billing", "sync-users"), (Skipped("tick", "not retired"),))
    after = row_states(conn)
    assert (after["nightly-billing"], after["sync-users"], after["billing-report"]) == (
        (None, None, "billing"), (None, None, None), ("alice@ops", "bob@ops", "billing"))
    assert audit_rows(conn, "bob@ops") == [("retire", "billing-report"), ("retire", "nightly-billing")]
    assert audit_rows(conn, "dave@ops") == [("restore", "nightly-billing"), ("restore", "sync-users")]


def test_adopt_a_filter_selection(fleet: Client, conn: Any) -> None:
    result = fleet.actions.bulk("adopt", where=parse("unowned -retired"), owner="ops", operator="bob@ops")
    assert (result.owner, result.done, result.skipped) == ("ops", ("bad-zone", "tick", "tock"), ())
    refused = fleet.actions.bulk("adopt", ["tick", "nightly-billing"], owner="ops", operator="bob@ops")
    assert (refused.done, refused.skipped) == ((), (
        Skipped("nightly-billing", "owned by 'billing'; use transfer to move it to 'ops'"),
        Skipped("tick", "already owned by 'ops'")))
    assert {n: s[2] for n, s in row_states(conn).items()} == {
        "100%_off": "payments", "bad-zone": "ops", "billing-report": "billing", "nightly-billing": "billing",
        "sync-users": None, "tick": "ops", "tock": "ops"}
    assert audit_rows(conn, "bob@ops") == [("adopt", "bad-zone"), ("adopt", "tick"), ("adopt", "tock")]


def test_1201_names_go_in_three_batches_of_at_most_500(client: Client, conn: Any) -> None:
    names = [f"s{i:04d}" for i in range(1201)]
    for name in names:
        client.periodic(name, "0 * * * *", "k")
    client.sync()
    result = client.actions.bulk("pause", names, operator="bob@ops", batch_size=500)
    assert (result.batches, result.done, result.skipped) == (3, tuple(names), ())
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs WHERE paused_by = 'bob@ops'").fetchone()["n"] == 1201
    # One audit row per schedule, stamped with its batch; each batch is one transaction
    # (now() is the transaction's start: one instant per batch).
    rows = conn.execute(
        "SELECT (detail ->> 'batch')::int AS batch, count(*) AS n, count(DISTINCT at) AS instants, "
        "min(target) AS first, max(target) AS last FROM awa.audit_log WHERE action = 'pause' "
        "GROUP BY 1 ORDER BY 1").fetchall()
    assert [tuple(r.values()) for r in rows] == [
        (1, 500, 1, "s0000", "s0499"), (2, 500, 1, "s0500", "s0999"), (3, 201, 1, "s1000", "s1200")]
    assert conn.execute("SELECT count(DISTINCT target) AS n FROM awa.audit_log").fetchone()["n"] == 1201


def test_a_single_pause_committed_during_a_bulk_pause_is_reported_not_failed(
    fleet: Client, dsn: str, conn: Any
) -> None:
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as single:
        outcome: list[BulkResult] = []
        with single.transaction():
            ops.pause(single, "tock", "alice@ops")  # holds tock's row lock until it commits
            worker = threading.Thread(target=lambda: outcome.append(
                fleet.actions.bulk("pause", ["tick", "tock", "100%_off"], operator="bob@ops")))
            worker.start()
            wait_for(lambda: conn.execute(
                "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND application_name = 'awa-tui' AND datname = current_database()").fetchone()["n"] == 1,
                what="the bulk pause to wait for tock's row lock")
        worker.join(timeout=30)
    assert outcome == [BulkResult("pause", ("100%_off", "tick"),
                                  (Skipped("tock", "already paused (by alice@ops)"),), dry_run=False, batches=1)]
    assert audit_rows(conn, "alice@ops") == [("pause", "billing-report"), ("pause", "tock")]
    assert audit_rows(conn, "bob@ops") == [("pause", "100%_off"), ("pause", "tick")]


def _lock_waiters(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                       "AND datname = current_database()").fetchone()
    return int(row["n"])


def test_a_single_pause_waiting_on_a_bulk_pause_is_refused_once_it_is_done(
    fleet: Client, dsn: str, conn: Any
) -> None:
    single_outcome: list[str] = []

    def single_pause() -> None:
        try:
            fleet.actions.pause("tick", operator="alice@ops")
            single_outcome.append("paused")
        except Conflict as exc:
            single_outcome.append(str(exc))

    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as holder:
        bulk_outcome: list[BulkResult] = []
        with holder.transaction():
            # The bulk pause locks 100%_off and tick (name order), then waits for tock.
            holder.execute("SELECT name FROM awa.cron_jobs WHERE name = 'tock' FOR UPDATE")
            bulk = threading.Thread(target=lambda: bulk_outcome.append(
                fleet.actions.bulk("pause", ["tick", "tock", "100%_off"], operator="bob@ops")))
            bulk.start()
            wait_for(lambda: _lock_waiters(conn) == 1, what="the bulk pause to wait for tock")
            single = threading.Thread(target=single_pause)
            single.start()
            wait_for(lambda: _lock_waiters(conn) == 2, what="the single pause to wait for tick")
        bulk.join(timeout=30)
        single.join(timeout=30)
    assert bulk_outcome == [BulkResult("pause", ("100%_off", "tick", "tock"), (), dry_run=False, batches=1)]
    assert single_outcome == ["schedule 'tick' is already paused (by bob@ops)"]
    assert audit_rows(conn, "bob@ops") == [("pause", "100%_off"), ("pause", "tick"), ("pause", "tock")]


def test_adopt_declared_adopts_what_the_owners_manifest_lists(dsn: str, fleet: Client, conn: Any) -> None:
    billing = declare(dsn, "billing", ["tick", "tock", "sync-users", "nightly-billing", "new-one"])
    billing.sync()
    billing.runtime.publish()
    try:
        before = footprint(conn)
        preview = fleet.actions.adopt_declared("billing", dry_run=True, operator="bob@ops")
        assert (preview.dry_run, preview.owner, preview.done, preview.skipped) == (
            True, "billing", ("sync-users", "tick", "tock"), ())
        assert footprint(conn) == before
        done = fleet.actions.adopt_declared("billing", operator="bob@ops")
        assert (done.dry_run, done.done, done.skipped, done.batches) == (
            False, ("sync-users", "tick", "tock"), (), 1)
        owners = {n: s[2] for n, s in row_states(conn).items()}
        assert owners == {
            "100%_off": "payments", "bad-zone": None, "billing-report": "billing", "new-one": "billing",
            "nightly-billing": "billing", "sync-users": "billing", "tick": "billing", "tock": "billing"}
        assert audit_rows(conn, "bob@ops") == [("adopt", "sync-users"), ("adopt", "tick"), ("adopt", "tock")]
        assert fleet.actions.adopt_declared("billing", operator="bob@ops") == BulkResult("adopt", (), (), False, 0,
                                                                                         "billing")
    finally:
        billing.close()
    with pytest.raises(NotFound) as caught:
        fleet.actions.adopt_declared("nobody", operator="bob@ops")
    assert str(caught.value) == (
        "owner 'nobody' has no fresh authoritative declaration: no running runtime declares its manifest")


@pytest.mark.parametrize("verb", ["pause", "resume", "trigger", "retire", "restore", "adopt"])
def test_dry_run_reports_and_writes_nothing(fleet: Client, conn: Any, verb: str) -> None:
    before = footprint(conn)
    owner = "ops" if verb == "adopt" else None
    result = fleet.actions.bulk(verb, where=parse("name:*"), owner=owner, dry_run=True, operator="bob@ops", now=NOW)
    expected_done = {
        "pause": ("100%_off", "bad-zone", "nightly-billing", "sync-users", "tick", "tock"),
        "resume": ("billing-report",),
        "trigger": ("100%_off", "bad-zone", "billing-report", "nightly-billing", "tick", "tock"),
        "retire": ("100%_off", "bad-zone", "billing-report", "nightly-billing", "tick", "tock"),
        "restore": ("sync-users",),
        "adopt": ("bad-zone", "sync-users", "tick", "tock"),
    }[verb]
    assert (result.dry_run, result.done, result.selected) == (True, expected_done, 7)
    assert footprint(conn) == before


def test_a_read_only_client_refuses_but_may_dry_run(dsn: str, fleet: Client, conn: Any) -> None:
    reader = Client(dsn, operator="tester@test", read_only=True)
    try:
        with pytest.raises(ReadOnly) as caught:
            reader.actions.bulk("pause", ["tick"])
        assert str(caught.value) == "bulk pause refused: this client is read-only"
        assert reader.actions.bulk("pause", ["tick"], dry_run=True).done == ("tick",)
        with pytest.raises(ReadOnly):
            reader.actions.adopt_declared("billing")
    finally:
        reader.close()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"action": "delete", "names": ["tick"]},
     "bulk action: expected one of pause, resume, trigger, retire, restore, adopt, got 'delete'"),
    ({"action": "pause", "names": ["tick"], "where": parse("late")},
     "select schedules by names or by a filter, not both"),
    ({"action": "pause", "where": parse("  ")}, "filter: empty; to select every schedule say so: name:*"),
    ({"action": "pause", "names": []}, "nothing selected: give schedule names or a filter"),
    ({"action": "pause", "names": ["tick", ""]}, "schedule name: a non-empty string is required, got ''"),
    ({"action": "pause", "names": ["tick"], "owner": "ops"}, "bulk pause: an owner applies only to adopt"),
    ({"action": "adopt", "names": ["tick"]},
     "owner: must be 1..200 characters without control characters, got None"),
    ({"action": "pause", "names": ["tick"], "batch_size": 0}, "batch size: must be 1..10000, got 0"),
    ({"action": "pause", "names": ["tick"], "operator": "bad\nlabel"},
     "operator: a label of 1..200 printable characters is required, got 'bad\\nlabel'"),
])
def test_bad_input_is_refused_in_one_line_before_any_write(
    fleet: Client, conn: Any, kwargs: dict[str, Any], message: str
) -> None:
    before = footprint(conn)
    with pytest.raises(ValidationError) as caught:
        fleet.actions.bulk(kwargs.pop("action"), kwargs.pop("names", None), **kwargs)
    assert str(caught.value) == message
    assert footprint(conn) == before


def test_rows_that_all_refuse_are_reported_not_raised(fleet: Client) -> None:
    result = fleet.actions.bulk("resume", ["tick", "tock"], operator="bob@ops")
    assert result.skipped == (Skipped("tick", "not paused"), Skipped("tock", "not paused"))
