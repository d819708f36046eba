"""Which schedules mixed manifests disagree on (S34's mixed_manifests blocker): the hashes
alone tell an operator that two deploys differ, not what to look at."""

from __future__ import annotations

from typing import Any

import psycopg

NAMED = 5  # names in the message; the rest counted

# One publisher per hash; a name differs when its definitions differ or some manifest lacks it.
DIFFERING_SQL = """
WITH m AS (
    SELECT r.instance_id, e.key AS name, e.value AS definition
    FROM awa.runtime_instances r CROSS JOIN LATERAL jsonb_each(r.manifest) e
    WHERE r.instance_id = ANY(%(ids)s)
)
SELECT name FROM m GROUP BY name
HAVING count(DISTINCT definition) > 1 OR count(*) < %(publishers)s
ORDER BY name
"""


def differing_names(conn: psycopg.Connection[Any], declarations: list[dict[str, Any]]) -> list[str]:
    """The names whose definitions differ between the fresh declarations' manifests."""
    publishers: dict[str, Any] = {}
    for row in declarations:  # most recently seen first: one publisher per hash
        publishers.setdefault(row["manifest_hash"], row["instance_id"])
    rows = conn.execute(DIFFERING_SQL, {"ids": list(publishers.values()), "publishers": len(publishers)}).fetchall()
    return [r["name"] for r in rows]


def differing_text(names: list[str]) -> str:
    """'; they differ on a, b and 3 more' (empty when none is known)."""
    if not names:
        return ""
    more = f" and {len(names) - NAMED} more" if len(names) > NAMED else ""
    return f"; they differ on {', '.join(repr(n) for n in names[:NAMED])}{more}"
