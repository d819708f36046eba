"""Databases as earlier commits of this project left them, upgraded by this tree's runner.

Each state is built the way that commit's runner built it: its own migration files, read
from git history, applied in order, each recorded as (version, name). The three states are
the ones an upgrade used to break: a migration missing below the newest (v004 never existed
on that commit), two missing below a later one (v008 and v009 under v010), and a migration
recorded under the number it had before it was renumbered (v017 health_candidates, today's
v014); the last is the previous release. Beside them, one state per distinct set of
migration files on the previous release's first-parent history (22 of them, one of which
ran v010 before its text was changed). Each is filled by hand (schedules of two owners, a
pause, an audit row), upgraded, and must end with the fresh schema (the schema document,
byte for byte), every row kept, and a pass that fires each due instant exactly once."""

from __future__ import annotations

import difflib
import json
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

import awa_tui
from awa_tui.engine import migrations
from awa_tui.engine.client import Client
from awa_tui.engine.migrations import schema_doc

ROOT = Path(__file__).resolve().parents[3]
MIGRATIONS_DIR = "awa_tui/engine/migrations"
FILE = re.compile(r"^v(\d{3})_([a-z0-9_]+)\.sql$")

STATES = {
    # commit: the migrations it recorded (version, name)
    "v004-missing": "64caab23a7e709fb6ea6291ac0a942f94093d474",
    "v008-v009-missing": "35811925ba11f6b7dd60f7d7c6ef7c98b25fb4bd",
    "v017-health-candidates": "d668fcda7cff5ed4a74722b4aba66d9e52151702",
    "previous-release": "c26b606",
    # main as it once landed on top of the previous release with fence_by_role as v019 (its
    # newest migration), before release_policy and job_runner landed beneath it and made it
    # v021. That build never became a release and its commit is not in this history: the
    # state is rebuilt from its parts (FENCE_AS_V019 below).
    "v019-fence-by-role": "fence-by-role-as-v019",
}
FENCE_AS_V019 = STATES["v019-fence-by-role"]


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout


def first_parent_states() -> dict[str, str]:
    """One commit per distinct set of migration files (by content) on the previous release's
    first-parent history, oldest first: every schema a build of main could have left."""
    seen: dict[tuple[str, ...], str] = {}
    for commit in _git("rev-list", "--first-parent", "--reverse", STATES["previous-release"]).split():
        listing = _git("ls-tree", f"{commit}:{MIGRATIONS_DIR}") if _has_migrations(commit) else ""
        blobs = tuple(line.split()[2] for line in listing.splitlines() if FILE.match(line.split("\t")[-1]))
        if blobs:
            seen.setdefault(blobs, commit)
    return {f"main-{len(blobs)}-{commit[:8]}": commit for blobs, commit in seen.items()}


def _has_migrations(commit: str) -> bool:
    return bool(_git("ls-tree", "--name-only", commit, MIGRATIONS_DIR).strip())


def fence_by_role_as_v019() -> str:
    """fence_by_role as it was when it landed as v019: today's v021 without awa.may_lead in
    its grant, since that function (release_policy, today's v019) did not exist yet."""
    text = (ROOT / MIGRATIONS_DIR / "v021_fence_by_role.sql").read_text()
    granted = "'awa.prune_cron_jobs_changes(interval), awa.may_lead(uuid) TO %s'"
    assert text.count(granted) == 1 and text.count("may_lead") == 2  # the grant and its comment
    return text.replace(granted, "'awa.prune_cron_jobs_changes(interval) TO %s'")


def recorded_by(commit: str) -> list[tuple[int, str, str]]:
    """(version, name, text) of each migration file of `commit`, in version order."""
    if commit == FENCE_AS_V019:
        return [*recorded_by(STATES["previous-release"]), (19, "fence_by_role", fence_by_role_as_v019())]
    out = []
    for path in _git("ls-tree", "--name-only", f"{commit}:{MIGRATIONS_DIR}").split():
        match = FILE.match(path)
        if match:
            out.append((int(match[1]), match[2], _git("show", f"{commit}:{MIGRATIONS_DIR}/{path}")))
    return sorted(out)


def build_as(conn: psycopg.Connection[Any], commit: str) -> None:
    """The schema `commit`'s runner left: each file in order, recorded by (version, name)."""
    conn.execute("CREATE SCHEMA awa")
    conn.execute("CREATE TABLE awa.schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
                 " applied_at timestamptz NOT NULL DEFAULT now())")
    for version, name, text in recorded_by(commit):
        assert "-- include:" not in text  # those commits had no includes to resolve
        with conn.transaction():
            conn.execute(text)  # type: ignore[arg-type]
            conn.execute("INSERT INTO awa.schema_migrations (version, name) VALUES (%s, %s)", (version, name))


BOUNDARY = datetime(2026, 3, 1, 12, 2, tzinfo=UTC)
NOW = datetime(2026, 3, 1, 12, 3, 30, tzinfo=UTC)  # one instant due since the boundary: 12:03


def fill(conn: psycopg.Connection[Any]) -> None:
    """Schedules of two owners (where owners existed), a pause, an audit row: only the
    columns that schema had."""
    has_owner = conn.execute("SELECT count(*) AS n FROM information_schema.columns WHERE table_schema = 'awa' "
                             "AND table_name = 'cron_jobs' AND column_name = 'owner'").fetchone()["n"]
    rows = [("billing.hourly", "alpha", None), ("billing.paused", "alpha", "ops@x"), ("reports.daily", "beta", None),
            ("free", None, None)]
    for name, owner, paused_by in rows:
        conn.execute(
            "INSERT INTO awa.cron_jobs (name, cron_expr, kind, last_enqueued_at, paused_at, paused_by"
            + (", owner" if has_owner else "") + ") "
            "VALUES (%s, '* * * * *', 'upgrade.job', %s, CASE WHEN %s::text IS NULL THEN NULL ELSE now() END, %s"
            + (", %s" if has_owner else "") + ")",
            (name, BOUNDARY, paused_by, paused_by, *([owner] if has_owner else [])))
    if conn.execute("SELECT to_regclass('awa.audit_log') IS NOT NULL AS t").fetchone()["t"]:
        conn.execute("INSERT INTO awa.audit_log (operator, action, target) VALUES ('ops@x', 'pause', 'billing.paused')")


def kept(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    return [tuple(r.values()) for r in conn.execute(
        "SELECT name, cron_expr, to_jsonb(c) -> 'owner' AS owner, paused_by, last_enqueued_at "
        "FROM awa.cron_jobs c ORDER BY name").fetchall()]


ALL_STATES = {**STATES, **first_parent_states()}


@pytest.mark.parametrize("state", list(ALL_STATES))
def test_an_earlier_database_upgrades_to_the_fresh_schema_and_fires(
    state: str, empty_dsn: str, dsn: str
) -> None:
    with psycopg.connect(empty_dsn, autocommit=True, row_factory=dict_row) as conn:
        build_as(conn, ALL_STATES[state])
        fill(conn)
        before = kept(conn)
        audit_before = conn.execute(
            "SELECT operator, action, target FROM awa.audit_log WHERE action = 'pause' AND operator = 'ops@x'"
        ).fetchall() if conn.execute("SELECT to_regclass('awa.audit_log') IS NOT NULL AS t").fetchone()["t"] else []
        behind = migrations.read_status(conn)
        current = [(m.version, m.name) for m in migrations.available()]
        same = [(v, n) for v, n, _ in recorded_by(ALL_STATES[state])] == current and not behind.stale
        assert (behind.mismatch() is None) == same
    applied = migrations.migrate(empty_dsn)
    assert applied == [step.version for step in behind.pending]
    with psycopg.connect(empty_dsn, autocommit=True, row_factory=dict_row) as conn, \
            psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as fresh:
        assert migrations.read_status(conn).mismatch() is None
        upgraded, expected = schema_doc.render(conn), schema_doc.render(fresh)
        if state == "v008-v009-missing":
            # v010 added its three columns before v008 and v009 added theirs: a table's column
            # order is fixed when a column is added, so only the order of those rows may differ.
            moved = {line for line in difflib.ndiff(expected.splitlines(), upgraded.splitlines())
                     if line[:2] in ("- ", "+ ")}
            assert {line[2:].split(" | ")[0] for line in moved} == {"| cron_written", "| jitter_ms", "| overridden"}
            assert sorted(upgraded.splitlines()) == sorted(expected.splitlines())
        else:
            assert upgraded == expected  # the fresh schema, byte for byte
        assert kept(conn) == before
        assert conn.execute("SELECT operator, action, target FROM awa.audit_log "
                            "WHERE action = 'pause' AND operator = 'ops@x'").fetchall() == audit_before
    client = Client(empty_dsn, operator="upgrade@test")
    try:
        client.evaluate(NOW)
        client.evaluate(NOW)  # a second pass at the same instant fires nothing more
    finally:
        client.close()
    with psycopg.connect(empty_dsn, autocommit=True, row_factory=dict_row) as conn:
        fires = conn.execute(
            "SELECT metadata->>'cron_name' AS name, (metadata->>'cron_fire_time')::timestamptz AS at, count(*) AS n "
            "FROM awa.jobs GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
    instant = datetime(2026, 3, 1, 12, 3, tzinfo=UTC)
    assert [(f["name"], f["at"], f["n"]) for f in fires] == [
        ("billing.hourly", instant, 1), ("free", instant, 1), ("reports.daily", instant, 1)]


def test_a_failing_migration_names_itself_and_keeps_the_last_good_one(empty_dsn: str) -> None:
    # v008 fails on a table of the same name made by hand: v001..v007 stay applied.
    with psycopg.connect(empty_dsn, autocommit=True, row_factory=dict_row) as conn:
        build_as(conn, STATES["v008-v009-missing"])
        conn.execute("CREATE TABLE awa.cron_health (name text)")
    with pytest.raises(migrations.SchemaError) as caught:
        migrations.migrate(empty_dsn)
    assert re.fullmatch(r"v008 health failed: .+; nothing of it was applied and the database stays at the "
                        r"migrations it had \(`awa-tui migrate status` lists them\)", str(caught.value)), caught.value
    with psycopg.connect(empty_dsn, autocommit=True, row_factory=dict_row) as conn:
        versions = [r["version"] for r in conn.execute("SELECT version FROM awa.schema_migrations ORDER BY 1")]
    assert versions == [1, 2, 3, 4, 5, 6, 7, 10]


def test_commands_on_a_database_behind_say_so_and_migrate_lists_the_plan(empty_dsn: str) -> None:
    from cli_helpers import awa, one_line_error

    with psycopg.connect(empty_dsn, autocommit=True, row_factory=dict_row) as conn:
        build_as(conn, STATES["v004-missing"])
    needs = f"this awa-tui {awa_tui.__version__} needs {migrations.code_version()}: run `awa-tui migrate`"
    for command in (("cron", "list"), ("cron", "show", "x"), ("jobs", "list")):
        assert one_line_error(awa(*command, "--dsn", empty_dsn)) == f"error: this database is at schema 6; {needs}"
    plan = awa("migrate", "--dry-run", "--dsn", empty_dsn)
    lines = plan.stdout.splitlines()
    assert (plan.returncode, plan.stderr, lines[0]) == (0, "", "would apply, in order:")
    expected = [m for m in migrations.available() if m.version == 4 or m.version > 6]
    assert [line.split(":")[0].strip() for line in lines[1:]] == [f"v{m.version:03d} {m.name}" for m in expected]
    assert lines[1] == "  v004 row_guards: locks awa.cron_jobs, awa.jobs (ACCESS EXCLUSIVE on the first two)"
    status = awa("migrate", "status", "--dsn", empty_dsn, "--json")
    data = json.loads(status.stdout)
    assert [a["version"] for a in data["applied"]] == [1, 2, 3, 5, 6]
    assert [p["version"] for p in data["pending"]] == [m.version for m in expected]
    assert (data["database"], data["unknown"], data["renumbered"]) == (6, [], [])
    assert awa("migrate", "--dsn", empty_dsn).returncode == 0
    assert awa("cron", "list", "--dsn", empty_dsn).returncode == 0


def test_every_migration_from_v019_on_undoes_to_the_previous_schema_and_redoes(dsn: str, empty_dsn: str) -> None:
    """Each undoing (migrations/down/) ends at the schema just before it; v018 is the
    previous release's, built from its own files."""
    with psycopg.connect(empty_dsn, autocommit=True, row_factory=dict_row) as conn:
        build_as(conn, STATES["previous-release"])
        previous = schema_doc.render(conn, current=False)
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        fresh = schema_doc.render(conn)
    later = [m.version for m in migrations.available() if m.version > 18]  # numbers may skip one
    assert migrations.migrate_down(dsn, 18) == later[::-1]
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        assert schema_doc.render(conn, current=False) == previous
    assert migrations.migrate(dsn) == later
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        assert schema_doc.render(conn) == fresh
    with pytest.raises(migrations.SchemaError) as caught:
        migrations.migrate_down(dsn, 17)
    assert str(caught.value) == ("cannot migrate down to 17: v018 calendars has no undoing (only v019 and later "
                                 "do); restore a backup instead")


PRIVILEGES_SQL = """
SELECT p.oid::regprocedure::text AS function, p.prosecdef, p.proconfig, pg_get_functiondef(p.oid) AS definition,
       (SELECT array_agg(g.entry ORDER BY g.entry)
        FROM (SELECT a.grantee::regrole::text || ' ' || a.privilege_type AS entry
              FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a) g) AS execute
FROM pg_proc p WHERE p.pronamespace = 'awa'::regnamespace ORDER BY 1
"""


def _privileges(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Every function of the schema: its whole definition, SECURITY DEFINER or not, its
    settings and who may execute it (a default ACL spelled out, so PUBLIC's default EXECUTE
    and an explicit grant to PUBLIC compare equal)."""
    return conn.execute(PRIVILEGES_SQL).fetchall()


def test_v021_undoes_to_the_schema_and_privileges_before_it(dsn: str, empty_dsn: str) -> None:
    """Undoing v021 (the fence by capability) ends at the schema of the migrations before it,
    applied one by one from their files: the same schema document, the same function
    definitions and the same EXECUTE privileges (PUBLIC's back where v021 took it away,
    the runtime role's grant of v021 gone); applying it again gives the fresh schema."""
    with psycopg.connect(empty_dsn, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("CREATE SCHEMA awa")
        conn.execute("CREATE TABLE awa.schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
                     " applied_at timestamptz NOT NULL DEFAULT now())")
        for migration in migrations.available():
            if migration.version < 21:
                with conn.transaction():
                    conn.execute(migration.applied_sql())  # type: ignore[arg-type]
                    conn.execute("INSERT INTO awa.schema_migrations (version, name) VALUES (%s, %s)",
                                 (migration.version, migration.name))
        before, before_privileges = schema_doc.render(conn, current=False), _privileges(conn)
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        fresh, fresh_privileges = schema_doc.render(conn), _privileges(conn)
        conn.execute("DROP ROLE IF EXISTS sec_down_runtime")
        conn.execute("CREATE ROLE sec_down_runtime NOLOGIN")
        conn.execute("GRANT EXECUTE ON FUNCTION awa.prune_cron_jobs_changes(interval) TO sec_down_runtime")
        granted = conn.execute("SELECT has_function_privilege('public', 'awa.prune_cron_jobs_changes(interval)', "
                               "'EXECUTE') AS public").fetchone()
        assert granted is not None and granted["public"] is False  # v021 took PUBLIC's away: the fault to undo
    try:
        undone = migrations.migrate_down(dsn, 20)
        with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
            after, after_privileges = schema_doc.render(conn, current=False), _privileges(conn)
        newer = [m.version for m in migrations.available() if m.version > 21]
        assert undone == [*newer[::-1], 21]
        assert after == before, "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True)))
        assert after_privileges == before_privileges
        assert migrations.migrate(dsn) == [21, *newer]
        with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
            assert (schema_doc.render(conn), _privileges(conn)) == (fresh, fresh_privileges)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("REVOKE ALL ON FUNCTION awa.prune_cron_jobs_changes(interval) FROM sec_down_runtime")
            conn.execute("DROP ROLE sec_down_runtime")


def test_a_database_with_fence_by_role_as_v019_upgrades_to_the_fresh_schema_and_privileges(
    dsn: str, empty_dsn: str
) -> None:
    """A database of the main that had fence_by_role as v019 (the previous release's files
    and fence_by_role as it was then) is not
    refused: its v019 is recognised as today's v021, release_policy and job_runner are filled
    in beneath it, and the rest run. The result has the fresh schema and the fresh EXECUTE
    privileges: v029 takes awa.may_lead from PUBLIC, which there got it after v021 had made
    every SECURITY DEFINER function explicit-grant only."""
    with psycopg.connect(empty_dsn, autocommit=True, row_factory=dict_row) as conn:
        build_as(conn, STATES["v019-fence-by-role"])
        status = migrations.read_status(conn)
        assert status.unknown == ()
        assert [r.describe() for r in status.renumbered] == ["v019 fence_by_role is today's v021"]
        expected = [m.version for m in migrations.available() if m.version >= 19 and m.version != 21]
        assert [s.version for s in status.pending] == expected
    assert migrations.migrate(empty_dsn) == expected
    with psycopg.connect(empty_dsn, autocommit=True, row_factory=dict_row) as conn, \
            psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as fresh:
        assert migrations.read_status(conn).mismatch() is None
        assert (schema_doc.render(conn), _privileges(conn)) == (schema_doc.render(fresh), _privileges(fresh))
        granted = conn.execute("SELECT has_function_privilege('public', 'awa.may_lead(uuid)', 'EXECUTE') AS p")
        assert granted.fetchone() == {"p": False}
