"""One database, many teams (S76): a team's role sees and acts on its owners' schedules,
jobs, ledger and audit entries only, enforced by the database, so hand-written SQL gets
the answer the Client and the CLI get; every other role's answers are unchanged."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from cli_helpers import awa, one_line_error
from owner_access_helpers import BILLING, PAYROLL, Teams, drop_roles, seed, teams

from awa_tui import Client
from awa_tui.engine import migrations
from awa_tui.engine.actions import grants
from awa_tui.engine.actions.overrides import OverrideRequest
from awa_tui.engine.core.errors import AwaError
from awa_tui.engine.cron.expression import Fire
from awa_tui.engine.firing import evaluator
from awa_tui.engine.ledger.retention import RetentionCursor, prune_jobs

BOTH = sorted((*BILLING, *PAYROLL))
# The rows of each table under row-level security, named by what ties them to a schedule.
READS = {
    "schedules": "SELECT name AS n FROM awa.cron_jobs ORDER BY 1",
    "jobs": "SELECT DISTINCT metadata ->> 'cron_name' AS n FROM awa.jobs ORDER BY 1",
    "audit": "SELECT DISTINCT target AS n FROM awa.audit_log ORDER BY 1",
    "health": "SELECT name AS n FROM awa.cron_health ORDER BY 1",
    "sync notes": "SELECT DISTINCT name AS n FROM awa.cron_jobs_changes ORDER BY 1",
    "owners": "SELECT owner AS n FROM awa.owners ORDER BY 1",
    "runtimes": "SELECT DISTINCT coalesce(owner, '(none)') AS n FROM awa.runtime_instances ORDER BY 1",
    "grants": "SELECT DISTINCT owner AS n FROM awa.owner_grants ORDER BY 1",
}


@pytest.fixture
def world(dsn: str, conn: psycopg.Connection[Any]) -> Iterator[Teams]:
    seed(dsn)
    yield from teams(dsn, conn)


def _names(session: psycopg.Connection[Any], query: str) -> list[str]:
    return [r["n"] for r in session.execute(query).fetchall()]  # type: ignore[arg-type]  # literal test SQL


def _state(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """Everything a refused action could have changed: payroll's row, the jobs, the trail."""
    row = conn.execute("SELECT to_jsonb(c) - 'updated_at' AS r FROM awa.cron_jobs c WHERE name = 'payroll-run'")
    return {"payroll": row.fetchone(),
            "jobs": conn.execute("SELECT count(*) AS n FROM awa.jobs").fetchone(),
            "audit": conn.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone()}


def test_a_team_login_reads_only_its_owners_rows_in_sql(world: Teams, conn: psycopg.Connection[Any]) -> None:
    billing = ["billing-report", "invoice"]
    with world.connect("billing") as team:
        assert _names(team, READS["schedules"]) == billing
        assert _names(team, READS["jobs"]) == billing
        assert _names(team, READS["audit"]) == billing
        assert _names(team, READS["owners"]) == ["billing"]
        # Every table under row-level security: the superuser's rows, billing's only.
        for what, query in READS.items():
            assert _names(team, query) == [n for n in _names(conn, query) if n in (*billing, "billing", "(none)")], what
        assert _names(team, READS["runtimes"]) == ["(none)", "billing"]
        assert _names(team, READS["grants"]) == ["billing"]
        # Asked for by name, another team's rows are not there either.
        assert team.execute("SELECT count(*) AS n FROM awa.cron_jobs WHERE name = 'payroll-run'").fetchone() == {
            "n": 0}
        assert team.execute("SELECT count(*) AS n FROM awa.jobs WHERE metadata ->> 'cron_name' = 'payroll-run'"
                            ).fetchone() == {"n": 0}
        assert team.execute("SELECT count(*) AS n FROM awa.audit_log WHERE target = 'payroll-run'").fetchone() == {
            "n": 0}
        assert team.execute("SELECT awa.owner_scope() AS s").fetchone() == {"s": ["billing"]}
    # Negative control: the layout's roles, and the superuser, see both teams as before.
    for key in ("operator", "runtime", "readonly"):
        with world.connect(key) as other:
            assert _names(other, READS["schedules"]) == BOTH, key
            assert _names(other, READS["runtimes"]) == ["(none)", "billing", "payroll"], key
            assert _names(other, READS["grants"]) == ["billing", "payroll"], key
            assert _names(other, READS["jobs"]) == BOTH, key
            assert _names(other, READS["audit"]) == BOTH, key
            assert other.execute("SELECT awa.owner_scope() AS s").fetchone() == {"s": None}
    assert _names(conn, READS["schedules"]) == BOTH


def test_a_team_login_reads_only_its_owners_rows_through_the_client(world: Teams) -> None:
    with Client(world.dsns["billing"], operator="bob@billing") as team:
        assert [s.name for s in team.reads.list_schedules()] == ["billing-report", "invoice"]
        assert sorted({j.schedule for j in team.reads.jobs_page().rows}) == ["billing-report", "invoice"]
        assert sorted({a.target for a in team.reads.list_audit()}) == ["billing-report", "invoice"]
        assert [o.owner for o in team.reads.list_owners()] == ["billing"]
        assert team.reads.write_refusal() is None  # not read-only: it may act on its own
    with Client(world.dsns["operator"], operator="alice@ops") as ops:
        assert [s.name for s in ops.reads.list_schedules()] == BOTH
        assert [o.owner for o in ops.reads.list_owners()] == ["billing", "payroll"]


def test_a_team_login_pauses_triggers_and_overrides_its_own_schedules(world: Teams,
                                                                      conn: psycopg.Connection[Any]) -> None:
    with Client(world.dsns["billing"], operator="bob@billing") as team:
        assert team.actions.resume("invoice").paused_at is None
        assert team.actions.pause("invoice").paused_by == "bob@billing"
        job = team.actions.trigger("invoice")
        assert job.metadata["cron_name"] == "invoice"
        assert team.actions.override("invoice", OverrideRequest(cron="0 4 * * *")).cron_expr == "0 4 * * *"
        assert team.actions.cancel_job(job.id).state == "cancelled"
    rows = conn.execute("SELECT action, target, operator, db_user FROM awa.audit_log "
                        "WHERE operator = 'bob@billing' ORDER BY id").fetchall()
    user = world.users["billing"]
    assert rows == [{"action": a, "target": t, "operator": "bob@billing", "db_user": user}
                    for a, t in (("resume", "invoice"), ("pause", "invoice"), ("trigger", "invoice"),
                                 ("override", "invoice"), ("job_cancel", f"job:{job.id}"))]


def test_an_operator_and_a_team_login_reset_an_override(world: Teams, conn: psycopg.Connection[Any]) -> None:
    """A reset writes the overridable columns only, which the operator's and a team's
    UPDATE grant covers (it wrote every definition column, `kind` among them: refused)."""
    before = conn.execute("SELECT cron_expr, queue, kind, args FROM awa.cron_jobs WHERE name = 'invoice'").fetchone()
    for key, operator in (("operator", "alice@ops"), ("billing", "bob@billing")):
        with Client(world.dsns[key], operator=operator) as who:
            assert who.actions.override("invoice", OverrideRequest(cron="0 4 * * *", queue="late")).queue == "late"
            after = who.actions.reset_override("invoice")
            assert (after.cron_expr, after.queue) == ("0 3 * * *", "default")
        assert conn.execute("SELECT cron_expr, queue, kind, args FROM awa.cron_jobs WHERE name = 'invoice'"
                            ).fetchone() == before
        assert conn.execute("SELECT overridden FROM awa.cron_jobs WHERE name = 'invoice'").fetchone() == {
            "overridden": None}
    assert [(r["action"], r["operator"]) for r in conn.execute(
        "SELECT action, operator FROM awa.audit_log WHERE target = 'invoice' AND action LIKE 'override%%' "
        "ORDER BY id")] == [("override", "alice@ops"), ("override_reset", "alice@ops"),
                            ("override", "bob@billing"), ("override_reset", "bob@billing")]


def test_the_runtime_login_prunes_old_skipped_instants(world: Teams, conn: psycopg.Connection[Any]) -> None:
    """The leader's retention walk, as the layout's runtime role, ends with a batch of
    skipped instants past the horizon: it holds DELETE on them, not UPDATE, so the batch
    may not lock them first (it did: `permission denied for table fire_skips`, and the
    walk's progress was never recorded)."""
    conn.execute("INSERT INTO awa.fire_skips (cron_name, fire_time, skipped_at, reason) VALUES "
                 "('invoice', '2026-01-01T03:00Z', '2026-01-01T03:00Z', 'paused'), "
                 "('invoice', '2026-12-01T03:00Z', '2026-12-01T03:00Z', 'paused')")
    now = datetime(2026, 12, 6, tzinfo=UTC)
    with world.connect("runtime") as runtime:
        result = prune_jobs(runtime, timedelta(days=14), now=now, cursor=RetentionCursor())
    assert result.done
    assert [r["fire_time"] for r in conn.execute("SELECT fire_time FROM awa.fire_skips ORDER BY 1")] == [
        datetime(2026, 12, 1, 3, tzinfo=UTC)]
    assert conn.execute("SELECT pruned_through FROM awa.ledger_pruned WHERE cron_name = 'invoice'").fetchone() == {
        "pruned_through": datetime(2026, 1, 1, 3, tzinfo=UTC)}


# Hand-written SQL by billing's login against payroll's row: each changes nothing, either
# matching no row (the row is not there for it) or refused in one line.
UNSEEN = (
    "UPDATE awa.cron_jobs SET paused_at = NULL, paused_by = NULL WHERE name = 'payroll-run'",
)
REFUSED = {
    "DELETE FROM awa.cron_jobs WHERE name = 'payroll-run'": "permission denied for table cron_jobs",
    "UPDATE awa.cron_jobs SET retired_at = now() WHERE name = 'payroll-run'": "permission denied for table cron_jobs",
    "UPDATE awa.cron_jobs SET owner = 'billing' WHERE name = 'payroll-run'": "permission denied for table cron_jobs",
    "DELETE FROM awa.jobs": "permission denied for table jobs",
    # A team writes no job itself (v035): its trigger, backfill, retry and cancel are audited functions.
    "UPDATE awa.jobs SET state = 'cancelled', finalized_at = now() WHERE metadata ->> 'cron_name' = 'payroll-run'":
        "permission denied for table jobs",
    "INSERT INTO awa.jobs (kind, metadata) VALUES ('payroll.job', '{\"cron_name\": \"payroll-run\"}')":
        "permission denied for table jobs",
    "INSERT INTO awa.jobs (kind, metadata) VALUES ('awa.sql', '{\"cron_name\": \"invoice\"}')":
        "permission denied for table jobs",
    "INSERT INTO awa.cron_jobs (name, cron_expr, kind, owner) VALUES ('x', '* * * * *', 'k', 'billing')":
        "permission denied for table cron_jobs",
    "SELECT count(*) FROM awa.alert_sinks": "permission denied for table alert_sinks",
}


def test_another_teams_rows_are_out_of_reach_of_hand_written_sql(world: Teams,
                                                                 conn: psycopg.Connection[Any]) -> None:
    before = _state(conn)
    with world.connect("billing") as team:
        for statement in UNSEEN:
            with team.transaction():
                team.execute("SELECT awa.begin_action('bob', 'pause')")
                assert team.execute(statement).rowcount == 0, statement  # type: ignore[arg-type]
        for statement, refusal in REFUSED.items():
            with pytest.raises(psycopg.errors.InsufficientPrivilege) as caught:
                team.execute(statement)  # type: ignore[arg-type]  # literal test SQL
            assert str(caught.value).splitlines()[0] == refusal.format(team=world.team_role), statement
        # The trail's own events check the target themselves (they run as the schema's owner).
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as caught:
            with team.transaction():
                team.execute("SELECT awa.begin_action('bob', 'trigger')")
                team.execute("SELECT awa.record_event('trigger', 'payroll-run', NULL, NULL, '{}')")
        assert str(caught.value).splitlines()[0] == (
            'your role may act only on the schedules of billing, not on "payroll-run"')
    assert _state(conn) == before


ACTIONS = {
    "pause": lambda c: c.actions.pause("payroll-run"),
    "resume": lambda c: c.actions.resume("payroll-run"),
    "trigger": lambda c: c.actions.trigger("payroll-run"),
    "override": lambda c: c.actions.override("payroll-run", OverrideRequest(cron="0 4 * * *")),
    "retire": lambda c: c.actions.retire("payroll-run"),
    "remove": lambda c: c.actions.remove("payroll-run"),
    "retire owner": lambda c: c.actions.retire_owner("payroll"),
    "backfill": lambda c: c.actions.backfill("payroll-run", datetime(2026, 1, 1, tzinfo=UTC),
                                             datetime(2026, 1, 2, tzinfo=UTC)),
    "cancel job": lambda c: c.actions.cancel_job(_payroll_job()),
    "retire own": lambda c: c.actions.retire("invoice"),
    "remove own": lambda c: c.actions.remove("invoice"),
    "queue pause": lambda c: c.actions.queue_pause("default"),
    "calendar set": lambda c: c.actions.set_calendar("holidays", [date(2026, 12, 25)]),
}
PAYROLL_JOB: list[int] = []  # the id of payroll's job, found by the test as the superuser


def _payroll_job() -> int:
    return PAYROLL_JOB[0]
NOT_YOURS = "schedule 'payroll-run': not one your role may see (it may act on the schedules of billing only)"
OWN_REFUSED = ("permission denied: a team's role may pause, resume, trigger, override and backfill its owners' "
               "schedules and retry or cancel their jobs, not {}")


def test_another_teams_schedule_is_refused_through_the_client_in_one_line(world: Teams,
                                                                          conn: psycopg.Connection[Any]) -> None:
    before = _state(conn)
    refusals = {}
    job = conn.execute("SELECT id FROM awa.jobs WHERE metadata ->> 'cron_name' = 'payroll-run'").fetchone()
    PAYROLL_JOB[:] = [job["id"]]
    with Client(world.dsns["billing"], operator="bob@billing") as team:
        for what, act in ACTIONS.items():
            with pytest.raises(AwaError) as caught:
                act(team)
            refusals[what] = str(caught.value)
    assert refusals == {
        **{what: NOT_YOURS for what in ("pause", "resume", "trigger", "override", "retire", "remove", "backfill")},
        "cancel job": f"job {job['id']}: not one your role may see (it may act on the schedules of billing only)",
        "queue pause": OWN_REFUSED.format("queue pause"), "calendar set": OWN_REFUSED.format("calendar set"),
        "retire owner": "owner 'payroll': not one your role may act on (it may act on the schedules of billing only)",
        "retire own": OWN_REFUSED.format("retire"), "remove own": OWN_REFUSED.format("remove"),
    }
    assert _state(conn) == before


def test_the_cli_as_a_team_login_refuses_another_teams_schedule_in_one_line(world: Teams,
                                                                             conn: psycopg.Connection[Any]) -> None:
    before = _state(conn)
    assert one_line_error(awa("cron", "pause", "payroll-run", "--dsn", world.dsns["billing"])) == f"error: {NOT_YOURS}"
    listed = awa("cron", "list", "--json", "--dsn", world.dsns["billing"])
    assert listed.returncode == 0, listed.stderr
    assert [r["name"] for r in json.loads(listed.stdout)] == ["billing-report", "invoice"]
    assert _state(conn) == before


def test_owner_list_says_which_team_roles_may_act_on_each_owner(world: Teams) -> None:
    with Client(world.dsns["operator"]) as ops:
        assert [(o.owner, o.roles) for o in ops.reads.list_owners()] == [
            ("billing", [world.team_role]), ("payroll", [f"{world.prefix}payroll_team"])]
    with Client(world.dsns["billing"]) as team:  # a team sees its own owners' roles only
        assert [(o.owner, o.roles) for o in team.reads.list_owners()] == [("billing", [world.team_role])]


def test_the_unscoped_roles_plans_are_unchanged(world: Teams, conn: psycopg.Connection[Any]) -> None:
    """The permissive policy every role has is constant true: the planner drops it, so a
    runtime's statements plan exactly as a superuser's, who is never subject to row-level
    security: the fire statement itself (with an overlap probe of the jobs, by a jsonb
    expression index a non-leakproof security qual would rule out), the due scan, an audit
    read. A team's role plans its owner check (control)."""
    fire = evaluator.FirePlan("invoice", None, [Fire(datetime(2026, 1, 1, 3, tzinfo=UTC))],
                              datetime(2026, 1, 2, 3, tzinfo=UTC), "0 3 * * *", "UTC", overlap="skip")
    statements: tuple[tuple[str, dict[str, Any] | None], ...] = (
        (evaluator.FIRE_BATCH_SQL, evaluator._batch_params([fire], None)),
        ("SELECT name FROM awa.cron_jobs WHERE next_fire_at <= now() AND paused_at IS NULL AND retired_at IS NULL "
         "AND finished_at IS NULL ORDER BY next_fire_at LIMIT 100 FOR UPDATE SKIP LOCKED", None),
        ("SELECT target FROM awa.audit_log WHERE target = 'invoice' ORDER BY id DESC LIMIT 10", None),
    )

    def plans(session: psycopg.Connection[Any], which: tuple[tuple[str, dict[str, Any] | None], ...]) -> list[str]:
        session.execute("SET enable_seqscan = off")
        return ["\n".join(r["QUERY PLAN"] for r in session.execute(f"EXPLAIN (COSTS OFF) {s}", p).fetchall())
                for s, p in which]  # type: ignore[arg-type]  # the engine's own SQL

    with psycopg.connect(conn.info.dsn, autocommit=True, row_factory=dict_row) as bypass:
        expected = plans(bypass, statements)
    with world.connect("runtime") as runtime:
        assert plans(runtime, statements) == expected
    with world.connect("billing") as team:  # it may not fire: the reads only
        assert [p == e for p, e in zip(plans(team, statements[1:]), expected[1:], strict=True)] == [False, False]
    assert "jobs_cron_active_idx" in expected[0]


def test_every_table_under_row_level_security_has_a_team_policy(world: Teams, conn: psycopg.Connection[Any]) -> None:
    secured = {r["relname"] for r in conn.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = 'awa'::regnamespace AND relrowsecurity")}
    assert secured == set(grants.SCOPED_ROWS)
    policies = {(r["tablename"], r["permissive"], tuple(r["roles"])) for r in conn.execute(
        "SELECT tablename, permissive, roles::text[] AS roles FROM pg_policies WHERE schemaname = 'awa'")}
    assert policies == {(t, "PERMISSIVE", ("public",)) for t in secured} | {
        (t, "RESTRICTIVE", (role,)) for t in secured for role in (world.team_role, f"{world.prefix}payroll_team")}


def test_db_grants_owner_role_prints_applies_updates_and_revokes(dsn: str, conn: psycopg.Connection[Any]) -> None:
    seed(dsn)
    prefix = f"t{uuid.uuid4().hex[:8]}_"
    role = f"{prefix}ledger_team"

    def granted() -> list[tuple[str, str]]:
        return [(r["role"], r["owner"]) for r in conn.execute(
            "SELECT role, owner FROM awa.owner_grants ORDER BY role, owner").fetchall()]

    def select_right() -> bool:
        row = conn.execute("SELECT has_table_privilege(%s, 'awa.cron_jobs', 'SELECT') AS ok", (role,)).fetchone()
        return bool(row and row["ok"])

    try:
        printed = awa("db", "grants", "--owner-role", role, "--owners", "billing")
        assert printed.returncode == 0, printed.stderr
        assert printed.stdout == grants.owner_role(role, ["billing"]).sql
        assert conn.execute("SELECT count(*) AS n FROM pg_roles WHERE rolname = %s", (role,)).fetchone() == {"n": 0}
        applied = awa("db", "grants", "--owner-role", role, "--owners", "billing", "--apply", "--dsn", dsn)
        assert applied.returncode == 0, applied.stderr
        assert applied.stdout == f"{role} may act on the schedules of billing only (51 statements)\n"
        assert granted() == [(role, "billing")]
        again = awa("db", "grants", "--owner-role", role, "--owners", "billing,payroll", "--apply", "--dsn", dsn)
        assert again.returncode == 0, again.stderr
        assert granted() == [(role, "billing"), (role, "payroll")]
        owners = json.loads(awa("owner", "list", "--json", "--dsn", dsn).stdout)
        assert [(o["owner"], o["roles"]) for o in owners] == [("billing", [role]), ("payroll", [role])]
        revoked = awa("db", "grants", "--owner-role", role, "--revoke", "--apply", "--dsn", dsn, "--json")
        assert json.loads(revoked.stdout) == {"role": role, "owners": [], "revoked": True, "statements": 26}
        assert granted() == []
        assert not select_right()
        assert conn.execute("SELECT count(*) AS n FROM pg_policies WHERE policyname = %s", (role,)).fetchone() == {
            "n": 0}
        # Bad input: one line, nothing written.
        for args, line in (
            (("--owner-role", "Bad-Name", "--owners", "x"),
             "error: role: lower-case letters, digits and _ (1..63, not starting with a digit) required, "
             "got 'Bad-Name'"),
            (("--owner-role", role), "error: --owner-role needs --owners OWNER[,OWNER] (or --revoke)"),
            (("--owners", "billing"), "error: --owners and --revoke need --owner-role ROLE"),
            (("--owner-role", role, "--owners", "billing", "--revoke"),
             "error: --revoke takes no --owners: it takes every owner from the role"),
            (("--owner-role", "postgres", "--owners", "billing", "--apply", "--dsn", dsn),
             "error: role: postgres is a superuser or bypasses row-level security; a team's role must be neither"),
        ):
            assert one_line_error(awa("db", "grants", *args)) == line, args
        assert granted() == []
    finally:
        drop_roles(conn, prefix)


def test_undoing_owner_access_leaves_a_team_role_nothing(world: Teams, dsn: str,
                                                        conn: psycopg.Connection[Any]) -> None:
    version = next(m.version for m in migrations.available() if m.name == "owner_access")
    newer = [m.version for m in migrations.available() if m.version >= version]
    assert migrations.migrate_down(dsn, version - 1) == newer[::-1]
    assert conn.execute("SELECT count(*) AS n FROM pg_policies WHERE schemaname = 'awa'").fetchone() == {"n": 0}
    assert conn.execute("SELECT count(*) AS n FROM pg_class WHERE relnamespace = 'awa'::regnamespace "
                        "AND relrowsecurity").fetchone() == {"n": 0}
    with world.connect("billing") as team, pytest.raises(psycopg.errors.InsufficientPrivilege):
        team.execute("SELECT name FROM awa.cron_jobs")  # without row-level security it would see every team's
    with world.connect("operator") as ops:
        assert _names(ops, READS["schedules"]) == BOTH
    assert migrations.migrate(dsn) == newer
    with world.connect("billing") as team, pytest.raises(psycopg.errors.InsufficientPrivilege):
        team.execute("SELECT name FROM awa.cron_jobs")  # until `db grants --owner-role` is run again
    grants.apply_owner_role(dsn, grants.owner_role(world.team_role, ["billing"]))
    with world.connect("billing") as team:
        assert _names(team, READS["schedules"]) == ["billing-report", "invoice"]
