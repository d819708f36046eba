"""Interval schedules through the real executable: `cron create --every`, shown in words by
`cron list`, `cron show` and `cron next` (`--json` keeps the stored expression); bad
`--every` refused in one line, nothing written."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from cli_helpers import awa, awa_json, one_line_error, table


def test_create_every_then_list_show_next_in_words(dsn: str, conn: psycopg.Connection[Any]) -> None:
    # 15 minutes counted from 2037-03-01T00:07:00Z (after today, whenever the test runs).
    dry = awa("cron", "create", "poll", "--every", "15m", "--kind", "poll.run", "--timezone", "Europe/Paris",
              "--start-at", "2037-03-01T00:07:00Z", "-n", "3", "--dry-run", "--dsn", dsn)
    assert (dry.returncode, dry.stderr) == (0, "")
    lines = dry.stdout.splitlines()
    assert lines[lines.index("next fires of poll (zone Europe/Paris; local time, then UTC):") + 1:] == [
        "  2037-03-01 01:07:00 CET (UTC+0100)  2037-03-01T00:07:00Z",
        "  2037-03-01 01:22:00 CET (UTC+0100)  2037-03-01T00:22:00Z",
        "  2037-03-01 01:37:00 CET (UTC+0100)  2037-03-01T00:37:00Z",
    ]
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone()["n"] == 0  # type: ignore[index]

    created = awa("cron", "create", "poll", "--every", "15m", "--kind", "poll.run", "--timezone", "Europe/Paris",
                  "--start-at", "2037-03-01T00:07:00Z", "--dsn", dsn, "--operator", "alice@ops")
    assert (created.returncode, created.stderr, created.stdout) == (
        0, "", "created poll: every 15m (Europe/Paris), owner app\n")
    row = conn.execute("SELECT cron_expr, timezone FROM awa.cron_jobs WHERE name = 'poll'").fetchone()
    assert row == {"cron_expr": "@every 15m", "timezone": "Europe/Paris"}

    listed = awa("cron", "list", "--dsn", dsn)
    assert [(r["NAME"], r["CRON"]) for r in table(listed.stdout)] == [("poll", "every 15m")]
    assert [s["cron_expr"] for s in awa_json("cron", "list", "--dsn", dsn)] == ["@every 15m"]

    shown = awa("cron", "show", "poll", "--dsn", dsn)
    assert "interval                 every 15m, counted from 2037-03-01T00:07:00Z" in shown.stdout.splitlines()

    following = awa("cron", "next", "poll", "-n", "2", "--after", "2037-03-01T00:30:00Z", "--dsn", dsn)
    assert following.stdout.splitlines() == [
        "poll: every 15m, counted from 2037-03-01T00:07:00Z",
        "next fires of poll (zone Europe/Paris; local time, then UTC):",
        "  2037-03-01 01:37:00 CET (UTC+0100)  2037-03-01T00:37:00Z",
        "  2037-03-01 01:52:00 CET (UTC+0100)  2037-03-01T00:52:00Z",
    ]

    edited = awa("cron", "edit", "poll", "--every", "1h30m", "--dsn", dsn)
    assert (edited.returncode, edited.stderr, edited.stdout) == (0, "", "edited poll: every 1h30m (Europe/Paris)\n")


@pytest.mark.parametrize(("args", "expected"), [
    (("--every", "0s"), "error: --every: '0s' is zero; an interval is at least 1s"),
    (("--every", "-90s"), "error: --every: '-90s' is negative; an interval is at least 1s"),
    (("--every", "500ms"), "error: --every: '500ms' is below one second; an interval is at least 1s"),
    (("--every", "often"), "error: --every: expected a duration such as 90s, 15m, 1h30m, 14d, got 'often'"),
    (("--every", "400d"), "error: --every: '400d' is longer than 366 days"),
    (("--every", "90s", "--cron", "* * * * *"), "error: --every: give --cron or --every, not both"),
    (("--cron", "@every 0s"), "error: cron_expr: '0s' is zero; an interval is at least 1s"),
])
def test_bad_every_is_one_line_exit_1_and_nothing_written(
        dsn: str, conn: psycopg.Connection[Any], args: tuple[str, ...], expected: str) -> None:
    result = awa("cron", "create", "poll", "--kind", "k", *args, "--dsn", dsn)
    assert one_line_error(result) == expected
    assert result.returncode == 1
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone()["n"] == 0  # type: ignore[index]
