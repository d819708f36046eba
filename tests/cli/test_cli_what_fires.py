"""Issue 15 through the real executable: `cron backfill` (dry run, run, refusals as one
line) and a FINISHED schedule in `cron list`. The CLI has no clock of its own: the
scenario runs on DB time and the expected instants are read back from the database."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
from cli_helpers import awa, awa_json, one_line_error

from awa_tui import Client

M = timedelta(minutes=1)


def _missed_minutes(client: Client, conn: psycopg.Connection[Any]) -> tuple[Any, Any]:
    """A per-minute schedule created ten minutes ago whose first fire (coalesce: the latest
    minute) leaves the ten minutes before it unfired. Returns (created_at, first fire)."""
    client.periodic("tick", "* * * * *", "tick")
    client.sync()
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute("UPDATE awa.cron_jobs SET created_at = date_trunc('minute', now()) - interval '10 minutes'")
    client.evaluate()
    row = conn.execute("SELECT created_at, last_enqueued_at FROM awa.cron_jobs WHERE name = 'tick'").fetchone()
    return row["created_at"], row["last_enqueued_at"]


def test_cron_backfill_dry_run_then_run(dsn: str, client: Client, conn: psycopg.Connection[Any]) -> None:
    created, fired = _missed_minutes(client, conn)
    missed = int((fired - created) / M)  # created .. fired - 1 minute: never fired
    lo, hi = created.isoformat(), fired.isoformat()
    dry = awa_json("cron", "backfill", "tick", "--from", lo, "--to", hi, "--dry-run", "--dsn", dsn)
    assert (dry["count"], dry["already_fired"], dry["left_to_scheduler"], dry["job_ids"]) == (missed, 1, 0, [])
    assert conn.execute("SELECT count(*) AS n FROM awa.jobs WHERE metadata ? 'backfill'").fetchone()["n"] == 0
    text = awa("cron", "backfill", "tick", "--from", lo, "--to", hi, "--operator", "ops@host", "--dsn", dsn)
    assert text.returncode == 0, text.stderr
    zlo, zhi = created.strftime("%Y-%m-%dT%H:%M:%SZ"), fired.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert text.stdout.strip() == f"tick: enqueued {missed} backfill jobs for {zlo} .. {zhi}; 1 instant already fired"
    rows = conn.execute("SELECT (metadata ->> 'cron_fire_time')::timestamptz AS at FROM awa.jobs "
                        "WHERE metadata ->> 'backfilled_by' = 'ops@host' ORDER BY 1").fetchall()
    assert [r["at"] for r in rows] == [created + i * M for i in range(missed)]
    again = awa_json("cron", "backfill", "tick", "--from", lo, "--to", hi, "--dsn", dsn)
    assert (again["count"], again["already_fired"]) == (0, missed + 1)


def test_cron_backfill_refusals_are_one_line(dsn: str, client: Client, conn: psycopg.Connection[Any]) -> None:
    created, fired = _missed_minutes(client, conn)
    lo, hi = created.isoformat(), fired.isoformat()
    line = one_line_error(awa("cron", "backfill", "tick", "--from", hi, "--to", lo, "--dsn", dsn))
    assert line.startswith("error: backfill range reversed: from ")
    line = one_line_error(awa("cron", "backfill", "tick", "--from", lo, "--to", hi, "--max", "3", "--dsn", dsn))
    assert line == f"error: backfill of 'tick' would enqueue {int((fired - created) / M)} jobs, over the limit of 3; " \
                   "pass a higher max"
    line = one_line_error(awa("cron", "backfill", "tick", "--from", "yesterday", "--to", hi, "--dsn", dsn))
    assert line.startswith("error: --from: expected an ISO-8601 instant")
    assert conn.execute("SELECT count(*) AS n FROM awa.jobs WHERE metadata ? 'backfill'").fetchone()["n"] == 0


def test_cron_list_shows_finished(dsn: str, client: Client, conn: psycopg.Connection[Any]) -> None:
    client.periodic("once", "* * * * *", "tick", max_fires=1)
    client.sync()
    client.evaluate()
    finished = conn.execute("SELECT finished_at FROM awa.cron_jobs WHERE name = 'once'").fetchone()["finished_at"]
    assert finished is not None
    rows = awa_json("cron", "list", "--dsn", dsn)
    assert [(r["name"], r["state"], r["max_fires"], r["fires_count"]) for r in rows] == [("once", "finished", 1, 1)]
    text = awa("cron", "list", "--dsn", dsn)
    assert "FINISHED at " in text.stdout and "BROKEN" not in text.stdout
    assert awa_json("cron", "next", "once", "--dsn", dsn) == []
