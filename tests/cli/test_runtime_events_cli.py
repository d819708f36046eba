"""`awa-tui runtime events ID`: a runtime's recent events from its snapshot row (written by
hand here: the oracle), as a table and as --json with stable keys; `runtime list` says a
refusal to lead in ROLE while --json keeps role and lead_refusal apart."""

from __future__ import annotations

from typing import Any

import psycopg
from cli_helpers import awa, awa_json, one_line_error, table
from psycopg.types.json import Jsonb

from awa_tui import Client

EVENTS = [
    {"at": "2025-03-08T12:00:27+00:00", "kind": "refused to lead", "detail": "pooler in transaction mode"},
    {"at": "2025-03-08T12:00:26+00:00", "kind": "started", "detail": ""},
]


def _refusing(client: Client, conn: psycopg.Connection[Any]) -> str:
    client.runtime.snapshot()
    conn.execute("UPDATE awa.runtime_instances SET recent_events = %s, lead_refusal = 'pooler in transaction mode'",
                 (Jsonb(EVENTS),))
    return str(client.identity.instance_id)


def test_runtime_events_as_a_table_and_as_json(dsn: str, client: Client, conn: psycopg.Connection[Any]) -> None:
    instance = _refusing(client, conn)
    data = awa_json("runtime", "events", instance, "--dsn", dsn)
    assert list(data) == ["instance_id", "hostname", "pid", "now", "events", "refusal"]
    assert (data["instance_id"], data["refusal"]) == (instance, "pooler in transaction mode")
    assert data["events"] == [{"at": "2025-03-08T12:00:27+00:00", "kind": "refused to lead",
                               "detail": "pooler in transaction mode"},
                              {"at": "2025-03-08T12:00:26+00:00", "kind": "started", "detail": ""}]
    result = awa("runtime", "events", instance, "--dsn", dsn)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "refused: pooler in transaction mode; it never competes for the leader lock"
    assert table(result.stdout) == [
        {"AT": "2025-03-08 12:00:27+0000", "EVENT": "refused to lead", "DETAIL": "pooler in transaction mode"},
        {"AT": "2025-03-08 12:00:26+0000", "EVENT": "started", "DETAIL": "-"}]


def test_runtime_list_says_the_refusal_in_role(dsn: str, client: Client, conn: psycopg.Connection[Any]) -> None:
    instance = _refusing(client, conn)
    rows = awa_json("runtime", "list", "--dsn", dsn)
    assert [(r["instance_id"], r["role"], r["lead_refusal"]) for r in rows] == [
        (instance, "follower", "pooler in transaction mode")]
    result = awa("runtime", "list", "--dsn", dsn)
    assert [r["ROLE"] for r in table(result.stdout)] == ["refused: pooler in transaction mode"]
    # The control: a runtime that competes reads its role.
    conn.execute("UPDATE awa.runtime_instances SET lead_refusal = NULL")
    assert [r["ROLE"] for r in table(awa("runtime", "list", "--dsn", dsn).stdout)] == ["follower"]


def test_an_unknown_or_malformed_id_in_one_line(dsn: str) -> None:
    assert one_line_error(awa("runtime", "events", "nope", "--dsn", dsn)) == (
        "error: no runtime 'nope': no snapshot row has that id (`runtime list` shows them)")
    assert one_line_error(awa("runtime", "events", "6f1c2a9e-0000-4000-8000-00000000ffff", "--dsn", dsn)) == (
        "error: no runtime '6f1c2a9e-0000-4000-8000-00000000ffff': no snapshot row has that id "
        "(`runtime list` shows them)")
