"""Additive sync of registered schedules into awa.cron_jobs (S5), and its steady state (S50).

A compare UPSERTs the given schedules in name order, in statements of CHUNK rows (one
transaction): a row is rewritten only when its definition differs, so a compare of an
unchanged registry writes nothing; owned and retired rows are left alone (reconciliation
alone updates owned definitions, S25; tombstones survive, S27).

`SyncTracker` decides what a runtime's sync compares (S50): everything the first time and
whenever its registry changed; otherwise only the names the database noted as changed
(migration v012) since the snapshot in which it last found the table in agreement, which
in the steady state is none: one small query, nothing written.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import psycopg

from awa_tui.engine.core.audit import SYNC_LABEL, declare_actor
from awa_tui.engine.schedules.columns import (
    DEFINITION,
    DEFINITION_DEFAULTS,
    DEFINITION_TYPES,
    KEY,
    code_differs,
    keep_overridden_set,
    kept,
    listed,
)
from awa_tui.engine.schedules.definition import Schedule, instant_text
from awa_tui.engine.sync.first_hints import FirstHints

# Rows per statement: bounds the payload (a million schedules are 40 statements of ~4 MB).
CHUNK = 25_000
AHEAD = 4  # chunks sent before waiting for the database to catch up


def _positional(alias: str) -> str:
    """The definition columns of input row `alias` (a JSON array: name, then DEFINITION in
    order, as `rows_json` writes it), typed like awa.cron_jobs."""
    out = []
    for i, column in enumerate(DEFINITION, start=1):
        typ = DEFINITION_TYPES[column]
        if column == "tags":
            value = f"ARRAY(SELECT jsonb_array_elements_text({alias} -> {i}))"
        elif typ == "jsonb":
            # JSON null is SQL NULL (an unset exclusion, S56); args and metadata are objects.
            value = f"nullif({alias} -> {i}, 'null'::jsonb)"
        elif typ == "text":
            value = f"({alias} ->> {i})"
        else:
            value = f"({alias} ->> {i})::{typ}"
        default = DEFINITION_DEFAULTS.get(column)
        if default is not None:  # NOT NULL with a default (jitter_ms, overlap)
            literal = f"'{default}'" if isinstance(default, str) else str(default)
            value = f"coalesce({value}, {literal})"
        out.append(f"{value} AS {column}")
    return ", ".join(out)


# The input rows, typed, from one jsonb parameter: positional arrays, a third of the bytes
# of objects keyed by column (and a third of the encoding work). The last element is the
# hint an inserted row gets (S52, engine/sync/first_hints.py), or null.
INPUT_CTE = f"""
input AS (
    SELECT x ->> 0 AS {KEY}, {_positional("x")}, (x ->> {len(DEFINITION) + 1})::timestamptz AS next_fire_at
    FROM jsonb_array_elements(%(rows)s::jsonb) AS x
)"""

# S49: an overridden row is compared and written on its code side only (columns.py).
_SET = keep_overridden_set("c", "EXCLUDED")
_DIFFERS = code_differs("c", "EXCLUDED")
_CHANGED = f"(cur.owner IS NULL AND cur.retired_at IS NULL AND {code_differs('cur', 'i')})"

UPSERT_SQL = f"""
WITH {INPUT_CTE},
written AS (
    INSERT INTO awa.cron_jobs AS c (name, {listed(DEFINITION)}, next_fire_at)
    SELECT i.name, {listed(DEFINITION, "i")}, i.next_fire_at FROM input i
    LEFT JOIN awa.cron_jobs cur ON cur.name = i.name
    -- Unchanged rows are left out before the UPSERT: ON CONFLICT DO UPDATE ... WHERE false
    -- still locks every conflicting row (a write: new xmax, WAL), 100k rows every 60 s.
    WHERE cur.name IS NULL OR {_CHANGED}
    ORDER BY i.name
    ON CONFLICT (name) DO UPDATE SET {_SET},
        updated_at = now(),
        -- Only the expression and zone decide fire instants; keep the hint otherwise.
        -- (EXCLUDED.next_fire_at is an inserted row's hint, S52: never an existing row's.)
        next_fire_at = CASE WHEN (c.cron_expr, c.timezone) IS DISTINCT FROM
                                 ({kept("c", "EXCLUDED", "cron_expr")}, {kept("c", "EXCLUDED", "timezone")})
                            THEN NULL ELSE c.next_fire_at END
    WHERE c.owner IS NULL AND c.retired_at IS NULL AND {_DIFFERS}
    RETURNING (xmax = 0) AS inserted
)
SELECT count(*) FILTER (WHERE inserted) AS inserted, count(*) FILTER (WHERE NOT inserted) AS updated
FROM written
"""

# A chunk's parsed input and its name sort (~4 MB each) spill to temporary files at the
# default 4 MB: written and read back 40 times in a write of 1M (about 1.7 GB of temporary files).
CHUNK_WORK_MEM = "32MB"

LOOKUP_BY_KEY_SQL = f"""
SELECT set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true),
       set_config('enable_seqscan', 'off', true), set_config('work_mem', '{CHUNK_WORK_MEM}', true),
       now() AS created_at  -- what created_at's default gives every row this transaction inserts
"""

_ROW = attrgetter(KEY, *DEFINITION)  # one C call per schedule
_NAME = attrgetter(KEY)


def _instant(value: object) -> str | None:
    """JSON's fallback for the definition instants (start_at, end_at): awa.instant_text."""
    return instant_text(value)  # type: ignore[arg-type]  # only datetimes reach it


def rows_json(schedules: Iterable[Schedule], hints: FirstHints) -> str:
    """The schedules as INPUT_CTE reads them: `[[name, cron_expr, ..., hint], ...]`."""
    hint = hints.of
    return json.dumps([(*_ROW(s), hint(s)) for s in schedules], separators=(",", ":"), default=_instant)


def chunks(schedules: Iterable[Schedule]) -> Iterable[list[Schedule]]:
    """The schedules in name order (the lock order of S32 across statements), CHUNK at a time."""
    ordered = sorted(schedules, key=_NAME)
    for start in range(0, len(ordered), CHUNK):
        yield ordered[start:start + CHUNK]


def pipelined(conn: psycopg.Connection[Any], statement: str, params: Iterable[Mapping[str, Any]]) -> list[Any]:
    """`statement` once per set of `params`, pipelined: the database writes one chunk while
    the next is encoded here (`params` is read lazily). At most AHEAD statements wait, so
    their payloads never pile up in memory. Returns each statement's first row."""
    cursors = []
    with conn.pipeline() as pipeline:
        for k, values in enumerate(params, start=1):
            cursors.append(conn.execute(statement, values))  # type: ignore[arg-type]  # built from constants
            if k % AHEAD == 0:
                pipeline.sync()
    return [cur.fetchone() for cur in cursors]


def sync_schedules(conn: psycopg.Connection[Any], schedules: Iterable[Schedule]) -> dict[str, int]:
    """UPSERT every schedule (a full compare); returns how many rows were inserted and updated."""
    parts = iter(chunks(schedules))
    first = next(parts, None)
    if first is None:
        return {"inserted": 0, "updated": 0}
    with conn.transaction():
        # A changed definition of an existing row is audited by the database under this
        # label; a first registration is not (nothing existed to change).
        declare_actor(conn, SYNC_LABEL, "sync_definition")
        # Each input name is looked up by the primary key. The table's statistics are those
        # of before this transaction: after the first chunks of a first sync the planner
        # would still hash (or scan) a table it believes empty, for every later chunk.
        created = conn.execute(LOOKUP_BY_KEY_SQL).fetchone()
        assert created is not None
        hints = FirstHints(created["created_at"])
        rows = pipelined(conn, UPSERT_SQL, ({"rows": rows_json(part, hints)}
                                            for part in itertools.chain([first], parts)))
    return {"inserted": sum(r["inserted"] for r in rows if r), "updated": sum(r["updated"] for r in rows if r)}


# --- the steady state (S50) ---------------------------------------------------------------

Writer = Callable[[psycopg.Connection[Any], Sequence[Schedule]], dict[str, int]]

# More noted names than this and a compare of everything is as cheap.
NAMES_CAP = 10_000
# Notes older than this are pruned by the sync that finds them.
NOTES_KEPT = "1 day"

SNAPSHOT_SQL = """
SELECT pg_current_snapshot()::text AS snapshot, 'awa.cron_jobs'::regclass::oid::bigint AS relation
"""

# One statement, so one snapshot: the names noted by transactions `seen` does not see (and
# not by this runtime's own last write), and the snapshot to remember next.
PROBE_SQL = """
WITH noted AS (
    SELECT name FROM awa.cron_jobs_changes
    WHERE xid >= pg_snapshot_xmin(%(seen)s::pg_snapshot)
      AND NOT pg_visible_in_snapshot(xid, %(seen)s::pg_snapshot)
      AND xid IS DISTINCT FROM %(mine)s::xid8
)
SELECT pg_current_snapshot()::text AS snapshot,
       'awa.cron_jobs'::regclass::oid::bigint AS relation,
       (SELECT upto < pg_snapshot_xmin(%(seen)s::pg_snapshot) FROM awa.cron_jobs_changes_pruned) AS answerable,
       pg_snapshot_xmax(pg_current_snapshot()) >= pg_snapshot_xmax(%(seen)s::pg_snapshot) AS forward,
       EXISTS (SELECT FROM noted WHERE name IS NULL) AS truncated,
       ARRAY(SELECT DISTINCT name FROM noted WHERE name IS NOT NULL LIMIT %(cap)s) AS names,
       coalesce((SELECT at < now() - %(kept)s::interval FROM awa.cron_jobs_changes ORDER BY xid LIMIT 1),
                false) AS stale_notes
"""


@dataclass(frozen=True)
class Seen:
    """What a runtime remembers after a sync that left the table in agreement with its
    registry: the snapshot it checked in, its own writing transaction (whose notes are its
    own writes), the table (a recreated table is another oid) and the registry's generation."""

    snapshot: str
    mine: str | None
    relation: int
    generation: int


@dataclass(frozen=True)
class SyncOutcome:
    mode: str  # "full" (compared everything), "names" (the noted names only), "steady" (nothing)
    compared: int
    inserted: int
    updated: int


class SyncTracker:
    """The steady-state memory of one Client's syncs (S50)."""

    def __init__(self) -> None:
        self.seen: Seen | None = None
        self.last: SyncOutcome | None = None

    def forget(self) -> None:
        self.seen = None

    def sync(self, conn: psycopg.Connection[Any], registry: Mapping[str, Schedule], generation: int,
             write: Writer) -> dict[str, int]:
        seen = self.seen
        with conn.transaction():
            if seen is None or seen.generation != generation:
                probe = conn.execute(SNAPSHOT_SQL).fetchone()
                names: list[str] | None = None
            else:
                probe = conn.execute(PROBE_SQL, {
                    "seen": seen.snapshot, "mine": seen.mine, "cap": NAMES_CAP + 1, "kept": NOTES_KEPT,
                }).fetchone()
                assert probe is not None
                names = _noted(probe, seen)
            assert probe is not None
            if names is None:
                mode, todo = "full", list(registry.values())
            else:
                todo = [registry[n] for n in names if n in registry]
                mode = "names" if todo else "steady"
            # A full compare always runs, empty or not (an authoritative runtime's empty
            # manifest still declares its owner, S22).
            result = {"inserted": 0, "updated": 0} if mode == "steady" else write(conn, todo)
            if mode != "steady" or probe.get("stale_notes"):
                conn.execute("SELECT awa.prune_cron_jobs_changes(%s::interval)", (NOTES_KEPT,))
            mine = conn.execute("SELECT pg_current_xact_id_if_assigned()::text AS x").fetchone()
        # Only once committed: a sync that failed (a conflict, a lost connection) is redone whole.
        self.seen = Seen(probe["snapshot"], mine["x"] if mine else None, probe["relation"], generation)
        self.last = SyncOutcome(mode, len(todo), result["inserted"], result["updated"])
        return result


def _noted(probe: Mapping[str, Any], seen: Seen) -> list[str] | None:
    """The noted names to compare, or None when only a compare of everything will do."""
    if (probe["relation"] != seen.relation or not probe["answerable"] or not probe["forward"]
            or probe["truncated"] or len(probe["names"]) > NAMES_CAP):
        return None
    return list(probe["names"])
