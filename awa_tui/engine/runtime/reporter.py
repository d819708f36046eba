"""Runtime snapshots (S21) and declaration publication (S24): one row per runtime, written
under the protocol lock (S32) together with, for an authoritative runtime, its canonical
manifest and hash, and the owner's agreement evidence (S26)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from awa_tui.engine.core.db import PROTOCOL_LOCK_KEY
from awa_tui.engine.migrations import code_version
from awa_tui.engine.ownership import agreement
from awa_tui.engine.ownership.manifest import Manifest
from awa_tui.engine.read.events import RecentEvents
from awa_tui.engine.read.events import to_json as events_json
from awa_tui.engine.read.fleet import PassSummary
from awa_tui.engine.read.passes import to_json as passes_json
from awa_tui.engine.runtime.identity import RuntimeIdentity

SNAPSHOT_SQL = """
INSERT INTO awa.runtime_instances AS r (
    instance_id, hostname, pid, version, protocol_version, started_at, last_seen_at,
    snapshot_interval, is_leader, health, stopped_at, owner, authoritative,
    manifest, manifest_hash, retire_grace, schema_version, recent_passes, leader_protocol, handled_kinds,
    recent_events, lead_refusal)
VALUES (%(instance_id)s, %(hostname)s, %(pid)s, %(version)s, %(protocol_version)s, %(now)s, %(now)s,
        %(snapshot_interval)s, %(is_leader)s, %(health)s,
        CASE WHEN %(stopped)s THEN %(now)s::timestamptz END, %(owner)s, %(authoritative)s,
        %(manifest)s, %(manifest_hash)s, %(retire_grace)s,
        %(schema_version)s, %(recent_passes)s, %(leader_protocol)s, %(handled_kinds)s,
        %(recent_events)s, %(lead_refusal)s)
ON CONFLICT (instance_id) DO UPDATE SET
    last_seen_at = EXCLUDED.last_seen_at, is_leader = EXCLUDED.is_leader, health = EXCLUDED.health,
    stopped_at = EXCLUDED.stopped_at, snapshot_interval = EXCLUDED.snapshot_interval,
    protocol_version = EXCLUDED.protocol_version, version = EXCLUDED.version,
    owner = EXCLUDED.owner, authoritative = EXCLUDED.authoritative,
    -- Rewrite the (possibly large) manifest only when it changed.
    manifest = CASE WHEN r.manifest_hash IS NOT DISTINCT FROM EXCLUDED.manifest_hash
                    THEN r.manifest ELSE EXCLUDED.manifest END,
    manifest_hash = EXCLUDED.manifest_hash, retire_grace = EXCLUDED.retire_grace,
    schema_version = EXCLUDED.schema_version,
    recent_passes = EXCLUDED.recent_passes, leader_protocol = EXCLUDED.leader_protocol,
    handled_kinds = EXCLUDED.handled_kinds,
    recent_events = EXCLUDED.recent_events, lead_refusal = EXCLUDED.lead_refusal
"""

# A schema rolled back below v034 (`migrate --down-to 33`) while this runtime runs: it keeps
# reporting, without its events and refusal.
SNAPSHOT_SQL_BEFORE_V034 = (SNAPSHOT_SQL.replace(",\n    recent_events, lead_refusal)", ")")
                            .replace(",\n        %(recent_events)s, %(lead_refusal)s)", ")")
                            .replace(",\n    recent_events = EXCLUDED.recent_events, "
                                     "lead_refusal = EXCLUDED.lead_refusal", ""))
SNAPSHOT_SQL_BEFORE_V019 = (SNAPSHOT_SQL_BEFORE_V034.replace(", leader_protocol, handled_kinds)", ")")
                            .replace(", %(leader_protocol)s, %(handled_kinds)s)", ")")
                            .replace(",\n    handled_kinds = EXCLUDED.handled_kinds", "")
                            .replace(", leader_protocol = EXCLUDED.leader_protocol", ""))


def write_snapshot(
    conn: psycopg.Connection[Any],
    ident: RuntimeIdentity,
    *,
    is_leader: bool,
    health: str = "healthy",
    stopped: bool = False,
    manifest: Manifest | None = None,
    now: datetime | None = None,
    passes: tuple[PassSummary, ...] = (),
    kinds: list[str] | None = None,
    events: RecentEvents | None = None,
    refusal: str | None = None,
) -> dict[str, Any]:
    """Write this runtime's snapshot in one transaction under the protocol lock (S24, S32).

    An authoritative runtime passes its manifest: it is published in the same transaction,
    and the owner's agreement evidence is recorded after the conflicts were checked (S26).
    A stopped snapshot ends the declaration at once. `now` defaults to DB time. `passes`:
    the runtime's last evaluator passes (read/passes.py), newest first. `kinds`: the
    kinds its worker runs (None: it runs no worker). `events`: its recent events, their DB
    time pinned by this snapshot's (read/events.py). `refusal`: why it never competes for
    leadership ('pooler in transaction mode'), None when it does.
    """
    declaring = ident.authoritative and ident.owner is not None
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (PROTOCOL_LOCK_KEY,))
        if now is None:
            row = conn.execute("SELECT clock_timestamp() AS now").fetchone()
            assert row is not None
            now = row["now"]
        params = {
            "instance_id": ident.instance_id,
            "hostname": ident.hostname,
            "pid": ident.pid,
            "version": ident.version,
            "protocol_version": ident.protocol_version,
            "snapshot_interval": ident.snapshot_interval,
            "is_leader": is_leader,
            "health": "stopped" if stopped else health,
            "stopped": stopped,
            "owner": ident.owner,
            "authoritative": ident.authoritative,
            "manifest": Jsonb(manifest.definitions) if declaring and manifest else None,
            "manifest_hash": manifest.hash if declaring and manifest else None,
            "retire_grace": ident.retire_grace if declaring else None,
            "recent_passes": Jsonb(passes_json(passes)),
            "now": now,
            "schema_version": code_version(),
            "leader_protocol": ident.leader_protocol,
            "handled_kinds": None if stopped else kinds,
            "recent_events": Jsonb(events_json(events.pinned(now) if events is not None else ())),
            "lead_refusal": refusal,
        }
        # Rolled back to an older schema (`migrate --down-to`) while this runtime still runs:
        # it keeps reporting, without the columns that schema lacks.
        for sql in (SNAPSHOT_SQL, SNAPSHOT_SQL_BEFORE_V034):
            try:
                with conn.transaction():
                    conn.execute(sql, params)
                break
            except psycopg.errors.UndefinedColumn:
                continue
        else:
            conn.execute(SNAPSHOT_SQL_BEFORE_V019, params)
        published: dict[str, Any] = {
            "instance_id": ident.instance_id, "owner": ident.owner, "at": now, "stopped": stopped,
            "manifest_hash": manifest.hash if declaring and manifest else None,
        }
        if declaring:
            assert ident.owner is not None
            state = agreement.assess(conn, ident.owner, now, agreement.lock_owner(conn, ident.owner))
            evidence = agreement.record_evidence(conn, state)
            published["agreement_since"] = evidence.since
    return published


def mark_stopped(conn: psycopg.Connection[Any], instance_id: str) -> None:
    """A forced stop's last word: the runtime's row marked stopped, not left fresh until it
    goes stale. Written from a signal handler, possibly while this very process's clean stop
    holds the row or the protocol lock mid-transaction: so no protocol lock, and a short
    lock wait instead of a wait forever."""
    with conn.transaction():
        conn.execute("SET LOCAL lock_timeout = '2s'")
        conn.execute(
            "UPDATE awa.runtime_instances SET health = 'stopped', is_leader = false, "
            "stopped_at = clock_timestamp(), last_seen_at = clock_timestamp() WHERE instance_id = %s",
            (instance_id,))


# Rows of runtimes that stopped or fell silent this long ago are history, not evidence:
# every freshness window (S21) and grace period is far shorter.
RUNTIME_RETENTION = timedelta(hours=24)


def prune_runtimes(conn: psycopg.Connection[Any], keep: timedelta = RUNTIME_RETENTION) -> int:
    """Delete snapshot rows of runtimes gone for longer than `keep`; returns how many."""
    rows = conn.execute(
        "DELETE FROM awa.runtime_instances WHERE coalesce(stopped_at, last_seen_at) < now() - %s "
        "RETURNING instance_id",
        (keep,),
    ).fetchall()
    return len(rows)
