"""Schema detection (awa-tui / upstream Awa / none) and the migration runner's refusal to
touch a schema awa-tui did not create. Upstream databases are migrated by awa-pg itself."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from awa_tui.engine.core.errors import SchemaError
from awa_tui.engine.migrations import migrate
from awa_tui.engine.migrations.detect import detect_schema, refuse_foreign_schema
from awa_tui.engine.upstream.models import SchemaInfo

MIGRATIONS_DIR = Path(__file__).resolve().parents[3] / "awa_tui" / "engine" / "migrations"


def _connect(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True, row_factory=dict_row)  # type: ignore[arg-type]


def _relations(conn: psycopg.Connection[Any]) -> list[str]:
    return [r["relname"] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'awa' ORDER BY c.relname"
    ).fetchall()]


def _columns(conn: psycopg.Connection[Any], table: str) -> list[str]:
    return [r["column_name"] for r in conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'awa' AND table_name = %s "
        "ORDER BY ordinal_position", (table,)
    ).fetchall()]


def test_detects_awa_tuis_own_schema(conn: psycopg.Connection[Any]) -> None:
    newest = max(int(m.group(1)) for p in MIGRATIONS_DIR.iterdir() if (m := re.match(r"v(\d{3})_", p.name)))
    expected = SchemaInfo("awa-tui", newest, f"awa-tui schema version {newest} (awa.schema_migrations)")
    assert detect_schema(conn) == expected


def test_detects_no_schema(empty_dsn: str) -> None:
    with _connect(empty_dsn) as conn:
        assert detect_schema(conn) == SchemaInfo("none", None, "no awa schema")
        conn.execute("CREATE SCHEMA awa")
        assert detect_schema(conn) == SchemaInfo("none", None, "an empty awa schema")


def test_detects_upstream_schema_with_its_own_version(upstream_conn: Any, awa_pg_schema_version: int) -> None:
    assert detect_schema(upstream_conn) == SchemaInfo(
        "upstream", awa_pg_schema_version,
        f"upstream Awa (awa-pg) schema version {awa_pg_schema_version} (awa.schema_version)",
    )


def test_an_empty_schema_migrations_left_by_an_old_migrate_does_not_hide_upstream(
    upstream_conn: Any, awa_pg_schema_version: int
) -> None:
    # What `awa-tui migrate` used to leave behind on an upstream database before it failed.
    upstream_conn.execute("CREATE TABLE awa.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, "
                          "applied_at timestamptz NOT NULL DEFAULT now())")
    info = detect_schema(upstream_conn)
    assert info == SchemaInfo(
        "upstream", awa_pg_schema_version,
        f"upstream Awa (awa-pg) schema version {awa_pg_schema_version} (awa.schema_version); "
        "an empty awa.schema_migrations left by an earlier awa-tui migrate",
    )


def test_migrate_refuses_an_upstream_schema_and_writes_nothing(upstream_dsn: str, awa_pg_schema_version: int) -> None:
    with _connect(upstream_dsn) as conn:
        relations = _relations(conn)
        cron_columns = _columns(conn, "cron_jobs")
        versions = conn.execute("SELECT version, description, applied_at FROM awa.schema_version").fetchall()
    with pytest.raises(SchemaError) as err:
        migrate(upstream_dsn)
    assert str(err.value) == (
        f"refusing to migrate: this database holds an upstream Awa (awa-pg) schema version {awa_pg_schema_version} "
        "(awa.schema_version); awa-tui migrations would damage it (operate it in upstream mode, "
        "or give awa-tui its own database)"
    )
    with _connect(upstream_dsn) as conn:
        assert _relations(conn) == relations
        assert "schema_migrations" not in relations
        assert _columns(conn, "cron_jobs") == cron_columns
        assert conn.execute("SELECT version, description, applied_at FROM awa.schema_version").fetchall() == versions


def test_awa_tui_migrate_command_refuses_in_one_line(upstream_dsn: str, awa_pg_schema_version: int) -> None:
    done = subprocess.run([sys.executable, "-m", "awa_tui", "migrate", "--dsn", upstream_dsn],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"refusing to migrate: this database holds an upstream Awa (awa-pg) schema version " \
           f"{awa_pg_schema_version} (awa.schema_version)" in lines[0]
    assert "already exists" not in done.stderr


def test_migrate_refuses_an_awa_schema_of_unknown_origin(empty_dsn: str) -> None:
    with _connect(empty_dsn) as conn:
        conn.execute("CREATE SCHEMA awa")
        conn.execute("CREATE TABLE awa.cron_jobs (name text PRIMARY KEY, schedule text)")
    with pytest.raises(SchemaError) as err:
        migrate(empty_dsn)
    assert str(err.value) == (
        "refusing to migrate: awa schema of unknown origin: 1 relations and no version table "
        "(neither awa.schema_migrations nor awa.schema_version); awa-tui leaves a schema it did not create alone"
    )
    with _connect(empty_dsn) as conn:
        assert _relations(conn) == ["cron_jobs", "cron_jobs_pkey"]
        assert _columns(conn, "cron_jobs") == ["name", "schedule"]


def test_foreign_migration_names_are_not_taken_for_awa_tui(empty_dsn: str) -> None:
    with _connect(empty_dsn) as conn:
        conn.execute("CREATE SCHEMA awa")
        conn.execute("CREATE TABLE awa.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, "
                     "applied_at timestamptz NOT NULL DEFAULT now())")
        conn.execute("INSERT INTO awa.schema_migrations (version, name) VALUES (1, E'someone\\x1b[2Jelse')")
        info = detect_schema(conn)
        assert info == SchemaInfo(
            "none", None,
            "awa schema of unknown origin: awa.schema_migrations records v1 as 'someone\\x1b[2Jelse', "
            "not awa-tui's 'core'",
        )
        with pytest.raises(SchemaError):
            refuse_foreign_schema(conn)


def test_migrate_still_creates_and_upgrades_its_own_schema(empty_dsn: str) -> None:
    # Every migration file's number, in order (numbers may skip: a branch's migration keeps its number).
    files = sorted(int(m.group(1)) for p in MIGRATIONS_DIR.iterdir() if (m := re.match(r"v(\d{3})_", p.name)))
    assert migrate(empty_dsn) == files
    assert migrate(empty_dsn) == []
    with _connect(empty_dsn) as conn:
        assert detect_schema(conn).kind == "awa-tui"
