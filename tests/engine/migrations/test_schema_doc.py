"""docs/schema.md is the schema after the last migration (`make schema-doc` writes it), and
migrations can include a function's body from awa_tui/engine/migrations/functions/."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from awa_tui import SchemaError
from awa_tui.engine import migrations
from awa_tui.engine.migrations import Migration, schema_doc

DOC = Path(__file__).resolve().parents[3] / "docs" / "schema.md"


def test_docs_schema_md_is_current(pg_admin_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The command `make schema-doc` runs, on the tests' server, into a temporary file."""
    fresh = tmp_path / "schema.md"
    monkeypatch.setenv("AWA_TEST_DATABASE_URL", pg_admin_dsn)
    assert schema_doc.main(["--output", str(fresh)]) == 0
    assert capsys.readouterr().out == f"wrote {fresh}\n"
    committed = DOC.read_text(encoding="utf-8")
    if fresh.read_text(encoding="utf-8") != committed:
        diff = "".join(list(difflib.unified_diff(
            committed.splitlines(keepends=True), fresh.read_text(encoding="utf-8").splitlines(keepends=True),
            "docs/schema.md", "regenerated"))[:40])
        pytest.fail(f"docs/schema.md is stale: regenerate it with `{schema_doc.COMMAND}`\n{diff}")


def test_the_document_names_every_table_trigger_and_function(conn: psycopg.Connection[Any]) -> None:
    """Counted from the catalogs here, independently of the generator's queries."""
    text = schema_doc.render(conn)
    tables = [r["relname"] for r in conn.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = 'awa'::regnamespace AND relkind = 'r'")]
    triggers = [r["tgname"] for r in conn.execute(
        "SELECT tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
        "WHERE c.relnamespace = 'awa'::regnamespace AND NOT t.tgisinternal")]
    functions = conn.execute(
        "SELECT count(*) AS n FROM pg_proc WHERE pronamespace = 'awa'::regnamespace").fetchone()["n"]
    policies = [(r["relname"], r["polname"]) for r in conn.execute(
        "SELECT c.relname, p.polname FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid "
        "WHERE c.relnamespace = 'awa'::regnamespace")]
    assert len(tables) == 31 and sorted(f"### awa.{t}" for t in tables) == sorted(
        line for line in text.splitlines() if line.startswith("### awa.") and "(" not in line)
    assert all(f"- {t}: `CREATE TRIGGER {t} " in text for t in triggers)
    # Row-level security (v032, v033): each secured table says so and names its policy.
    assert len(policies) == 15
    assert all(f"- {p}: `PERMISSIVE FOR ALL TO public USING (true) WITH CHECK (true)`"
               in text.split(f"### awa.{t}\n")[1].split("\n### ")[0] for t, p in policies)
    assert sum(1 for line in text.splitlines() if line.startswith("### awa.") and "(" in line) == functions
    # A trigger function names the triggers that run it.
    fence = text.split("### awa.cron_jobs_fence()")[1].split("```")[0]
    assert "Used by triggers: `cron_jobs.cron_jobs_fence`." in fence


def test_a_table_missing_from_the_map_is_named(conn: psycopg.Connection[Any]) -> None:
    conn.execute("CREATE TABLE awa.unmapped_probe (id int)")
    with pytest.raises(schema_doc.SchemaDocError, match=r"no purpose line for table\(s\) unmapped_probe: add"):
        schema_doc.render(conn)


def _with(monkeypatch: pytest.MonkeyPatch, extra: Migration) -> None:
    every = migrations.available()
    monkeypatch.setattr(migrations, "available", lambda: [*every, extra])


def test_an_included_function_is_applied(dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "functions").mkdir()
    (tmp_path / "functions" / "include_probe.sql").write_text(
        "CREATE FUNCTION awa.include_probe() RETURNS text LANGUAGE sql AS $$ SELECT 'from the file' $$;\n")
    version = migrations.code_version() + 1
    text = "-- a later migration\n-- include: functions/include_probe.sql\nSELECT 1;\n"
    _with(monkeypatch, Migration(version, "include_probe", text, root=tmp_path))
    assert migrations.migrate(dsn) == [version]
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        assert conn.execute("SELECT awa.include_probe() AS v").fetchone() == {"v": "from the file"}
        assert conn.execute("SELECT max(version) AS v FROM awa.schema_migrations").fetchone() == {"v": version}
    where = schema_doc.defined_in()
    assert where["include_probe"] == f"functions/include_probe.sql (included by v{version:03d}_include_probe.sql)"
    assert where["fence_grant"] == "v021_fence_by_role.sql"  # grep: its last CREATE
    assert where["cron_jobs_fence"] == "functions/cron_jobs_fence.sql (included by v035_audited_job_writes.sql)"


def test_a_missing_include_fails_in_one_line_before_anything_runs(
    dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = migrations.code_version() + 1
    text = "CREATE TABLE awa.must_not_exist (id int);\n-- include: functions/nowhere.sql\n"
    _with(monkeypatch, Migration(version, "broken", text, root=tmp_path))
    with pytest.raises(SchemaError) as caught:
        migrations.migrate(dsn)
    assert str(caught.value) == (
        f"migration v{version:03d}_broken.sql: included file functions/nowhere.sql does not exist")
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        assert conn.execute("SELECT to_regclass('awa.must_not_exist') AS t").fetchone() == {"t": None}
        assert conn.execute("SELECT max(version) AS v FROM awa.schema_migrations").fetchone() == {
            "v": version - 1}


def test_an_include_outside_the_functions_folder_is_refused() -> None:
    broken = Migration(99, "escape", "-- include: ../v001_core.sql\n")
    with pytest.raises(SchemaError, match=r"^migration v099_escape.sql: `-- include: ../v001_core.sql` must name "
                                          r"functions/<name>.sql$"):
        broken.applied_sql()


def test_the_packaged_migrations_have_no_include_lines_yet() -> None:
    """v001..v017 ran before includes existed: their text is what databases applied."""
    assert [m.version for m in migrations.available() if m.applied_sql() != m.sql and m.version <= 17] == []
