"""S78, S61: undoing v034 drops a runtime's events and refusal columns; a runtime of this
release still running on the rolled-back schema keeps reporting (without them), and its
events and the runtimes list still read (its start from the row's own column)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import dict_row

from awa_tui import Client
from awa_tui.engine import migrations
from awa_tui.engine.read.events import runtime_events


def _columns(conn: psycopg.Connection[Any]) -> set[str]:
    rows = conn.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = 'awa' "
                        "AND table_name = 'runtime_instances'").fetchall()
    return {r["column_name"] for r in rows}


def test_a_runtime_keeps_reporting_on_the_schema_before_its_events(dsn: str, client: Client) -> None:
    version = next(m.version for m in migrations.available() if m.name == "runtime_events")
    client.runtime.recent_events.record("refused to lead", "pooler in transaction mode")
    client.runtime.snapshot()
    newer = [m.version for m in migrations.available() if m.version >= version]
    assert migrations.migrate_down(dsn, version - 1) == newer[::-1]
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:  # type: ignore[arg-type]
        assert {"recent_events", "lead_refusal"} & _columns(conn) == set()
        conn.execute("UPDATE awa.runtime_instances SET leader_protocol = NULL")
        client.runtime.snapshot()  # the fallback statement: no error, and every column it still has written
        seen = conn.execute("SELECT last_seen_at, started_at, leader_protocol FROM awa.runtime_instances").fetchone()
        assert seen is not None and seen["last_seen_at"] > seen["started_at"]
        assert seen["leader_protocol"] == client.identity.leader_protocol  # not the fallback for before v019
        found = runtime_events(conn, client.identity.instance_id)
        assert found is not None and [(e.kind, e.at) for e in found.events] == [("started", seen["started_at"])]
        assert [r.lead_refusal for r in client.reads.list_runtimes()] == [None]
    assert migrations.migrate(dsn) == newer
    client.runtime.snapshot()
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:  # type: ignore[arg-type]
        found = runtime_events(conn, client.identity.instance_id)
        assert found is not None and found.events[0].kind == "refused to lead"
