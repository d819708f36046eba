"""The CLI and a Client's sync through Debian's real PgBouncer in transaction mode (S57):
reads (which open read-only connections the pooler cannot make read-only at start-up),
single and bulk writes (the protocol lock is a transaction lock), and the --leader-dsn
options, whose errors quote nothing of the URL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cli_helpers import awa, cli_env, one_line_error
from psycopg.conninfo import conninfo_to_dict
from reliability.pgbouncer import PgBouncer, pgbouncer

from awa_tui import Client

NAMES = ["pool.a", "pool.b", "pool.c"]


@pytest.fixture
def bouncer(pg_admin_dsn: str, tmp_path: Path) -> Iterator[PgBouncer]:
    with pgbouncer(pg_admin_dsn, "transaction", tmp_path) as b:
        yield b


def through(bouncer: PgBouncer, dsn: str) -> str:
    return bouncer.dsn(str(conninfo_to_dict(dsn)["dbname"]))


def test_sync_and_the_cli_through_a_transaction_pooler(dsn: str, conn: psycopg.Connection[Any],
                                                       bouncer: PgBouncer) -> None:
    pooled = through(bouncer, dsn)
    clients = [Client(pooled, operator="t@pool", application_name=f"pool-{i}") for i in range(2)]
    try:
        for c in clients:
            for name in NAMES:
                c.periodic(name, "*/5 * * * *", "pool.k")
        for _ in range(4):  # past psycopg's threshold for preparing, on two clients of one pool
            for c in clients:
                c._generation += 1  # a changed registry: each sync compares again (S50)
                c.sync()
                c.runtime.snapshot()
        assert {"pool-0", "pool-1"} <= set(bouncer.clients())
    finally:
        for c in clients:
            c.close()
    rows = conn.execute("SELECT name FROM awa.cron_jobs ORDER BY name").fetchall()
    assert [r["name"] for r in rows] == NAMES

    listed = awa("cron", "list", "--dsn", pooled, "--json", env=cli_env())
    assert listed.returncode == 0, listed.stderr
    assert sorted(r["name"] for r in json.loads(listed.stdout)) == NAMES
    for args in (["cron", "pause", "pool.a"], ["cron", "trigger", "--filter", "pool.", "--operator", "t@pool"],
                 ["cron", "resume", "pool.a"], ["cron", "show", "pool.b"], ["runtime", "list"], ["jobs", "list"]):
        result = awa(*args, "--dsn", pooled, env=cli_env())
        assert result.returncode == 0, (args, result.stderr)
        assert "prepared statement" not in result.stderr
    jobs = conn.execute("SELECT count(*) AS n FROM awa.jobs WHERE metadata ? 'triggered_manually'").fetchone()
    assert jobs == {"n": 3}
    actions = conn.execute("SELECT action, target FROM awa.audit_log ORDER BY id").fetchall()
    assert [(r["action"], r["target"]) for r in actions if r["action"] in ("pause", "resume")] == [
        ("pause", "pool.a"), ("resume", "pool.a")]


def test_leader_dsn_errors_quote_nothing_of_it(tmp_path: Path) -> None:
    secret = "pa55-w0rd"
    bad = f"postgresql://u:{secret}@h:5432/d?bogus=1"
    for args in (["run", "--demo", "--dsn", "postgresql://u@h/d", "--leader-dsn", bad],
                 ["--lead", "--demo", "--dsn", "postgresql://u@h/d", "--leader-dsn", bad]):
        line = one_line_error(awa(*args, env=cli_env()))
        assert line == "error: --leader-dsn: the database URL could not be parsed: an unknown query parameter"
        assert secret not in line
    env_line = one_line_error(awa("run", "--demo", "--dsn", "postgresql://u@h/d",
                                  env=cli_env(AWA_LEADER_DATABASE_URL=bad)))
    assert env_line == "error: --leader-dsn: the database URL could not be parsed: an unknown query parameter"
    missing = one_line_error(awa("run", "--demo", "--leader-dsn-file", str(tmp_path / "nope"), env=cli_env()))
    assert missing == f"error: --leader-dsn-file {str(tmp_path / 'nope')!r}: no such file"
    both = one_line_error(awa("run", "--demo", "--leader-dsn", "x", "--leader-dsn-file", "y", env=cli_env()))
    assert both == "error: --leader-dsn and --leader-dsn-file: pass one of them, not both"
    console = one_line_error(awa("--leader-dsn", "postgresql://u@h/d", "--dsn", "postgresql://u@h/d", env=cli_env()))
    assert console == "error: --leader-dsn is the in-process engine's leader connection: add --lead"
