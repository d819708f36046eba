"""S74, S61: the overlap policy replace's migration raises the leading floor to protocol 4
and its undoing turns a replace schedule into skip (audited), puts the floor back and
refuses 'replace' again as the guard did before it."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from awa_tui import Client
from awa_tui.engine import migrations


def _floor(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT min_leader_protocol FROM awa.release_policy WHERE singleton").fetchone()
    assert row is not None
    return int(row["min_leader_protocol"])


def test_undoing_replace_turns_its_schedules_into_skip_and_lowers_the_floor(dsn: str, client: Client) -> None:
    version = next(m.version for m in migrations.available() if m.name == "overlap_replace")
    client.periodic("rep", "* * * * *", "k", overlap="replace")
    client.periodic("buf", "* * * * *", "k", overlap="buffer_one")
    client.sync()
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:  # type: ignore[arg-type]
        assert _floor(conn) == 4
    newer = [m.version for m in migrations.available() if m.version >= version]
    assert migrations.migrate_down(dsn, version - 1) == newer[::-1]
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:  # type: ignore[arg-type]
        rows = conn.execute("SELECT name, overlap FROM awa.cron_jobs ORDER BY name").fetchall()
        assert [(r["name"], r["overlap"]) for r in rows] == [("buf", "buffer_one"), ("rep", "skip")]
        audit = conn.execute("SELECT operator, before, after FROM awa.audit_log WHERE target = 'rep' "
                             "AND action = 'redefine'").fetchall()
        assert audit == [{"operator": "awa-migrate", "before": {"overlap": "replace"}, "after": {"overlap": "skip"}}]
        assert _floor(conn) == 3
        with pytest.raises(psycopg.errors.CheckViolation,
                           match=r"^overlap: must be 'allow', 'skip' or 'buffer_one', got \"replace\""):
            conn.execute("UPDATE awa.cron_jobs SET overlap = 'replace' WHERE name = 'buf'")
    assert migrations.migrate(dsn) == newer
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:  # type: ignore[arg-type]
        assert _floor(conn) == 4
        conn.execute("UPDATE awa.cron_jobs SET overlap = 'replace' WHERE name = 'buf'")
