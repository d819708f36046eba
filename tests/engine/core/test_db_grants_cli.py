"""`awa-tui db grants [--prefix P] [--apply] [--dsn ...]`, run as an operator's shell would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
from audit_helpers import drop_layout, unique_prefix

_SCRIPT = Path(sys.executable).with_name("awa-tui")
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "awa_tui"]
_DB_VARIABLES = ("AWA_DATABASE_URL", "DATABASE_URL", "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER",
                 "PGSERVICE", "PGPASSWORD")


def awa(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in _DB_VARIABLES}
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, env=env, timeout=60,
                          stdin=subprocess.DEVNULL)


def privileges(conn: Any, prefix: str) -> dict[str, dict[str, bool]]:
    checks = {
        "insert audit": "has_table_privilege({r}, 'awa.audit_log', 'INSERT')",
        "update audit": "has_table_privilege({r}, 'awa.audit_log', 'UPDATE')",
        "select audit": "has_table_privilege({r}, 'awa.audit_log', 'SELECT')",
        "insert schedules": "has_table_privilege({r}, 'awa.cron_jobs', 'INSERT')",
        "pause": "has_column_privilege({r}, 'awa.cron_jobs', 'paused_at', 'UPDATE')",
        "fire": "has_column_privilege({r}, 'awa.cron_jobs', 'last_enqueued_at', 'UPDATE')",
        "gate": "has_function_privilege({r}, 'awa.begin_action(text, text, jsonb)', 'EXECUTE')",
    }
    out = {}
    for key in ("runtime", "operator", "readonly"):
        role = f"{prefix}{key}"
        row = conn.execute("SELECT " + ", ".join(f"{sql.format(r='%(r)s')} AS \"{name}\""
                                                 for name, sql in checks.items()), {"r": role}).fetchone()
        out[key] = dict(row)
    return out


EXPECTED = {
    "runtime": {"insert audit": False, "update audit": False, "select audit": True, "insert schedules": True,
                "pause": False, "fire": True, "gate": False},
    "operator": {"insert audit": False, "update audit": False, "select audit": True, "insert schedules": False,
                 "pause": True, "fire": True, "gate": True},
    "readonly": {"insert audit": False, "update audit": False, "select audit": True, "insert schedules": False,
                 "pause": False, "fire": False, "gate": False},
}


def test_printed_sql_runs_as_is_and_grants_the_layout(conn: psycopg.Connection[Any]) -> None:
    prefix = unique_prefix()
    result = awa("db", "grants", "--prefix", prefix)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    script = result.stdout
    assert script.startswith("BEGIN;\n") and script.endswith("COMMIT;\n")
    try:
        conn.execute(script)  # type: ignore[arg-type]  # what an administrator pipes into psql
        assert privileges(conn, prefix) == EXPECTED
        owner = conn.execute("SELECT nspowner::regrole::text AS o FROM pg_namespace WHERE nspname = 'awa'").fetchone()
        assert owner["o"] == f"{prefix}owner"
        logins = conn.execute("SELECT count(*) AS n FROM pg_roles WHERE starts_with(rolname, %s) AND rolcanlogin",
                              (prefix,)).fetchone()
        assert logins["n"] == 0  # group roles only: grant them to login roles
    finally:
        drop_layout(conn, prefix)


def test_apply_reports_in_json_and_applying_again_is_harmless(conn: psycopg.Connection[Any], dsn: str) -> None:
    prefix = unique_prefix()
    roles = [f"{prefix}{r}" for r in ("owner", "runtime", "operator", "readonly")]
    try:
        first = awa("db", "grants", "--prefix", prefix, "--apply", "--dsn", dsn, "--json")
        assert first.returncode == 0 and first.stderr == "", first.stderr
        data = json.loads(first.stdout)
        assert (data["prefix"], data["roles"]) == (prefix, roles)
        again = awa("db", "grants", "--prefix", prefix, "--apply", "--dsn", dsn)
        assert again.returncode == 0, again.stderr
        assert again.stdout == f"applied the role layout: {', '.join(roles)} ({data['statements']} statements)\n"
        assert privileges(conn, prefix) == EXPECTED
    finally:
        drop_layout(conn, prefix)


def test_a_bad_prefix_is_one_line_naming_it_and_creates_nothing(conn: psycopg.Connection[Any], dsn: str) -> None:
    for bad in ("Awa-", "1x_", "x" * 42, "a;DROP ROLE postgres;--"):
        result = awa("db", "grants", "--prefix", bad, "--apply", "--dsn", dsn)
        assert result.returncode == 1 and result.stdout == ""
        assert result.stderr == (
            "error: prefix: lower-case letters, digits and _ (1..41, not starting with a digit) required, "
            f"got {bad!r}\n")
    assert conn.execute("SELECT count(*) AS n FROM pg_roles WHERE rolname ~ '^(Awa-|1x_|xxxx|a;)'").fetchone() == {
        "n": 0}


def test_apply_without_a_database_says_so() -> None:
    result = awa("db", "grants", "--apply")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == ("error: no database configured: pass --dsn or set AWA_DATABASE_URL "
                             "(or DATABASE_URL, PG* variables)\n")
