"""What the console's ATTENTION line says on every panel besides the leader lock (S75): the
worst unhealthy schedule (S42) and the kinds whose jobs wait with no live runtime to run
them, in one statement added to each refresh.

The worst schedule comes through the partial index of unhealthy health rows (a lookup);
the unserved kinds are a scan of the waiting jobs, so the console asks for them only now
and then (`unserved=False` leaves them out and they come back None).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg

from awa_tui.engine.health.check import UNSERVED_AFTER, UNSERVED_SQL
from awa_tui.engine.health.models import ConsoleAttention, UnservedKind
from awa_tui.engine.read.page import Attention
from awa_tui.engine.read.views import UNHEALTHY_COUNTS_SQL, WORST_SQL

ATTENTION_SQL = """
SELECT w.name, w.health, w.since, w.reason,
       (SELECT coalesce(sum(c.n), 0)::int FROM ({counts}) c) AS unhealthy,
       {unserved} AS unserved
FROM (SELECT 1) one LEFT JOIN LATERAL ({worst}) w ON true
"""
UNSERVED_JSON = ("(SELECT coalesce(jsonb_agg(jsonb_build_object('kind', u.kind, 'n', u.n, 'queues', u.queues) "
                 "ORDER BY u.kind), '[]'::jsonb) FROM ({sql}) u)")


def console_attention(conn: psycopg.Connection[Any], now: datetime, *, unserved: bool) -> ConsoleAttention:
    sql = ATTENTION_SQL.format(counts=UNHEALTHY_COUNTS_SQL, worst=WORST_SQL,
                               unserved=UNSERVED_JSON.format(sql=UNSERVED_SQL) if unserved else "NULL::jsonb")
    row = conn.execute(sql, {"now": now, "grace": UNSERVED_AFTER}).fetchone()
    assert row is not None  # FROM (SELECT 1): always one row
    worst = Attention(row["name"], row["health"], row["since"], row["reason"]) if row["name"] else None
    kinds = None if row["unserved"] is None else tuple(
        UnservedKind(u["kind"], u["n"], tuple(u["queues"])) for u in row["unserved"])
    return ConsoleAttention(row["unhealthy"], worst, kinds)
