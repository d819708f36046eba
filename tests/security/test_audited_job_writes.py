"""Security III, "the operator role writes jobs with no audit row" (v035): the operator's and a
team's roles write no job by hand; awa-tui's trigger, backfill, retry, cancel, drain and
prune go through the schema's SECURITY DEFINER functions, each writing its one audit row,
scoped to the role the caller is (a superuser's SET ROLE into a team's role included).
Each refusal has its control on v032, the schema before: the same statements went through
there, with nothing in the trail."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from cli_helpers import awa
from owner_access_helpers import Teams, seed, teams

from awa_tui import Client
from awa_tui.engine import migrations
from awa_tui.engine.actions.overrides import OverrideRequest

# An operator's hand-written writes on awa.jobs (the reproduction): a job of another
# team's kind with a forged `triggered_by`, a cancel, a deletion of history.
HAND_WRITTEN = {
    "insert": "INSERT INTO awa.jobs (kind, args, metadata) VALUES ('payroll.job', '{\"pay\": 1}', "
              "'{\"cron_name\": \"payroll-run\", \"triggered_manually\": true, \"triggered_by\": \"alice@ops\"}')",
    "cancel": "UPDATE awa.jobs SET state = 'cancelled', finalized_at = now() "
              "WHERE metadata ->> 'cron_name' = 'invoice'",
    "delete": "DELETE FROM awa.jobs WHERE metadata ->> 'cron_name' = 'billing-report'",
}
V035 = next(m.version for m in migrations.available() if m.name == "audited_job_writes")
FROM_V035 = [m.version for m in migrations.available() if m.version >= V035]


@pytest.fixture
def world(dsn: str, conn: psycopg.Connection[Any]) -> Iterator[Teams]:
    seed(dsn)
    yield from teams(dsn, conn)


def _jobs_and_trail(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    return {"jobs": conn.execute("SELECT id, state, kind, metadata FROM awa.jobs ORDER BY id").fetchall(),
            "trail": conn.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone()}


def _mark(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT coalesce(max(id), 0) AS id FROM awa.audit_log").fetchone()
    assert row is not None
    return int(row["id"])


def _trail_since(conn: psycopg.Connection[Any], mark: int) -> list[tuple[str, str, str, str]]:
    rows = conn.execute("SELECT action, target, operator, db_user FROM awa.audit_log WHERE id > %s ORDER BY id",
                        (mark,)).fetchall()
    return [(r["action"], r["target"], r["operator"], r["db_user"]) for r in rows]


def _refusal(session: psycopg.Connection[Any], statement: str, gate: str | None = None) -> psycopg.Error:
    with pytest.raises(psycopg.Error) as caught, session.transaction():
        if gate is not None:
            session.execute("SELECT awa.begin_action('mallory', %s)", (gate,))
        session.execute(statement)  # type: ignore[arg-type]  # literal test SQL
    return caught.value


def test_the_operator_role_writes_no_job_by_hand_as_it_could_before(world: Teams, dsn: str,
                                                                     conn: psycopg.Connection[Any]) -> None:
    before = _jobs_and_trail(conn)
    with world.connect("operator") as ops:
        for what, statement in HAND_WRITTEN.items():
            for gate in (None, "trigger"):  # having passed the audit gate changes nothing
                refused = _refusal(ops, statement, gate)
                assert (refused.sqlstate, str(refused).splitlines()[0]) == (
                    "42501", "permission denied for table jobs"), what
    assert _jobs_and_trail(conn) == before
    # Control: on v032 the same statements went through, and the trail said nothing of them.
    assert migrations.migrate_down(dsn, V035 - 1) == FROM_V035[::-1]
    try:
        with world.connect("operator") as ops:
            done = {what: ops.execute(statement).rowcount  # type: ignore[arg-type]  # literal test SQL
                    for what, statement in HAND_WRITTEN.items()}
        assert done == {"insert": 1, "cancel": 1, "delete": 1}
        assert conn.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone() == before["trail"]
    finally:
        assert migrations.migrate(dsn) == FROM_V035
    # Upgraded again: the layout applied before it loses the direct writes, keeps its actions.
    with world.connect("operator") as ops:
        assert str(_refusal(ops, HAND_WRITTEN["insert"])).splitlines()[0] == "permission denied for table jobs"
    with Client(world.dsns["operator"], operator="alice@ops") as client:
        assert client.actions.trigger("invoice").metadata["triggered_by"] == "alice@ops"


def test_the_operators_job_actions_write_one_audit_row_each(world: Teams, conn: psycopg.Connection[Any]) -> None:
    user = world.users["operator"]
    mark = _mark(conn)
    with Client(world.dsns["operator"], operator="alice@ops") as ops:
        job = ops.actions.trigger("invoice")
        assert (job.kind, job.metadata["cron_name"], job.metadata["triggered_by"]) == (
            "billing.job", "invoice", "alice@ops")
        assert ops.actions.cancel_job(job.id).state == "cancelled"
        assert ops.actions.retry_job(job.id).state == "available"
        waiting = conn.execute("SELECT count(*) AS n FROM awa.jobs WHERE queue = 'default' "
                               "AND state IN ('available', 'retryable')").fetchone()
        assert waiting == {"n": 4}  # the three seeded triggers and the retried one
        assert ops.actions.queue_drain("default").cancelled == 4
        conn.execute("UPDATE awa.jobs SET finalized_at = now() - interval '30 days'")  # all finished, long ago
        conn.execute("INSERT INTO awa.fire_skips (cron_name, fire_time, reason, skipped_at) "
                     "VALUES ('invoice', now() - interval '30 days', 'skipped_overlap', now() - interval '30 days')")
        assert ops.actions.prune_jobs(timedelta(days=14), keep=0, operator="alice@ops").deleted == 4
    assert conn.execute("SELECT count(*) AS n FROM awa.jobs").fetchone() == {"n": 0}
    assert conn.execute("SELECT count(*) AS n FROM awa.fire_skips").fetchone() == {"n": 0}
    assert _trail_since(conn, mark) == [
        ("trigger", "invoice", "alice@ops", user),
        ("job_cancel", f"job:{job.id}", "alice@ops", user),
        ("job_retry", f"job:{job.id}", "alice@ops", user),
        ("queue_drain", "queue:default", "alice@ops", user),
        ("jobs_prune", "jobs", "alice@ops", user),  # the batch that deleted, by awa.prune_jobs
        ("jobs_prune", "jobs", "alice@ops", user),  # the totals
    ]


def test_the_cli_as_the_operator_triggers_cancels_and_retries_with_one_audit_row_each(
        world: Teams, conn: psycopg.Connection[Any]) -> None:
    user = world.users["operator"]
    target = ("--dsn", world.dsns["operator"], "--operator", "carol@ops")
    mark = _mark(conn)
    out = awa("cron", "trigger", "billing-report", *target)
    assert out.returncode == 0, out.stderr
    row = conn.execute("SELECT max(id) AS id FROM awa.jobs WHERE metadata ->> 'cron_name' = 'billing-report'")
    job = row.fetchone()["id"]
    for verb in ("cancel", "retry"):
        out = awa("jobs", verb, str(job), *target)
        assert out.returncode == 0, out.stderr
    state = conn.execute("SELECT state, metadata ->> 'triggered_by' AS by FROM awa.jobs WHERE id = %s", (job,))
    assert state.fetchone() == {"state": "available", "by": "carol@ops"}
    assert _trail_since(conn, mark) == [
        ("trigger", "billing-report", "carol@ops", user),
        ("job_cancel", f"job:{job}", "carol@ops", user),
        ("job_retry", f"job:{job}", "carol@ops", user),
    ]


def _not_yours(target: str) -> str:
    return f'your role may act only on the schedules of billing, not on "{target}"'


def test_a_team_role_writes_only_its_owners_jobs_through_the_functions(world: Teams,
                                                                       conn: psycopg.Connection[Any]) -> None:
    row = conn.execute("SELECT id FROM awa.jobs WHERE metadata ->> 'cron_name' = 'payroll-run'").fetchone()
    payroll_job = row["id"]
    conn.execute("UPDATE awa.jobs SET state = 'discarded', finalized_at = now() WHERE id = %s", (payroll_job,))
    before = _jobs_and_trail(conn)
    refusals = {
        ("trigger", "SELECT * FROM awa.trigger_job('payroll-run')"): _not_yours("payroll-run"),
        ("backfill", "SELECT * FROM awa.backfill_jobs('payroll-run', ARRAY['2026-01-01T03:00:00+00:00'])"):
            _not_yours("payroll-run"),
        ("job_retry", f"SELECT * FROM awa.retry_job({payroll_job})"): _not_yours(f"job:{payroll_job}"),
        ("job_cancel", f"SELECT * FROM awa.cancel_job({payroll_job})"): _not_yours(f"job:{payroll_job}"),
        # Not a team's at all: a queue is every team's, so is the history.
        ("queue_drain", "SELECT awa.drain_queue('default')"): "permission denied for function drain_queue",
        ("jobs_prune", "SELECT * FROM awa.prune_jobs(now(), 0, 10, NULL, 0)"):
            "permission denied for function prune_jobs",
        # Its own schedule, without the gate of that action: refused before anything is written.
        ("pause", "SELECT * FROM awa.trigger_job('invoice')"): "call awa.begin_action(operator, trigger, ...) first",
        ("trigger", "SELECT * FROM awa.retry_job(1)"): "call awa.begin_action(operator, job_retry, ...) first",
    }
    with world.connect("billing") as team:
        for (gate, statement), message in refusals.items():
            refused = _refusal(team, statement, gate)
            assert (refused.sqlstate, str(refused).splitlines()[0]) == ("42501", message), statement
        assert _jobs_and_trail(conn) == before
        mark = _mark(conn)
        with team.transaction():
            team.execute("SELECT awa.begin_action('bob@billing', 'trigger')")
            job = team.execute("SELECT id, kind, metadata FROM awa.trigger_job('invoice')").fetchone()
    assert (job["kind"], job["metadata"]["cron_name"], job["metadata"]["triggered_by"]) == (
        "billing.job", "invoice", "bob@billing")
    assert _trail_since(conn, mark) == [("trigger", "invoice", "bob@billing", world.users["billing"])]


def test_a_superusers_set_role_into_a_team_role_is_that_teams_scope(world: Teams, dsn: str,
                                                                      conn: psycopg.Connection[Any]) -> None:
    """The audit gate scoped by the login (session_user) only: a superuser's SET ROLE into a
    team's role acted on every team's schedules. Now the role taken narrows the scope."""
    set_role = sql.SQL("SET ROLE {}").format(sql.Identifier(world.team_role))
    before = _jobs_and_trail(conn)
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(set_role)
        for statement in ("SELECT awa.record_event('trigger', 'payroll-run', NULL, NULL, '{}')",
                          "SELECT * FROM awa.trigger_job('payroll-run')"):
            refused = _refusal(admin, statement, "trigger")
            assert (refused.sqlstate, str(refused).splitlines()[0]) == ("42501", _not_yours("payroll-run"))
        assert _jobs_and_trail(conn) == before
        admin.execute("RESET ROLE")  # the superuser itself: every schedule
        with admin.transaction():
            admin.execute("SELECT awa.begin_action('root', 'trigger')")
            assert admin.execute("SELECT count(*) FROM awa.trigger_job('payroll-run')").fetchone() == (1,)
    # Control: on v032 the same SET ROLE passed the gate's check on payroll's schedule.
    assert migrations.migrate_down(dsn, V035 - 1) == FROM_V035[::-1]
    try:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(set_role)
            with admin.transaction():
                admin.execute("SELECT awa.begin_action('root', 'trigger')")
                recorded = admin.execute("SELECT awa.record_event('trigger', 'payroll-run', NULL, NULL, '{}')")
                assert recorded.fetchone() is not None
    finally:
        assert migrations.migrate(dsn) == FROM_V035


def test_the_operator_role_redefines_no_unowned_schedule_by_hand_as_it_could_before(
        world: Teams, dsn: str, conn: psycopg.Connection[Any]) -> None:
    """"Why" 2, second half: the operator role updated an unowned schedule's arguments and
    cron expression by hand (audited as a redefinition, not an override). Now refused; the
    runtime's sync and the operator's override still redefine it."""
    with Client(dsn) as code:
        code.periodic("unowned", "0 3 * * *", "free.job")
        code.sync()
    statement = "UPDATE awa.cron_jobs SET args = '{\"evil\": 1}', cron_expr = '* * * * *' WHERE name = 'unowned'"
    row = "SELECT cron_expr, args, overridden FROM awa.cron_jobs WHERE name = 'unowned'"
    mark = _mark(conn)
    with world.connect("operator") as ops:
        refused = _refusal(ops, statement)
    assert (refused.sqlstate, str(refused).splitlines()[0]) == (
        "42501", "schedule \"unowned\": its definition is its code's; an operator overrides it (awa-tui cron override)")
    assert conn.execute(row).fetchone() == {"cron_expr": "0 3 * * *", "args": {}, "overridden": None}
    with Client(world.dsns["operator"], operator="alice@ops") as client:
        assert client.actions.override("unowned", OverrideRequest(cron="0 4 * * *")).cron_expr == "0 4 * * *"
    with Client(world.dsns["runtime"]) as runtime:
        runtime.periodic("unowned", "0 5 * * *", "free.job", args={"a": 1})
        runtime.sync()
    assert conn.execute(row).fetchone() == {"cron_expr": "0 4 * * *", "args": {"a": 1},
                                            "overridden": {"cron_expr": "0 5 * * *"}}
    assert [a for a, *_ in _trail_since(conn, mark)] == ["override", "sync_definition"]
    # Control: on v032 the same statement went through, audited as a redefinition.
    assert migrations.migrate_down(dsn, V035 - 1) == FROM_V035[::-1]
    try:
        mark = _mark(conn)
        with world.connect("operator") as ops:
            assert ops.execute(statement).rowcount == 1  # type: ignore[arg-type]  # literal test SQL
        assert _trail_since(conn, mark) == [("redefine", "unowned", world.users["operator"], world.users["operator"])]
    finally:
        assert migrations.migrate(dsn) == FROM_V035
