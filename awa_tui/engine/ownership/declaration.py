"""Sync of an authoritative runtime's declared schedules (S22, S23).

New names are inserted at once, owned by the declaring owner. Existing rows are never
changed here: owned definitions are updated by reconciliation alone (S25), unowned names
stay unowned and show up as plan conflicts until an operator adopts them, retired names
stay inert (S30). A name owned by another owner fails startup, naming both owners.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import psycopg

from awa_tui.engine.core.db import PROTOCOL_LOCK_KEY
from awa_tui.engine.core.errors import Conflict
from awa_tui.engine.schedules.columns import DEFINITION, listed
from awa_tui.engine.schedules.definition import Schedule
from awa_tui.engine.sync.first_hints import FirstHints
from awa_tui.engine.sync.writer import INPUT_CTE, chunks, rows_json

INSERT_OWNED_SQL = f"""
WITH {INPUT_CTE},
written AS (
    INSERT INTO awa.cron_jobs (name, {listed(DEFINITION)}, owner, next_fire_at)
    SELECT name, {listed(DEFINITION)}, %(owner)s, next_fire_at FROM input ORDER BY name
    ON CONFLICT (name) DO NOTHING
    RETURNING name
)
SELECT count(*) AS n FROM written
"""

FOREIGN_SQL = """
SELECT name, owner FROM awa.cron_jobs
WHERE name = ANY(%(names)s::text[]) AND owner IS NOT NULL AND owner <> %(owner)s
ORDER BY name
"""


def sync_declared(conn: psycopg.Connection[Any], owner: str, schedules: Iterable[Schedule]) -> dict[str, int]:
    """Insert the declared names that do not exist yet; refuse foreign-owned names.

    Runs under the protocol lock so that it serialises with adopt/transfer (S32). Raises
    Conflict (and writes nothing) when a declared name belongs to another owner.
    """
    inserted = 0
    foreign: list[dict[str, Any]] = []
    with conn.transaction():
        created = conn.execute("SELECT pg_advisory_xact_lock(%s), now() AS created_at", (PROTOCOL_LOCK_KEY,)).fetchone()
        assert created is not None
        hints = FirstHints(created["created_at"])  # S52, as the unowned sync's inserts
        conn.execute("INSERT INTO awa.owners (owner) VALUES (%s) ON CONFLICT (owner) DO NOTHING", (owner,))
        for part in chunks(schedules):  # name order, a bounded payload per statement
            row = conn.execute(
                INSERT_OWNED_SQL, {"rows": rows_json(part, hints), "owner": owner}  # type: ignore[arg-type]
            ).fetchone()
            inserted += row["n"] if row else 0
            foreign += conn.execute(FOREIGN_SQL, {"names": [s.name for s in part], "owner": owner}).fetchall()
        if foreign:
            first = foreign[0]
            more = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
            raise Conflict(
                f"schedule {first['name']!r} is owned by {first['owner']!r}, but this runtime declares it for "
                f"owner {owner!r}{more}; transfer it with `awa-tui cron transfer` or rename it"
            )
    return {"inserted": inserted, "updated": 0}


SyncWrite = Callable[[psycopg.Connection[Any], Sequence[Schedule]], dict[str, int]]


def sync_writer(owner: str | None) -> SyncWrite:
    """How a client's sync writes what changed: an authoritative runtime (`owner` given)
    inserts its new names owned by it and fails on a foreign-owned name (S23); any other
    makes the additive UPSERT (S5). A name of a calendar that does not exist refuses the
    whole sync before anything is written (S56)."""
    from awa_tui.engine.calendars.store import refuse_unknown_calendars
    from awa_tui.engine.sync.writer import sync_schedules

    def write(conn: psycopg.Connection[Any], schedules: Sequence[Schedule]) -> dict[str, int]:
        refuse_unknown_calendars(conn, schedules)
        return sync_schedules(conn, schedules) if owner is None else sync_declared(conn, owner, schedules)

    return write
