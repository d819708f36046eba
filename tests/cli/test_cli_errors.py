"""S38 errors: exactly one line on stderr, non-zero exit, no traceback, no password."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from cli_helpers import awa, awa_many, cli_env, one_line_error

import awa_tui
from awa_tui import Client
from awa_tui.engine import migrations

UNREACHABLE = "postgresql://nobody:secret@127.0.0.1:1/x"

# Every issue-2 subcommand that talks to a database (migrate included).
DATABASE_COMMANDS = [
    ["migrate"],
    ["cron", "list"], ["cron", "show", "s"], ["cron", "next", "s"], ["cron", "pause", "s"],
    ["cron", "resume", "s"], ["cron", "trigger", "s"], ["cron", "remove", "s"],
    ["queue", "list"], ["queue", "pause", "q"], ["queue", "resume", "q"], ["queue", "drain", "q"],
    ["runtime", "list"], ["audit"],
]


def test_unreachable_database_is_one_line_without_the_password() -> None:
    results = awa_many([[*command, "--dsn", UNREACHABLE] for command in DATABASE_COMMANDS])
    for command, result in zip(DATABASE_COMMANDS, results, strict=True):
        line = one_line_error(result)
        assert line.startswith("error: cannot connect to nobody@127.0.0.1:1/x: "), (command, line)
        assert "secret" not in result.stdout + result.stderr, command


def test_unreachable_keyword_dsn_hides_the_password_too() -> None:
    result = awa("cron", "list", "--dsn", "host=127.0.0.1 port=1 user=nobody password=secret dbname=x")
    assert one_line_error(result).startswith("error: cannot connect to nobody@127.0.0.1:1/x: ")
    assert "secret" not in result.stderr


def test_malformed_dsn_is_one_line_without_the_password() -> None:
    result = awa("cron", "list", "--dsn", "postgresql://nobody:secret@127.0.0.1:notaport/x")
    one_line_error(result)
    assert "secret" not in result.stderr


@pytest.mark.parametrize("verb", ["show", "next", "pause", "resume", "trigger", "remove"])
def test_unknown_schedule(dsn: str, verb: str) -> None:
    assert one_line_error(awa("cron", verb, "no-such", "--dsn", dsn)) == "error: unknown schedule 'no-such'"


def test_unknown_queue(dsn: str) -> None:
    results = awa_many([["queue", verb, "nowhere", "--dsn", dsn] for verb in ("pause", "resume", "drain")])
    for result in results:
        assert one_line_error(result) == "error: unknown queue 'nowhere' (no schedule or job uses it)"


def test_database_without_the_schema(empty_dsn: str) -> None:
    commands = [c for c in DATABASE_COMMANDS if c != ["migrate"]]
    results = awa_many([[*command, "--dsn", empty_dsn] for command in commands])
    for command, result in zip(commands, results, strict=True):
        line = one_line_error(result)
        assert "run `awa-tui migrate`" in line, (command, line)


def test_database_newer_than_the_code(dsn: str, conn: psycopg.Connection[Any]) -> None:
    conn.execute("INSERT INTO awa.schema_migrations (version, name) VALUES (999, 'from_the_future')")
    assert one_line_error(awa("migrate", "--dsn", dsn)) == (
        f"error: this database is at schema 999, newer than this awa-tui {awa_tui.__version__} "
        f"(which knows up to {migrations.code_version()}): upgrade awa-tui"
    )


@pytest.mark.parametrize("label", ["", "   ", "two\nlines", "x" * 201])
def test_invalid_operator(dsn: str, client: Client, conn: psycopg.Connection[Any], label: str) -> None:
    client.periodic("s", "* * * * *", "k")
    client.sync()
    line = one_line_error(awa("cron", "pause", "s", "--operator", label, "--dsn", dsn))
    assert line.startswith("error: operator: a label of 1..200 printable characters is required, got ")
    assert conn.execute("SELECT paused_at FROM awa.cron_jobs").fetchone() == {"paused_at": None}


def test_wrong_state_is_a_one_line_conflict(dsn: str, client: Client) -> None:
    client.periodic("s", "* * * * *", "k")
    client.sync()
    assert one_line_error(awa("cron", "resume", "s", "--dsn", dsn)) == "error: schedule 's' is not paused"


def test_bad_after_instant(dsn: str, client: Client) -> None:
    client.periodic("s", "* * * * *", "k")
    client.sync()
    assert one_line_error(awa("cron", "next", "s", "--after", "tomorrow", "--dsn", dsn)) == (
        "error: --after: expected an ISO-8601 instant such as 2025-03-08T00:00:00Z, got 'tomorrow'"
    )


def test_hand_written_bad_row_is_one_line(dsn: str, conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind) VALUES ('bad', '* * * * *', 'Mars/X', 'k')"
    )
    assert one_line_error(awa("cron", "next", "bad", "--dsn", dsn)) == "error: timezone: unknown time zone 'Mars/X'"


def test_no_database_configured(tmp_path: Path) -> None:
    # A private embedded home, not running: the user's own embedded server, if it runs, would be used.
    result = awa("cron", "list", env=cli_env(AWA_EMBEDDED_HOME=str(tmp_path)))
    assert one_line_error(result) == (
        "error: no database configured: pass --dsn or set AWA_DATABASE_URL (or DATABASE_URL, PG* variables)"
    )


def test_check_with_no_database_cannot_tell(tmp_path: Path) -> None:
    """A monitoring system reads exit 3 (cannot tell) and its UNKNOWN line, not a usage error."""
    result = awa("check", env=cli_env(AWA_EMBEDDED_HOME=str(tmp_path)))
    assert result.returncode == 3
    assert result.stdout == (
        "UNKNOWN: no database configured: pass --dsn or set AWA_DATABASE_URL (or DATABASE_URL, PG* variables)\n")


def test_a_stopped_embedded_server_is_named(tmp_path: Path) -> None:
    """An embedded home that was initialised (its data directory says which Postgres) and is
    stopped: commands say so and how to start it, not that no database is configured."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "PG_VERSION").write_text("15\n")  # what initdb leaves; no postmaster.pid: stopped
    result = awa("cron", "list", env=cli_env(AWA_EMBEDDED_HOME=str(tmp_path)))
    assert one_line_error(result) == (
        f"error: no database configured, and the embedded Postgres at {tmp_path} is stopped: start it with "
        "`awa-tui db start`, or pass --dsn (or set AWA_DATABASE_URL)")


def test_a_multi_host_failure_names_every_host(dsn: str) -> None:
    """A dead first host (nothing listens on port 1) and a live primary asked for a standby:
    the line gives each host's reason, not only the last one tried."""
    from psycopg.conninfo import conninfo_to_dict

    info = conninfo_to_dict(dsn)
    host, port = info.get("host") or "127.0.0.1", info.get("port") or "5432"
    multi = (f"host=127.0.0.1,{host} port=1,{port} user={info.get('user') or 'postgres'} dbname={info['dbname']} "
             "target_session_attrs=standby")
    # How the URL itself is named is describe_dsn's business (tested on its own); the reasons are this test's.
    from awa_tui.engine.core.db import describe_dsn

    assert one_line_error(awa("cron", "list", "--dsn", multi)) == (
        f"error: cannot connect to {describe_dsn(multi)}: "
        f"every host failed: 127.0.0.1:1 Connection refused; {host}:{port} server is not in hot standby mode")


def test_values_are_printed_literally_not_as_markup(dsn: str, client: Client) -> None:
    client.periodic("[red]alarm[/red]", "* * * * *", "k")
    client.sync()
    result = awa("cron", "list", "--dsn", dsn)
    assert result.returncode == 0 and "[red]alarm[/red]" in result.stdout


def test_usage_errors_are_one_line_too() -> None:
    results = awa_many([["cron", "pause"], ["cron", "next", "s", "-n", "0"], ["cron", "frobnicate"]])
    lines = [one_line_error(result) for result in results]
    assert lines[0] == "error: Missing argument 'name' (or --filter EXPR). (see `awa-tui cron pause --help`)"
    assert all("--help" in line for line in lines)
    assert [r.returncode for r in results] == [2, 2, 2]
