"""S64 through the real executable: `cron create`, `cron edit`, `cron delete` round-trip with
their audit rows; `--dry-run` shows the definition and the next fires and writes nothing;
`cron list` and `cron show` say which kind a schedule is; bad input is one line, exit 2."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from cli_helpers import awa, awa_json, one_line_error, table

from awa_tui import Client


def _audit(conn: psycopg.Connection[Any], name: str) -> list[tuple[str, str]]:
    rows = conn.execute("SELECT action, operator FROM awa.audit_log WHERE target = %s ORDER BY id", (name,)).fetchall()
    return [(r["action"], r["operator"]) for r in rows]


def test_s64_create_edit_delete_round_trip_with_audit_rows(dsn: str, conn: psycopg.Connection[Any]) -> None:
    created = awa("cron", "create", "report-acme", "--cron", "0 8 * * 1", "--kind", "report.build",
                  "--timezone", "Europe/Paris", "--args", '{"tenant": "acme"}', "--tag", "tenants",
                  "--exclude", "2026-12-21..2027-01-03", "--dsn", dsn, "--operator", "alice@ops")
    assert (created.returncode, created.stderr) == (0, "")
    assert created.stdout == "created report-acme: 0 8 * * 1 (Europe/Paris), owner app\n"
    row = conn.execute("SELECT * FROM awa.cron_jobs WHERE name = 'report-acme'").fetchone()
    assert (row["origin"], row["owner"], row["args"], row["tags"], row["exclude_dates"]) == (
        "api", "app", {"tenant": "acme"}, ["tenants"], [["2026-12-21", "2027-01-03"]])

    edited = awa("cron", "edit", "report-acme", "--cron", "30 9 * * 1-5", "--queue", "reports",
                 "--dsn", dsn, "--operator", "bob@ops")
    assert (edited.returncode, edited.stderr, edited.stdout) == (
        0, "", "edited report-acme: 30 9 * * 1-5 (Europe/Paris)\n")
    row = conn.execute("SELECT cron_expr, queue, tags, args FROM awa.cron_jobs WHERE name = 'report-acme'").fetchone()
    assert row == {"cron_expr": "30 9 * * 1-5", "queue": "reports", "tags": ["tenants"], "args": {"tenant": "acme"}}

    deleted = awa("cron", "delete", "report-acme", "--dsn", dsn, "--operator", "carol@ops")
    assert (deleted.returncode, deleted.stderr, deleted.stdout) == (0, "", "deleted report-acme\n")
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone()["n"] == 0
    assert _audit(conn, "report-acme") == [("create", "alice@ops"), ("redefine", "bob@ops"), ("remove", "carol@ops")]


def test_s64_dry_run_shows_the_definition_and_next_fires_and_writes_nothing(
        dsn: str, conn: psycopg.Connection[Any]) -> None:
    # Counted by hand: Mondays 08:00 Paris in March 2037 (after today, whenever the test
    # runs); the clocks go forward on Sunday 29 March, so 30 March is 06:00Z, the rest 07:00Z.
    result = awa("cron", "create", "r", "--cron", "0 8 * * 1", "--kind", "k", "--timezone", "Europe/Paris",
                 "--start-at", "2037-03-01T00:00:00Z", "--exclude", "2037-03-16", "-n", "4", "--dry-run",
                 "--dsn", dsn)
    assert (result.returncode, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert lines[0] == "dry run: r would be created; nothing written"
    assert "cron" in lines[1] and lines[1].endswith("0 8 * * 1")
    fires = lines[lines.index("next fires of r (zone Europe/Paris; local time, then UTC):") + 1:]
    assert fires == [
        "  2037-03-02 08:00:00 CET (UTC+0100)  2037-03-02T07:00:00Z",
        "  2037-03-09 08:00:00 CET (UTC+0100)  2037-03-09T07:00:00Z",
        "  2037-03-16 08:00:00 CET (UTC+0100)  2037-03-16T07:00:00Z  [excluded: 2037-03-16]",
        "  2037-03-23 08:00:00 CET (UTC+0100)  2037-03-23T07:00:00Z",
        "  2037-03-30 08:00:00 CEST (UTC+0200)  2037-03-30T06:00:00Z",
    ]
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone()["n"] == 0
    assert conn.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone()["n"] == 0
    out = awa_json("cron", "create", "r", "--cron", "0 8 * * 1", "--kind", "k", "--dry-run", "--dsn", dsn)
    assert (out["name"], out["dry_run"], out["definition"]["cron_expr"], out["owner"]) == (
        "r", True, "0 8 * * 1", "app")
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone()["n"] == 0


def test_s64_edit_dry_run_counts_the_fires_made_against_max_fires(
        dsn: str, conn: psycopg.Connection[Any], client: Client) -> None:
    # Mondays 08:00 UTC from March 2037 (2 March 2037 is a Monday); three fires made so far,
    # as the leader counts them, so a cap of 4 leaves one.
    client.create_schedule("capped", "0 8 * * 1", "k", owner="app", max_fires=5,
                           start_at=datetime(2037, 3, 1, tzinfo=UTC))
    conn.execute("UPDATE awa.cron_jobs SET fires_count = 3 WHERE name = 'capped'")
    result = awa("cron", "edit", "capped", "--max-fires", "4", "-n", "5", "--dry-run", "--dsn", dsn)
    assert (result.returncode, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert "3 of its at most 4 fires made; 1 left" in lines
    assert lines[lines.index("next fires of capped (zone UTC; local time, then UTC):") + 1:] == [
        "  2037-03-02 08:00:00 UTC (UTC+0000)  2037-03-02T08:00:00Z"]
    out = awa_json("cron", "edit", "capped", "--max-fires", "6", "-n", "5", "--dry-run", "--dsn", dsn)
    assert (out["fires_made"], [f["utc"][:10] for f in out["next_fires"]]) == (
        3, ["2037-03-02", "2037-03-09", "2037-03-16"])
    row = conn.execute("SELECT max_fires, fires_count FROM awa.cron_jobs WHERE name = 'capped'").fetchone()
    assert row == {"max_fires": 5, "fires_count": 3}  # a dry run writes nothing


def test_s64_list_and_show_say_which_kind_a_schedule_is(dsn: str, client: Client) -> None:
    client.periodic("declared", "0 * * * *", "k")
    client.sync()
    client.create_schedule("made", "0 * * * *", "k", owner="tenants")
    listed = {r["NAME"]: r["ORIGIN"] for r in table(awa("cron", "list", "--dsn", dsn).stdout)}
    assert listed == {"declared": "in code", "made": "at run time"}
    shown = awa("cron", "show", "made", "--dsn", dsn).stdout.splitlines()
    assert [line.split(None, 1)[1] for line in shown if line.startswith("origin ")] == ["made at run time"]
    assert awa_json("cron", "show", "declared", "--dsn", dsn)["origin"] == "code"


@pytest.mark.parametrize(("args", "expected"), [
    (("create", "declared", "--cron", "* * * * *", "--kind", "k"),
     "error: name: 'declared' is taken by a schedule declared in code"),
    (("create", "made", "--cron", "* * * * *", "--kind", "k"),
     "error: name: 'made' is held by owner 'tenants', not 'app'"),
    (("create", "made", "--cron", "* * * * *", "--kind", "k", "--owner", "tenants"),
     "error: name: 'made' already exists"),
    (("create", "x", "--cron", "* * * * *", "--kind", "k", "--timezone", "Mars/Olympus"), "error: timezone:"),
    (("create", "x", "--cron", "61 * * * *", "--kind", "k"), "error: cron_expr:"),
    (("create", "x", "--kind", "k"), "error: --cron: required to create a schedule"),
    (("create", "x", "--cron", "* * * * *", "--kind", "k", "--calendar", "holidays"),
     "error: calendar: schedule 'x' names unknown calendar 'holidays'"),
    (("create", "x", "--cron", "* * * * *", "--kind", "k", "--args", "{nope"), "error: --args: not valid JSON"),
    (("edit", "declared", "--queue", "q"), "error: name: 'declared' is declared in code and cannot be edited"),
    (("edit", "made", "--owner", "billing", "--queue", "q"), "error: name: 'made' is held by owner 'tenants'"),
    (("edit", "made"), "error: edit: nothing to change"),
    (("delete", "declared"), "error: name: 'declared' is declared in code and cannot be deleted"),
    (("delete", "missing"), "error: name: unknown schedule 'missing'"),
])
def test_s64_bad_input_is_one_line_exit_1_and_nothing_written(
        dsn: str, conn: psycopg.Connection[Any], client: Client, args: tuple[str, ...], expected: str) -> None:
    client.periodic("declared", "0 * * * *", "k")
    client.sync()
    client.create_schedule("made", "0 * * * *", "k", owner="tenants")
    before = conn.execute("SELECT * FROM awa.cron_jobs ORDER BY name").fetchall()
    audits = conn.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone()["n"]
    result = awa("cron", *args, "--dsn", dsn)
    assert one_line_error(result).startswith(expected)
    assert result.returncode == 1  # as every command's refusal; 2 is for usage errors
    assert conn.execute("SELECT * FROM awa.cron_jobs ORDER BY name").fetchall() == before
    assert conn.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone()["n"] == audits
