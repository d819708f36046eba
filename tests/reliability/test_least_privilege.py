"""Least privilege (S20, S36, S38): under a role that can only SELECT, every read works and
every mutation is refused in one clear line; under a role that may change schedules but
not pass the audit gate (awa.begin_action), an action changes nothing at all (no
half-written action)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import drained
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from awa_tui import Client, ReadOnly

from .cli_tree import Leaf, assert_one_line_error, leaves, run_cli
from .harness import Summary

# Jobs (seeded below, ids from 1): 1 waits, 2 was discarded.
PLACEHOLDERS = {"name": "rel-x", "queue": "rel-q", "owner": "rel-owner", "job_id": "1"}
# Targets in the state each action expects, so only the privilege check can refuse it.
TARGETS: dict[tuple[str, ...], dict[str, str]] = {
    ("cron", "resume"): {"name": "rel-paused"},
    ("cron", "restore"): {"name": "rel-retired"},
    ("cron", "transfer"): {"name": "rel-owned", "owner": "rel-other"},
    ("owner", "restore"): {"owner": "rel-gone"},
    ("queue", "resume"): {"queue": "rel-pq"},
    ("jobs", "retry"): {"job_id": "2"},
    ("cron", "edit"): {"name": "rel-made"},  # made at run time: code-declared ones are refused as such
    ("cron", "delete"): {"name": "rel-made"},
    ("alerts", "test"): {"sink": "rel-sink"},  # a sink that exists: only the privilege check can refuse
    ("alerts", "sinks", "remove"): {"name": "rel-sink"},
    ("runtime", "events"): {"instance": "6f1c2a9e-0000-4000-8000-00000000beef"},  # the seeded runtime row
}
PASSWORD = "rel-pw"

READ_ONLY_GRANTS = [
    "GRANT CONNECT ON DATABASE {db} TO {role}",
    "GRANT USAGE ON SCHEMA awa TO {role}",
    "GRANT SELECT ON ALL TABLES IN SCHEMA awa TO {role}",
]
NO_AUDIT_GRANTS = [
    "GRANT CONNECT ON DATABASE {db} TO {role}",
    "GRANT USAGE ON SCHEMA awa TO {role}",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA awa TO {role}",
    "GRANT USAGE ON ALL SEQUENCES IN SCHEMA awa TO {role}",
    "REVOKE INSERT, UPDATE, DELETE ON awa.audit_log FROM {role}",
]


@pytest.fixture
def seeded(dsn: str, conn: psycopg.Connection[Any]) -> str:
    """A database with something in every table an action touches."""
    with Client(dsn, operator="seeder") as admin:
        for name, queue in (("rel-x", "rel-q"), ("rel-paused", "rel-q"), ("rel-owned", "rel-q"),
                            ("rel-retired", "rel-pq")):
            admin.periodic(name, "* * * * *", "rel.kind", queue=queue)
        admin.sync()
        admin.create_schedule("rel-made", "* * * * *", "rel.kind", queue="rel-q")
        admin.actions.add_alert_sink("rel-sink", "notify", channel="awa_alerts")
        admin.actions.pause("rel-paused")
        admin.actions.trigger("rel-x")
        admin.actions.adopt("rel-owned", "rel-owner")
        admin.actions.adopt("rel-retired", "rel-gone")
        admin.actions.retire("rel-retired")
        admin.actions.queue_pause("rel-pq")
        discarded = admin.actions.trigger("rel-x")  # job 2 (the trigger above made job 1)
        admin.actions.set_calendar("rel-x", [date(2025, 12, 25)])  # `calendar show|delete rel-x`
        admin.runtime.snapshot()  # a runtime row (`runtime events`), its id set below
    conn.execute("UPDATE awa.jobs SET state = 'discarded', finalized_at = now() WHERE id = %s", (discarded.id,))
    conn.execute("UPDATE awa.runtime_instances SET instance_id = %s",
                 (TARGETS[("runtime", "events")]["instance"],))
    return dsn


@pytest.fixture
def make_role(conn: psycopg.Connection[Any]) -> Iterator[Any]:
    made: list[str] = []

    def _make(grants: list[str]) -> str:
        role = f"rel_{uuid.uuid4().hex[:10]}"
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(role), sql.Literal(PASSWORD)))
        made.append(role)
        for grant in grants:
            conn.execute(sql.SQL(grant).format(db=sql.Identifier(conn.info.dbname), role=sql.Identifier(role)))
        params = conninfo_to_dict(conn.info.dsn)
        params.update(user=role, password=PASSWORD)
        return make_conninfo(**params)

    yield _make
    for role in made:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,))
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def dump(conn: psycopg.Connection[Any]) -> dict[str, list[str]]:
    """Every row of every awa table, to prove an action left no trace."""
    tables = conn.execute(
        "SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'awa' AND table_type = 'BASE TABLE'"
    ).fetchall()
    out = {}
    for row in tables:
        rows = conn.execute(sql.SQL("SELECT to_jsonb(t) AS r FROM awa.{} t").format(sql.Identifier(row["t"])))
        out[row["t"]] = sorted(json.dumps(r["r"], sort_keys=True) for r in rows.fetchall())
    return out


def _run_all(commands: list[Leaf], env: dict[str, str]) -> list[Any]:
    with ThreadPoolExecutor(3) as pool:
        return list(pool.map(lambda leaf: run_cli(leaf.argv({**PLACEHOLDERS, **TARGETS.get(leaf.path, {})}), env),
                             commands))


def test_read_only_role_reads_everything_and_refuses_every_mutation(
    seeded: str, conn: psycopg.Connection[Any], make_role: Any, tmp_path: Path, summary: Summary
) -> None:
    ro_dsn = make_role(READ_ONLY_GRANTS)
    env = {"AWA_DATABASE_URL": ro_dsn, "AWA_EMBEDDED_HOME": str(tmp_path / "embedded")}
    before = dump(conn)
    reads = [leaf for leaf in leaves() if not leaf.mutates]
    writes = [leaf for leaf in leaves() if leaf.mutates]
    for out in _run_all(reads, env):
        assert out.code == 0 and "Traceback" not in out.stderr, out.describe()
    for out in _run_all(writes, env):
        assert_one_line_error(out, contains=["permission denied", "read-only"])
    assert_one_line_error(run_cli(["migrate"], env), contains=["permission denied", "read-only"])
    # A runtime logs its start on stderr; it must then stop with one error line, no traceback.
    out = run_cli(["run", "--app", "reliability.app:setup"], {**env, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert out.code == 1 and "Traceback" not in out.stderr, out.describe()
    assert out.error_lines[-1].startswith("error: permission denied"), out.describe()
    # In-process too: the engine refuses, one line, whatever the client believes.
    with Client(ro_dsn, operator="ro") as client:
        assert "lacks UPDATE on awa.cron_jobs" in (client.reads.write_refusal() or "")
        assert [s.name for s in client.reads.list_schedules()] == [
            "rel-made", "rel-owned", "rel-paused", "rel-retired", "rel-x"]
        for action in (client.actions.pause, client.actions.resume, client.actions.trigger, client.actions.remove):
            with pytest.raises(ReadOnly) as caught:
                action("rel-x")
            assert "\n" not in str(caught.value)
    assert dump(conn) == before
    summary.runs = len(reads) + len(writes) + 2
    summary.notes = f"SELECT-only role: {len(reads)} reads work, {len(writes)} mutations + migrate + run refused"


def test_role_without_audit_grant_leaves_no_half_written_action(
    seeded: str, conn: psycopg.Connection[Any], make_role: Any, tmp_path: Path, summary: Summary
) -> None:
    role_dsn = make_role(NO_AUDIT_GRANTS)
    with Client(role_dsn) as client, Client(seeded) as admin, Client(seeded, read_only=True) as reader:
        role = conninfo_to_dict(role_dsn)["user"]
        assert client.reads.write_refusal() == f"role {role} lacks EXECUTE on awa.begin_action"
        assert admin.reads.write_refusal() is None
        assert reader.reads.write_refusal() == "this client is read-only"
    env = {"AWA_DATABASE_URL": role_dsn, "AWA_EMBEDDED_HOME": str(tmp_path / "embedded")}
    before = dump(conn)
    writes = [leaf for leaf in leaves() if leaf.mutates]
    outcomes = _run_all(writes, env)
    for out in outcomes:
        assert out.code != 0, f"an action succeeded without its audit entry:\n{out.describe()}"
        assert_one_line_error(out)
    refused_by_audit = [o for o in outcomes if "begin_action" in o.stderr]
    # Each action is refused at the audit gate, its first statement.
    assert len(refused_by_audit) == len(outcomes), [o.describe() for o in outcomes if o not in refused_by_audit]
    assert dump(conn) == before
    summary.runs = len(outcomes)
    summary.notes = f"no audit grant: {len(outcomes)} actions refused, {len(refused_by_audit)} at the audit gate"


async def test_console_on_a_select_only_role_says_read_only(
    seeded: str, conn: psycopg.Connection[Any], make_role: Any, summary: Summary
) -> None:
    """Regression: the console offered every action to a SELECT-only role and let each one
    fail in turn; it now says READ-ONLY up front (with the reason) and drops them."""
    from awa_tui.tui import actions
    from awa_tui.tui.screens.confirm import ConfirmScreen

    from .console import make_console, schedule_rows, shown_actions, until

    ro_dsn = make_role(READ_ONLY_GRANTS)
    before = dump(conn)
    app = make_console(ro_dsn)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: app.read_only, what="the console noticing it cannot write")
            assert app.freshness.read_only and "lacks UPDATE on awa.cron_jobs" in (app.read_only_reason or "")
            await until(pilot, lambda: "rel-x" in schedule_rows(app), what="the schedules shown")
            mutations = {a.action for a in actions.ACTS if a.mutation}
            assert shown_actions(app) & mutations == set()
            await pilot.press("s", "t")  # pause, trigger: nothing to confirm, nothing done
            await drained(pilot, app)
            assert not isinstance(app.screen, ConfirmScreen)
    finally:
        app.client.close()
    assert dump(conn) == before
    summary.runs = 1
    summary.notes = "console on a SELECT-only role: READ-ONLY badge with the reason, no mutation offered"
