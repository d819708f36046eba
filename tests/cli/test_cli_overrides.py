"""Issue 16 through the real executable: `cron override`, `cron reset`, and H shown
resolved beside the written expression by `cron next`, `cron show` and --json."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from cli_helpers import awa, awa_json

from awa_tui import Client


@pytest.fixture
def deployed(client: Client) -> Client:
    client.periodic("billing.invoices", "H/15 * * * *", "k", {"v": 1})
    client.sync()
    return client


def _row(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    row = conn.execute("SELECT cron_expr, cron_written, timezone, args, queue, priority, overridden "
                       "FROM awa.cron_jobs WHERE name = 'billing.invoices'").fetchone()
    assert row is not None
    return row


def test_next_and_show_give_the_resolved_beside_the_written(dsn: str, deployed: Client) -> None:
    text = awa("cron", "next", "billing.invoices", "--dsn", dsn, "-n", "2", "--after", "2025-01-01T00:00:00Z")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        "billing.invoices: H/15 * * * * resolves to 9,24,39,54 * * * *",
        "next fires of billing.invoices (zone UTC; local time, then UTC):",
        "  2025-01-01 00:09:00 UTC (UTC+0000)  2025-01-01T00:09:00Z",
        "  2025-01-01 00:24:00 UTC (UTC+0000)  2025-01-01T00:24:00Z",
    ]
    shown = awa_json("cron", "show", "billing.invoices", "--dsn", dsn)
    assert (shown["cron_expr"], shown["cron_written"], shown["jitter_ms"], shown["overridden"]) == (
        "9,24,39,54 * * * *", "H/15 * * * *", 0, None)


def test_override_then_reset(dsn: str, conn: psycopg.Connection[Any], deployed: Client) -> None:
    result = awa("cron", "override", "billing.invoices", "--cron", "*/5 * * * *", "--timezone", "Europe/Paris",
                 "--args", '{"v": 2}', "--queue", "urgent", "--priority", "1", "--dsn", dsn, "--operator", "alice@ops")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.strip() == (
        "overridden billing.invoices: args, cron_expr, cron_written, priority, queue, timezone "
        "(effective: */5 * * * * Europe/Paris, queue urgent, priority 1)")
    assert _row(conn) == {
        "cron_expr": "*/5 * * * *", "cron_written": None, "timezone": "Europe/Paris", "args": {"v": 2},
        "queue": "urgent", "priority": 1,
        "overridden": {"cron_expr": "9,24,39,54 * * * *", "cron_written": "H/15 * * * *", "timezone": "UTC",
                       "args": {"v": 1}, "queue": "default", "priority": 2}}
    listed = awa("cron", "list", "--dsn", dsn)
    assert "active OVERRIDDEN (args, cron_expr, cron_written, priority, queue, timezone)" in listed.stdout
    deployed.periodic("plain", "0 * * * *", "k")
    deployed.sync()
    assert [r["name"] for r in awa_json("cron", "list", "--filter", "overridden", "--dsn", dsn)] == [
        "billing.invoices"]
    assert [r["name"] for r in awa_json("cron", "list", "--filter", "-overridden", "--dsn", dsn)] == ["plain"]
    reset = awa_json("cron", "reset", "billing.invoices", "--dsn", dsn, "--operator", "alice@ops")
    assert (reset["cron_expr"], reset["cron_written"], reset["queue"], reset["overridden"]) == (
        "9,24,39,54 * * * *", "H/15 * * * *", "default", None)
    audit = awa_json("audit", "--target", "billing.invoices", "--dsn", dsn)
    assert [(e["action"], e["operator"]) for e in audit][:2] == [("override_reset", "alice@ops"),
                                                                 ("override", "alice@ops")]


@pytest.mark.parametrize(("options", "message"), [
    (["--args", "{nope"], "error: --args: not valid JSON (Expecting property name enclosed in double quotes): '{nope'"),
    (["--args", "[1]"], "error: args: must be a JSON object (dict), got [1]"),
    (["--cron", "H(9-3) * * * *"], "error: cron_expr: empty or out-of-range H range 'H(9-3)' in the minute field "
                                  "of 'H(9-3) * * * *' (the field allows 0-59)"),
    (["--priority", "7"], "error: priority: must be an integer 1..4, got 7"),
    ([], "error: override: nothing to change; give a cron expression, time zone, args, queue or priority"),
])
def test_bad_override_is_one_line_and_writes_nothing(
    dsn: str, conn: psycopg.Connection[Any], deployed: Client, options: list[str], message: str
) -> None:
    before = _row(conn)
    result = awa("cron", "override", "billing.invoices", *options, "--dsn", dsn, "--operator", "alice@ops")
    assert result.returncode != 0
    assert result.stderr.strip() == message
    assert _row(conn) == before
