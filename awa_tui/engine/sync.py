"""Additive sync of registered schedules into awa.cron_jobs (S5).

One statement UPSERTs the whole registry. A row is rewritten only when its definition
differs, so a steady-state sync writes nothing; owned and retired rows are left alone
(reconciliation alone updates owned definitions, S25; tombstones survive, S27).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import psycopg

from awa_tui.engine.audit import SYNC_LABEL, declare_actor
from awa_tui.engine.columns import DEFINITION, code_differs, keep_overridden_set, kept, listed, record_type, typed_input
from awa_tui.engine.schedule import Schedule

# The input rows, typed, from one jsonb parameter (one round trip for 100k rows).
INPUT_CTE = f"""
input AS (
    SELECT x.name, {typed_input("x")}
    FROM jsonb_to_recordset(%(rows)s::jsonb) AS x({record_type()})
)"""

# Issue 16: an overridden row is compared and written on its code side only (columns.py).
_SET = keep_overridden_set("c", "EXCLUDED")
_DIFFERS = code_differs("c", "EXCLUDED")
_CHANGED = f"(cur.owner IS NULL AND cur.retired_at IS NULL AND {code_differs('cur', 'i')})"

UPSERT_SQL = f"""
WITH {INPUT_CTE}
INSERT INTO awa.cron_jobs AS c (name, {listed(DEFINITION)})
SELECT i.name, {listed(DEFINITION, "i")} FROM input i
LEFT JOIN awa.cron_jobs cur ON cur.name = i.name
-- Unchanged rows are left out before the UPSERT: ON CONFLICT DO UPDATE ... WHERE false
-- still locks every conflicting row (a write: new xmax, WAL), 100k rows every 60 s.
WHERE cur.name IS NULL OR {_CHANGED}
ORDER BY i.name
ON CONFLICT (name) DO UPDATE SET {_SET},
    updated_at = now(),
    -- Only the expression and zone decide fire instants; keep the hint otherwise.
    next_fire_at = CASE WHEN (c.cron_expr, c.timezone) IS DISTINCT FROM
                             ({kept("c", "EXCLUDED", "cron_expr")}, {kept("c", "EXCLUDED", "timezone")})
                        THEN NULL ELSE c.next_fire_at END
WHERE c.owner IS NULL AND c.retired_at IS NULL AND {_DIFFERS}
RETURNING (xmax = 0) AS inserted
"""


def rows_json(schedules: Iterable[Schedule]) -> str:
    return json.dumps([s.definition() for s in schedules], separators=(",", ":"))


def sync_schedules(conn: psycopg.Connection[Any], schedules: Iterable[Schedule]) -> dict[str, int]:
    """UPSERT every schedule; returns how many rows were inserted and updated."""
    payload = rows_json(schedules)
    if payload == "[]":
        return {"inserted": 0, "updated": 0}
    with conn.transaction():
        # A changed definition of an existing row is audited by the database under this
        # label; a first registration is not (nothing existed to change).
        declare_actor(conn, SYNC_LABEL, "sync_definition")
        rows = conn.execute(UPSERT_SQL, {"rows": payload}).fetchall()  # type: ignore[arg-type]
    inserted = sum(1 for r in rows if r["inserted"])
    return {"inserted": inserted, "updated": len(rows) - inserted}
