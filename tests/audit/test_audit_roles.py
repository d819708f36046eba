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
from awa_tui.engine.operations import grants

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
        assert runtime.write_refusal() == (
            f"role {logins.users['runtime']} lacks UPDATE on awa.cron_jobs, EXECUTE on awa.begin_action")
        with pytest.raises(ReadOnly, match="permission denied"):
            runtime.pause("tick")
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
        assert ops.write_refusal() is None
        ops.pause("nightly")
        job = ops.trigger("nightly")
        ops.queue_pause("mail")
        ops.queue_drain("mail")
        ops.adopt("loose", "billing")
        ops.retire("loose")
        ops.restore("loose")
        ops.remove("nightly")
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
        admin.pause("nightly", operator="seed")
    with Client(logins.dsns["readonly"], operator="ro") as reader:
        assert [s.name for s in reader.list_schedules()] == ["nightly"]
        assert [a.action for a in reader.list_audit()] == ["pause"]
        assert reader.write_refusal() == (f"role {logins.users['readonly']} lacks UPDATE on awa.cron_jobs, "
                                          "INSERT on awa.jobs, EXECUTE on awa.begin_action")
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
        admin.pause("nightly", operator="seed")
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
