"""The leader's pause-end duty (awa.end_pauses, every second) stays a probe of its index when
nothing ends, call after call: PL/pgSQL switches a function's statement to a cached generic
plan after five calls, and v025's probe (an end compared with the call's instant) then read
the whole table each time. Counted by the transaction's own scan statistics, on 20,000
schedules; v025's body is the control."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

DOWN_V026 = (Path(__file__).resolve().parents[3] / "awa_tui" / "engine" / "migrations" / "down"
             / "v026_pause_ends_probe.sql")


def _whole_table_reads(conn: psycopg.Connection[Any], calls: int) -> int:
    """Sequential scans of awa.cron_jobs made by `calls` calls with nothing to end."""
    with conn.transaction(force_rollback=True):
        for _ in range(calls):
            assert conn.execute("SELECT * FROM awa.end_pauses(NULL, 1000, 'test')").fetchall() == []
        row = conn.execute("SELECT seq_scan FROM pg_stat_xact_user_tables "
                           "WHERE relid = 'awa.cron_jobs'::regclass").fetchone()
    assert row is not None
    return int(row["seq_scan"])


def test_nothing_to_end_reads_no_table_after_many_calls(conn: psycopg.Connection[Any], client: Any) -> None:
    client.migrate()
    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind) "
                 "SELECT 's' || n, '0 0 1 1 *', 'k' FROM generate_series(1, 20000) AS n")
    conn.execute("ANALYZE awa.cron_jobs")
    assert _whole_table_reads(conn, 12) == 0
    # The control: v025's function (what v026 undoes to), on a session of its own (a fresh
    # plan cache), reads the table once it plans generically.
    conn.execute(DOWN_V026.read_text())
    with psycopg.connect(conn.info.dsn, autocommit=True, row_factory=conn.row_factory) as fresh:
        assert _whole_table_reads(fresh, 12) >= 1
