"""S65 and S66 through the real executable: `cron pause NAME --until --reason` (one name and
a filter), shown by `cron list` and `cron show`, edited by pausing again, cancelled by
resuming; bad input refused in one line with nothing stored. The CLI has no clock of its
own: durations are read back against the pause's own start, in the database."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
from cli_helpers import awa, awa_json, one_line_error, table

from awa_tui import Client


def _row(conn: psycopg.Connection[Any], name: str) -> dict[str, Any]:
    row = conn.execute("SELECT paused_at, paused_by, paused_until, pause_reason FROM awa.cron_jobs WHERE name = %s",
                       (name,)).fetchone()
    assert row is not None
    return row


def _stamp(value: Any) -> str:
    return str(value.strftime("%Y-%m-%d %H:%M:%S%z"))


def test_pause_until_with_a_reason_is_shown_edited_and_cancelled(
    dsn: str, client: Client, conn: psycopg.Connection[Any]
) -> None:
    client.periodic("nightly", "0 2 * * *", "billing.run", missed_fire_policy="catch_up", catchup_window="1h")
    client.sync()
    out = awa("cron", "pause", "nightly", "--until", "2h", "--reason", "db migration", "--operator", "alice",
              "--dsn", dsn)
    assert out.returncode == 0, out.stderr
    row = _row(conn, "nightly")
    assert row["paused_until"] - row["paused_at"] == timedelta(hours=2)  # the duration runs from the pause
    assert out.stdout == f"paused nightly until {_stamp(row['paused_until'])}: db migration\n"
    listed = table(awa("cron", "list", "--dsn", dsn).stdout)
    assert listed[0]["STATE"] == (f"PAUSED until {_stamp(row['paused_until'])} by alice since "
                                  f"{_stamp(row['paused_at'])}: db migration")
    shown = awa_json("cron", "show", "nightly", "--dsn", dsn)
    assert (shown["pause_reason"], shown["catchup_window"]) == ("db migration", 3600)
    assert shown["paused_until"] == row["paused_until"].isoformat()
    # Pausing again with a new end edits it (and who holds the pause); the reason stays.
    edited = awa("cron", "pause", "nightly", "--until", "2030-01-01T14:00:00Z", "--operator", "bob", "--dsn", dsn)
    assert edited.returncode == 0, edited.stderr
    assert edited.stdout == "paused nightly until 2030-01-01 14:00:00+0000: db migration\n"
    assert _row(conn, "nightly")["paused_by"] == "bob"
    resumed = awa("cron", "resume", "nightly", "--operator", "bob", "--dsn", dsn)
    assert resumed.returncode == 0, resumed.stderr
    assert _row(conn, "nightly") == {"paused_at": None, "paused_by": None, "paused_until": None,
                                     "pause_reason": None}


def test_pause_by_filter_with_an_end(dsn: str, client: Client, conn: psycopg.Connection[Any]) -> None:
    for name in ("b1", "b2", "x1"):
        client.periodic(name, "* * * * *", "k")
    client.sync()
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute("UPDATE awa.cron_jobs SET owner = 'billing' WHERE name LIKE 'b%'")
    out = awa("cron", "pause", "--filter", "owner:billing", "--until", "90m", "--reason", "window",
              "--operator", "alice", "--dsn", dsn)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "paused 2 of 2 selected schedule(s) in 1 batch(es)"
    for name in ("b1", "b2"):
        row = _row(conn, name)
        assert (row["paused_until"] - row["paused_at"], row["pause_reason"]) == (timedelta(minutes=90), "window")
    assert _row(conn, "x1")["paused_at"] is None


def test_bad_input_is_one_line_and_stores_nothing(dsn: str, client: Client, conn: psycopg.Connection[Any]) -> None:
    client.periodic("ends", "* * * * *", "k", end_at=client.reads.db_time() + timedelta(hours=1))
    client.sync()
    cases = [
        (["--until", "soon"], "error: --until: expected a duration (90s, 2h, 1d) or an ISO-8601 instant, got 'soon'"),
        (["--until", "2020-01-01T00:00:00Z"], "error: until: 2020-01-01T00:00:00+00:00 is not in the future (now "),
        (["--until", "3h"], "error: until: "),
        (["--reason", "a\tb"], "error: reason: one line of 1..500 printable characters is required"),
    ]
    for args, start in cases:
        line = one_line_error(awa("cron", "pause", "ends", *args, "--operator", "alice", "--dsn", dsn))
        assert line.startswith(start), line
    assert "is after the schedule's end" in one_line_error(
        awa("cron", "pause", "ends", "--until", "3h", "--dsn", dsn))
    assert _row(conn, "ends") == {"paused_at": None, "paused_by": None, "paused_until": None, "pause_reason": None}
    assert conn.execute("SELECT count(*) AS n FROM awa.audit_log WHERE target = 'ends'").fetchone() == {"n": 0}
