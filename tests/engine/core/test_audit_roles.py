"""The least-privilege role layout (`awa-tui db grants`), role by role: what each can do,
what each is refused, and that only the owner can get past the audit trail, by
disabling its trigger."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from audit_helpers import Logins, audit_rows
from helpers import wait_for

from awa_tui import Client, ReadOnly
from awa_tui.engine.actions import grants

AUDIT_TAMPERING = (
    "INSERT INTO awa.audit_log (operator, action, target) VALUES ('forged', 'pause', 'x')",
    "UPDATE awa.audit_log SET operator = 'mallory'",
    "DELETE FROM awa.audit_log",
    "TRUNCATE awa.audit_log",
    "ALTER TABLE awa.audit_log DISABLE TRIGGER audit_log_append_only",
    "ALTER TABLE awa.cron_jobs DISABLE TRIGGER cron_jobs_audit",
)


def _refused(session: psycopg.Connection[Any], statement: str) -> str:
    with pytest.raises(psycopg.errors.InsufficientPrivilege) as caught:
        session.execute(statement)  # type: ignore[arg-type]  # literal test SQL
    return str(caught.value).splitlines()[0]


def test_every_awa_table_has_a_grant_decision(conn: Any) -> None:
    tables = {r["t"] for r in conn.execute(
        "SELECT c.relname AS t FROM pg_class c WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind = 'r'")}
    assert tables == set(grants.WRITES)


def test_runtime_can_sync_and_fire_but_not_pause_nor_touch_the_audit(logins: Logins, conn: Any) -> None:
    with Client(logins.dsns["runtime"], operator="rt") as runtime:
        runtime.periodic("tick", "* * * * *", "test.job")
        assert runtime.sync() == {"inserted": 1, "updated": 0}
        now = datetime(2025, 1, 1, 0, 0, 30, tzinfo=UTC)
        conn.execute("UPDATE awa.cron_jobs SET created_at = %s", (now - timedelta(minutes=1),))
        assert [j.fire_time for j in runtime.evaluate(now).jobs] == ["2025-01-01T00:00:00Z"]
        assert runtime.reads.write_refusal() == (
            f"role {logins.users['runtime']} lacks UPDATE on awa.cron_jobs, EXECUTE on awa.begin_action")
        with pytest.raises(ReadOnly, match="permission denied"):
            runtime.actions.pause("tick")
    with logins.connect("runtime") as session:
        assert _refused(session, "UPDATE awa.cron_jobs SET paused_at = now()").startswith(
            "permission denied for table cron_jobs")
        for statement in AUDIT_TAMPERING:
            _refused(session, statement)
        assert _refused(session, "SELECT awa.begin_action('rt', 'pause')").startswith(
            "permission denied for function begin_action")
    assert audit_rows(conn) == []


def test_a_runtime_login_starts_without_ddl_rights_and_fires(logins: Logins, conn: Any) -> None:
    runtime = Client(logins.dsns["runtime"], operator="rt")
    runtime.periodic("every-second", "* * * * * *", "test.job")
    runtime.start(run_worker=False)
    try:
        wait_for(lambda: conn.execute("SELECT count(*) AS n FROM awa.jobs").fetchone()["n"] > 0, timeout=15,
                 what="a fire by the runtime login")
    finally:
        runtime.close()
    assert audit_rows(conn) == []


def test_operator_actions_are_audited_with_its_session_user(logins: Logins, conn: Any) -> None:
    with Client(conn.info.dsn) as admin:
        admin.periodic("nightly", "0 2 * * *", "test.job", queue="mail")
        admin.periodic("loose", "0 3 * * *", "test.job")
        admin.sync()
    user = logins.users["operator"]
    with Client(logins.dsns["operator"], operator="alice@ops", application_name="awa-tui cli") as ops:
        assert ops.reads.write_refusal() is None
        ops.actions.pause("nightly")
        job = ops.actions.trigger("nightly")
        ops.actions.queue_pause("mail")
        ops.actions.queue_drain("mail")
        ops.actions.adopt("loose", "billing")
        ops.actions.retire("loose")
        ops.actions.restore("loose")
        ops.actions.remove("nightly")
    rows = audit_rows(conn)
    assert [(r["action"], r["target"]) for r in rows] == [
        ("pause", "nightly"), ("trigger", "nightly"), ("queue_pause", "queue:mail"), ("queue_drain", "queue:mail"),
        ("adopt", "loose"), ("retire", "loose"), ("restore", "loose"), ("remove", "nightly"),
    ]
    assert {(r["operator"], r["db_user"], r["application_name"]) for r in rows} == {
        ("alice@ops", user, "awa-tui cli")}
    assert rows[1]["after"] == {"job_id": job.id}
    assert rows[3]["detail"] == {"queue": "mail", "cancelled": 1}
    with logins.connect("operator") as session:
        for statement in AUDIT_TAMPERING:
            _refused(session, statement)
        # Through the gate, only row-less events, and only the one declared.
        with pytest.raises(psycopg.errors.InvalidParameterValue), session.transaction():
            session.execute("SELECT awa.begin_action('alice@ops', 'pause')")
            session.execute("SELECT awa.record_event('pause', 'x', NULL, NULL, '{}')")
        # An operator cannot redefine a schedule (that is the runtime's sync) beyond what an
        # override may change (expression, zone, args, queue, priority: issue 16).
        assert _refused(session, "UPDATE awa.cron_jobs SET kind = 'x'").startswith(
            "permission denied for table cron_jobs")
    assert len(audit_rows(conn)) == len(rows)


def test_readonly_reads_everything_and_writes_nothing(logins: Logins, conn: Any) -> None:
    with Client(conn.info.dsn) as admin:
        admin.periodic("nightly", "0 2 * * *", "test.job")
        admin.sync()
        admin.actions.pause("nightly", operator="seed")
    with Client(logins.dsns["readonly"], operator="ro") as reader:
        assert [s.name for s in reader.reads.list_schedules()] == ["nightly"]
        assert [a.action for a in reader.reads.list_audit()] == ["pause"]
        assert reader.reads.write_refusal() == (f"role {logins.users['readonly']} lacks UPDATE on awa.cron_jobs, "
                                          "EXECUTE on awa.begin_action")
    with logins.connect("readonly") as session:
        for table in grants.WRITES:
            session.execute(f"SELECT count(*) FROM awa.{table}")  # type: ignore[arg-type]  # fixed names
        for statement in (*AUDIT_TAMPERING, "UPDATE awa.cron_jobs SET paused_at = NULL",
                          "INSERT INTO awa.jobs (kind) VALUES ('k')", "DELETE FROM awa.runtime_instances",
                          "SELECT awa.begin_action('ro', 'resume')"):
            _refused(session, statement)
    assert len(audit_rows(conn)) == 1


def test_the_owner_is_refused_by_the_append_only_trigger_until_it_disables_it(logins: Logins, conn: Any) -> None:
    with Client(conn.info.dsn) as admin:
        admin.periodic("nightly", "0 2 * * *", "test.job")
        admin.sync()
        admin.actions.pause("nightly", operator="seed")
    with logins.connect("owner") as owner:
        for statement in ("UPDATE awa.audit_log SET operator = 'mallory'", "DELETE FROM awa.audit_log",
                          "TRUNCATE awa.audit_log"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
                owner.execute(statement)  # type: ignore[arg-type]  # literal test SQL
        # What owning a table means: it may disable the trigger, and then nothing stops it.
        with owner.transaction():
            owner.execute("SET ROLE " + logins.layout.owner)
            owner.execute("ALTER TABLE awa.audit_log DISABLE TRIGGER audit_log_append_only")
            assert owner.execute("DELETE FROM awa.audit_log").rowcount == 1
            raise psycopg.Rollback()
    assert [r["action"] for r in audit_rows(conn)] == ["pause"]


def test_applying_the_layout_twice_changes_nothing(logins: Logins, conn: Any, dsn: str) -> None:
    acl = ("SELECT c.relname, c.relacl::text AS acl, c.relowner::regrole::text AS owner, "
           "(SELECT array_agg(a.attname || '=' || a.attacl::text ORDER BY a.attname) FROM pg_attribute a "
           " WHERE a.attrelid = c.oid AND a.attacl IS NOT NULL) AS columns "
           "FROM pg_class c WHERE c.relnamespace = 'awa'::regnamespace ORDER BY c.relname")
    first = conn.execute(acl).fetchall()
    grants.apply_layout(dsn, logins.layout)
    assert conn.execute(acl).fetchall() == first
    assert {r["owner"] for r in first} == {logins.layout.owner}


FORGED_CONTEXTS = (
    "SELECT set_config('awa.operator', 'alice', false)",  # the operator's label, set by hand
    "SELECT set_config('awa.manager', 'billing', false)",  # the owner's reconciliation, set by hand
)
RETIRE = "UPDATE awa.cron_jobs SET retired_at = now(), retired_by = 'alice' WHERE name = 'sec-1'"


def _owned_schedule(conn: Any) -> None:
    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind, owner) VALUES ('sec-1', '* * * * *', 'x', "
                 "'billing')")


@pytest.mark.parametrize("forged", FORGED_CONTEXTS)
def test_a_runtime_cannot_retire_a_schedule_by_setting_a_context(logins: Logins, conn: Any, forged: str) -> None:
    """A login holding only the runtime role sets the operator's or the owner manager's
    setting and retires another team's schedule: refused, the row unchanged."""
    _owned_schedule(conn)
    with logins.connect("runtime") as session:
        session.execute(forged)  # type: ignore[arg-type]  # literal test SQL
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="requires an operator action"):
            session.execute(RETIRE)
        # Nor by writing the capability itself, nor by calling the gate that grants it.
        _refused(session, "INSERT INTO awa.fence_grants VALUES (pg_backend_pid(), pg_current_xact_id(), "
                          "'operator', 'alice')")
        _refused(session, "SELECT awa.fence_grant('operator', 'alice')")
        _refused(session, "SELECT awa.begin_action('alice', 'retire')")
    row = conn.execute("SELECT retired_at, owner FROM awa.cron_jobs WHERE name = 'sec-1'").fetchone()
    assert row == {"retired_at": None, "owner": "billing"}


def test_the_same_retirement_passes_with_a_capability_granted_by_the_schema(logins: Logins, conn: Any) -> None:
    """Negative control: the refused statement is otherwise valid. The runtime's own
    reconciliation capability (for that owner, in that transaction) lets it through, and
    the capability ends with its transaction."""
    _owned_schedule(conn)
    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind, owner) VALUES ('sec-2', '* * * * *', 'x', "
                 "'payroll')")
    with logins.connect("runtime") as session:
        with session.transaction():
            session.execute("SELECT awa.begin_reconcile('payroll')")
            with pytest.raises(psycopg.errors.InsufficientPrivilege), session.transaction():
                session.execute(RETIRE)  # billing's row: another owner's capability does not count
            session.execute("SELECT awa.begin_reconcile('billing')")
            assert session.execute(RETIRE).rowcount == 1
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # the next transaction holds nothing
            session.execute("UPDATE awa.cron_jobs SET retired_at = now() WHERE name = 'sec-2'")


def test_the_old_fence_let_a_forged_context_through(logins: Logins, conn: Any) -> None:
    """Control: with the fence of before (v010) restored, the reproduction retires the row;
    so the refusal above is the new fence's."""
    from importlib import resources

    old = resources.files("awa_tui.engine.migrations").joinpath("v010_spread_and_overrides.sql").read_text()
    start = old.index("CREATE OR REPLACE FUNCTION awa.cron_jobs_fence()")
    conn.execute(old[start:old.index("$$;", start) + 3])  # type: ignore[arg-type]  # our own migration's text
    _owned_schedule(conn)
    with logins.connect("runtime") as session:
        session.execute(FORGED_CONTEXTS[1])  # type: ignore[arg-type]
        assert session.execute(RETIRE).rowcount == 1


def test_every_security_definer_function_is_granted_explicitly_and_never_to_public(logins: Logins,
                                                                                   conn: Any) -> None:
    """From the catalog: each SECURITY DEFINER function of the schema is a trigger (no
    EXECUTE needed) or one the layout decides on; none is executable by PUBLIC, and each
    role holds exactly what the layout grants it."""
    rows = conn.execute(
        "SELECT p.oid::regprocedure::text AS f, p.prorettype = 'trigger'::regtype AS is_trigger, "
        "has_function_privilege('public', p.oid, 'EXECUTE') AS public_may, "
        "coalesce((SELECT array_agg(a.grantee::regrole::text ORDER BY a.grantee::regrole::text) "
        "          FROM aclexplode(p.proacl) a WHERE a.grantee <> p.proowner AND a.grantee <> 0), '{}') AS grantees "
        "FROM pg_proc p WHERE p.pronamespace = 'awa'::regnamespace AND p.prosecdef ORDER BY 1").fetchall()
    assert [r["f"] for r in rows if r["public_may"]] == []
    layout = logins.layout
    decided = {**{f.replace(", ", ","): [layout.operator] for f in grants.OPERATOR_FUNCTIONS},
               **{f.replace(", ", ","): [layout.runtime] for f in grants.RUNTIME_FUNCTIONS},
               **{f.replace(", ", ","): [] for f in grants.INTERNAL_FUNCTIONS}}
    assert {r["f"]: r["grantees"] for r in rows if not r["is_trigger"]} == decided
    assert "awa.prune_cron_jobs_changes(interval)" in decided
    with logins.connect("readonly") as session:
        assert _refused(session, "SELECT awa.prune_cron_jobs_changes('0 s')").startswith(
            "permission denied for function prune_cron_jobs_changes")


def test_s63_alerts_work_under_the_runtime_and_operator_roles(logins: Logins, conn: Any) -> None:
    """The operator adds a sink and silences; the runtime's health pass fills the outbox (its
    trigger) and its deliverer leases, marks and prunes; read-only reads and changes nothing."""
    from awa_tui.engine.alerts.deliver import Deliverer

    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind) VALUES ('tick', '* * * * *', 'k')")
    with Client(logins.dsns["operator"], operator="op") as operator:
        operator.actions.add_alert_sink("bus", "notify", channel="awa_alerts")
    with logins.connect("runtime") as session:
        session.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health) "
                        "VALUES ('tick', now(), 'ok', 'failing'), ('tick', now(), 'failing', 'ok')")
        done = Deliverer().round(session)
        assert [(s.sink, s.alerts, s.delivered) for s in done.sinks] == [("bus", 2, True)]
        assert _refused(session, "DELETE FROM awa.alert_sinks").startswith("permission denied for table alert_sinks")
    with Client(logins.dsns["operator"], operator="op") as operator:
        silenced = operator.actions.silence_alerts("tick", timedelta(hours=1), "maintenance")
        assert silenced.created_by == "op"
    with Client(logins.dsns["readonly"], read_only=True) as reader:
        assert [a.state for a in reader.reads.alerts()] == ["delivered", "delivered"]
        with pytest.raises(ReadOnly):
            reader.actions.add_alert_sink("x", "notify", channel="x")
    assert [r["action"] for r in audit_rows(conn) if r["action"].startswith("alert_")] == [
        "alert_sink_add", "alert_silence"]


def test_s70_s71_fleet_alerts_and_owner_silences_work_under_the_runtime_and_operator_roles(
        logins: Logins, conn: Any) -> None:
    """The runtime records a change of the fleet's health (its trigger writes the outbox),
    takes the deliverer's lease and delivers; the operator silences an owner."""
    import uuid

    from awa_tui.engine.alerts import fleet
    from awa_tui.engine.alerts.deliver import Deliverer

    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind, owner) VALUES ('tick', '* * * * *', 'k', 'ops')")
    with Client(logins.dsns["operator"], operator="op") as operator:
        operator.actions.add_alert_sink("bus", "notify", channel="awa_alerts")
        assert operator.actions.silence_alerts(None, timedelta(hours=1), "deploy", owner="ops").owner == "ops"
    me = uuid.uuid4()
    with logins.connect("runtime") as session:
        # Nobody has ever led and this watcher looked first 20 s ago: past the 10 s grace.
        now = session.execute("SELECT now() AS t").fetchone()["t"]
        _, recorded = fleet.record(session, fleet.FleetThresholds(), me, now, now - timedelta(seconds=20))
        assert recorded is not None and (recorded.from_state, recorded.to_state) == ("ok", "no_leader")
        done = Deliverer().round(session, holder=me)
        assert done.held and [(s.sink, s.alerts, s.delivered) for s in done.sinks] == [("bus", 1, True)]
        assert fleet.let_go(session, me)
    assert [a.fleet for a in Client(logins.dsns["readonly"], read_only=True).reads.alerts()] == [True]


FORGED_LABELS = (
    "SELECT set_config('awa.label', 'reconciler', false)",  # the engine's own label, set by hand
    *FORGED_CONTEXTS,
)
HURRY = ("UPDATE awa.owners SET agreement_since = '2000-01-01T00:00:00Z', agreement_hash = 'forged' "
         "WHERE owner = 'billing'")


def _hurried_rows(conn: Any) -> list[tuple[str, str, str | None]]:
    return [(r["action"], r["target"], (r["after"] or {}).get("agreement_since"))
            for r in audit_rows(conn) if r["action"] == "owner_edit"]


@pytest.mark.parametrize("forged", FORGED_LABELS)
def test_a_hand_edit_of_an_owners_agreement_clock_is_audited_whatever_label_the_session_set(
        logins: Logins, conn: Any, forged: str) -> None:
    """A runtime login sets the engine's label (or the operator's, or a manager's) and moves
    billing's agreement clock back, which would hurry a retirement: the change is in the
    audit trail all the same, since only a capability of the schema skips it."""
    conn.execute("INSERT INTO awa.owners (owner) VALUES ('billing')")
    with logins.connect("runtime") as session:
        session.execute(forged)  # type: ignore[arg-type]  # literal test SQL
        assert session.execute(HURRY).rowcount == 1
    assert _hurried_rows(conn) == [("owner_edit", "owner:billing", "2000-01-01T00:00:00+00:00")]


def test_the_engines_own_agreement_clock_and_certificate_are_not_audited(logins: Logins, conn: Any) -> None:
    """Negative control: the same columns written by the engine's reconciliation (the
    owner's capability, granted by the schema) leave no audit row; another owner's
    capability does not count."""
    conn.execute("INSERT INTO awa.owners (owner) VALUES ('billing')")
    with logins.connect("runtime") as session:
        with session.transaction():
            session.execute("SELECT awa.begin_reconcile('billing')")
            assert session.execute(HURRY).rowcount == 1
        assert _hurried_rows(conn) == []
        with session.transaction():
            session.execute("SELECT awa.begin_reconcile('payroll')")
            session.execute("UPDATE awa.owners SET agreement_since = '2001-01-01T00:00:00Z' WHERE owner = 'billing'")
    assert _hurried_rows(conn) == [("owner_edit", "owner:billing", "2001-01-01T00:00:00+00:00")]


def test_a_declaring_runtime_records_its_agreement_with_no_audit_row(logins: Logins, conn: Any) -> None:
    """The engine's own paths (a publication of an authoritative runtime, then the leader's
    reconciliation, as the runtime role) write the owner row's agreement clock and
    certificate: no owner_edit."""
    def declare(names: list[str]) -> Client:
        client = Client(logins.dsns["runtime"], operator="rt", owner="billing", authoritative=True,
                        retire_grace=timedelta(minutes=5))
        for name in names:
            client.periodic(name, "0 * * * *", "test.job")
        return client

    with declare(["billing.tick", "billing.old"]) as first:
        first.sync()
    with declare(["billing.tick"]) as runtime:  # billing.old waits out the grace: the clock runs
        now = datetime.now(UTC)
        runtime.runtime.publish(now=now)
        (result,) = runtime.runtime.reconcile(now=now)
        assert (result["retired"], result["agreement_since"]) == ([], now)
        row = conn.execute("SELECT agreement_since, certificate_hash FROM awa.owners "
                           "WHERE owner = 'billing'").fetchone()
        assert row is not None and row["agreement_since"] == now and row["certificate_hash"] is not None
    assert _hurried_rows(conn) == []  # nor when its stop ends the clock


def test_the_old_owners_audit_let_a_label_skip_the_trail(logins: Logins, conn: Any) -> None:
    """Control: with v006's owners_audit restored, the forged label's edit goes unrecorded;
    so the audit row above is the new trigger function's."""
    from importlib import resources

    old = resources.files("awa_tui.engine.migrations").joinpath("v006_database_audit.sql").read_text()
    start = old.index("CREATE FUNCTION awa.owners_audit()")
    conn.execute("CREATE OR REPLACE " + old[start + len("CREATE "):old.index("$$;", start) + 3])  # type: ignore[arg-type]
    conn.execute("INSERT INTO awa.owners (owner) VALUES ('billing')")
    with logins.connect("runtime") as session:
        session.execute(FORGED_LABELS[0])  # type: ignore[arg-type]
        assert session.execute(HURRY).rowcount == 1
    assert _hurried_rows(conn) == []
