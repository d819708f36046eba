"""`cron edit --clear SETTING` takes an optional setting of a schedule made at run time away
(it then stores what a create without the flag stores); a setting that cannot be cleared,
or one given a value too, is one line and writes nothing. `cron override` on a schedule
made at run time is refused in one line that says to use `cron edit`."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from cli_helpers import awa, one_line_error

from awa_tui import Client

DEFAULTS_SQL = ("SELECT args, metadata, tags, start_at, end_at, max_fires, jitter_ms, max_lateness, "
                "expect_success_within, max_consecutive_failures, pause_after_failures, exclude_dates "
                "FROM awa.cron_jobs WHERE name = %s")


def _audit(conn: psycopg.Connection[Any]) -> list[tuple[str, str, str]]:
    rows = conn.execute("SELECT action, operator, target FROM awa.audit_log ORDER BY id").fetchall()
    return [(r["action"], r["operator"], r["target"]) for r in rows]


def test_clear_takes_optional_settings_away(dsn: str, conn: psycopg.Connection[Any]) -> None:
    made = awa("cron", "create", "full", "--cron", "0 8 * * *", "--kind", "k", "--args", '{"a": 1}',
               "--metadata", '{"team": "x"}', "--tag", "t1", "--start-at", "2030-01-01T00:00:00Z",
               "--end-at", "2031-01-01T00:00:00Z", "--max-fires", "9", "--jitter", "30s", "--max-lateness", "5m",
               "--expect-success-within", "1h", "--max-consecutive-failures", "3", "--pause-after-failures", "4",
               "--exclude", "2030-12-25", "--dsn", dsn)
    assert (made.returncode, made.stderr) == (0, "")
    # The oracle: what a create without those flags stores.
    plain = awa("cron", "create", "plain", "--cron", "0 8 * * *", "--kind", "k", "--dsn", dsn)
    assert (plain.returncode, plain.stderr) == (0, "")
    expected = conn.execute(DEFAULTS_SQL, ("plain",)).fetchone()
    before = conn.execute(DEFAULTS_SQL, ("full",)).fetchone()
    assert [column for column in expected if before[column] == expected[column]] == []  # each one set, first

    cleared = awa("cron", "edit", "full", *[a for flag in ("args", "metadata", "tag", "start-at", "end-at",
                                                         "max-fires", "jitter", "max-lateness",
                                                         "expect-success-within", "max-consecutive-failures",
                                                         "pause-after-failures", "exclude")
                                            for a in ("--clear", flag)],
                  "--queue", "q2", "--dsn", dsn, "--operator", "bob@ops")
    assert (cleared.returncode, cleared.stderr, cleared.stdout) == (0, "", "edited full: 0 8 * * * (UTC)\n")
    assert conn.execute(DEFAULTS_SQL, ("full",)).fetchone() == expected
    assert conn.execute("SELECT queue FROM awa.cron_jobs WHERE name = 'full'").fetchone()["queue"] == "q2"
    assert _audit(conn)[-1] == ("redefine", "bob@ops", "full")


@pytest.mark.parametrize(("args", "expected"), [
    (("--clear", "cron"), "error: --clear: 'cron' is not an optional setting; one of args, metadata, tag, "),
    (("--clear", "end-at", "--end-at", "2032-01-01T00:00:00Z"), "error: --clear end-at and --end-at: give one of them"),
    (("--clear", "nope"), "error: --clear: 'nope' is not an optional setting"),
])
def test_clear_refuses_in_one_line_and_writes_nothing(dsn: str, conn: psycopg.Connection[Any], client: Client,
                                                      args: tuple[str, ...], expected: str) -> None:
    client.create_schedule("r", "0 8 * * *", "k", end_at=None, max_fires=3)
    before = conn.execute("SELECT * FROM awa.cron_jobs").fetchall()
    audits = _audit(conn)
    result = awa("cron", "edit", "r", *args, "--dsn", dsn)
    assert one_line_error(result).startswith(expected)
    assert result.returncode == 1
    assert conn.execute("SELECT * FROM awa.cron_jobs").fetchall() == before
    assert _audit(conn) == audits


def test_override_of_a_schedule_made_at_run_time_says_to_edit_it(dsn: str, conn: psycopg.Connection[Any],
                                                                  client: Client) -> None:
    client.create_schedule("made", "0 8 * * *", "k")
    before = conn.execute("SELECT * FROM awa.cron_jobs").fetchall()
    audits = _audit(conn)
    result = awa("cron", "override", "made", "--queue", "urgent", "--dsn", dsn)
    assert one_line_error(result) == ("error: schedule 'made' was made at run time: change it with awa-tui cron edit "
                                      "(console: e), not an override")
    assert result.returncode == 1
    assert conn.execute("SELECT * FROM awa.cron_jobs").fetchall() == before
    assert _audit(conn) == audits
    # Negative control: the same override of a schedule declared in code goes through.
    client.periodic("declared", "0 8 * * *", "k")
    client.sync()
    done = awa("cron", "override", "declared", "--queue", "urgent", "--dsn", dsn)
    assert (done.returncode, done.stderr) == (0, "")
