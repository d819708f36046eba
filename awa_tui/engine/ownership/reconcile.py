"""Owner-scoped reconciliation (S25, S26, S31) and its read-only preview (S34).

`reconcile` is what the leader applies: per owner, one transaction under the protocol
lock (then the owner row, then schedule rows in name order, S32) that re-assesses
everything, records agreement evidence, inserts new names, synchronises definitions
(single live manifest, no conflicts, no grace), certifies the manifest, and retires absent
names only when every S26 condition holds. `plan` computes the same from one REPEATABLE
READ snapshot without taking the protocol lock and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import pq

from awa_tui.engine.core.audit import RECONCILER_LABEL, begin_reconcile, declare_actor
from awa_tui.engine.core.db import PROTOCOL_LOCK_KEY, db_now
from awa_tui.engine.core.errors import NotFound
from awa_tui.engine.core.scope import owner_scope
from awa_tui.engine.ownership import agreement
from awa_tui.engine.ownership.agreement import DESIRED_CTE, OwnerState
from awa_tui.engine.ownership.manifest import check_owner, short_hash
from awa_tui.engine.schedules.columns import DEFINITION, keep_overridden_set, kept, listed

if TYPE_CHECKING:
    from awa_tui.engine.ownership.plans import OwnerPlan, OwnerSummary

AUTO_OPERATOR = RECONCILER_LABEL  # retired_by of an automatic retirement, and its audit label

# Owners reconciliation looks at: every owner ever declared, adopted or transferred to
# gets a row in awa.owners; fresh declarations are added in case the row is missing.
RECONCILE_OWNERS_SQL = """
SELECT owner FROM awa.owners
UNION SELECT owner FROM awa.runtime_instances WHERE authoritative AND owner IS NOT NULL AND stopped_at IS NULL
ORDER BY 1
"""

# Plans and owner lists also show owners that only exist on schedule rows.
ALL_OWNERS_SQL = """
SELECT owner FROM awa.owners
UNION SELECT owner FROM awa.runtime_instances WHERE authoritative AND owner IS NOT NULL
UNION SELECT DISTINCT owner FROM awa.cron_jobs WHERE owner IS NOT NULL
ORDER BY 1
"""

INSERT_SQL = f"""
WITH {DESIRED_CTE}
INSERT INTO awa.cron_jobs (name, {listed(DEFINITION)}, owner)
SELECT name, {listed(DEFINITION)}, %(owner)s FROM desired
WHERE name = ANY(%(names)s::text[])
ORDER BY name
ON CONFLICT (name) DO NOTHING
RETURNING name
"""

LOCK_ROWS_SQL = "SELECT name FROM awa.cron_jobs WHERE name = ANY(%(names)s::text[]) ORDER BY name FOR UPDATE"

_SET = keep_overridden_set("c", "d")  # an operator override survives (S49)
SYNC_SQL = f"""
WITH {DESIRED_CTE}
UPDATE awa.cron_jobs c SET {_SET},
    updated_at = now(),
    next_fire_at = CASE WHEN (c.cron_expr, c.timezone) IS DISTINCT FROM
                             ({kept("c", "d", "cron_expr")}, {kept("c", "d", "timezone")})
                        THEN NULL ELSE c.next_fire_at END
FROM desired d
WHERE c.name = d.name AND c.name = ANY(%(names)s::text[])
  AND c.owner = %(owner)s AND c.retired_at IS NULL AND c.origin = 'code'
RETURNING c.name
"""

RETIRE_SQL = """
UPDATE awa.cron_jobs SET retired_at = %(at)s, retired_by = %(by)s
WHERE name = ANY(%(names)s::text[]) AND owner = %(owner)s AND retired_at IS NULL
RETURNING name, paused_at, last_enqueued_at
"""


# --- apply (the leader) ----------------------------------------------------------------


def reconcile(
    conn: psycopg.Connection[Any], now: datetime | None = None, *, wait: bool = True
) -> list[dict[str, Any]]:
    """One reconciliation pass over every owner (DB time when `now` is omitted).

    Returns one dict per owner: owner, now, manifest_hash (the single live hash or None),
    inserted / updated / retired (names), certified (bool), agreement_since,
    grace_remaining_s, blockers (see `agreement.blockers`), skipped (bool). With
    `wait=False` an owner whose turn finds the protocol lock busy is skipped (the leader
    never lets a long publication delay its fires; it retries on its next pass).
    """
    owners = [r["owner"] for r in conn.execute(RECONCILE_OWNERS_SQL).fetchall()]
    return [reconcile_owner(conn, owner, now, wait=wait) for owner in owners]


def _skipped(owner: str) -> dict[str, Any]:
    return {"owner": owner, "now": None, "manifest_hash": None, "inserted": [], "updated": [], "retired": [],
            "certified": False, "agreement_since": None, "grace_remaining_s": None, "blockers": [],
            "skipped": True}


def reconcile_owner(
    conn: psycopg.Connection[Any], owner: str, now: datetime | None = None, *, wait: bool = True
) -> dict[str, Any]:
    """Reconcile one owner in one transaction under the protocol lock (S32)."""
    with conn.transaction():
        if wait:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (PROTOCOL_LOCK_KEY,))
        else:
            got = conn.execute("SELECT pg_try_advisory_xact_lock(%s) AS got", (PROTOCOL_LOCK_KEY,)).fetchone()
            if not (got and got["got"]):
                return _skipped(owner)
        at = now or db_now(conn)
        declare_actor(conn, AUTO_OPERATOR)  # bookkeeping of owner rows is the engine's own
        record = agreement.lock_owner(conn, owner)
        runtimes = agreement.fresh_runtimes(conn, at)
        state = agreement.assess(conn, owner, at, record, runtimes)
        inserted: list[str] = []
        if state.checked and state.inserts:
            inserted = insert_missing(conn, state)
            # A name an additive runtime inserted meanwhile is now a conflict: look again
            # before any evidence is recorded.
            state = agreement.assess(conn, owner, at, record, runtimes)
        evidence = agreement.record_evidence(conn, state)
        updated: list[str] = []
        certified = False
        if state.can_sync:
            begin_reconcile(conn, owner)
            updated = sync_definitions(conn, state)
            certified = certify(conn, state)
        retired: list[str] = []
        if state.retirements and agreement.may_retire(state, evidence):
            begin_reconcile(conn, owner)
            retired = retire_absent(conn, state)
            state.retirements = []
        return {
            "owner": owner,
            "now": at,
            "manifest_hash": state.single_hash,
            "inserted": inserted,
            "updated": updated,
            "retired": retired,
            "certified": certified,
            "agreement_since": evidence.since,
            "grace_remaining_s": _seconds(agreement.grace_remaining(state, evidence)),
            "blockers": agreement.blockers(state, evidence),
            "skipped": False,
        }


def insert_missing(conn: psycopg.Connection[Any], state: OwnerState) -> list[str]:
    """S23: desired names that do not exist are inserted at once, owned by the owner."""
    rows = conn.execute(
        INSERT_SQL,
        {"source": state.source, "owner": state.owner, "names": [i["name"] for i in state.inserts]},
    ).fetchall()
    return [r["name"] for r in rows]


def sync_definitions(conn: psycopg.Connection[Any], state: OwnerState) -> list[str]:
    """S25: bring owned, active definitions to the single live manifest (manager context)."""
    if not state.updates:
        return []
    names = [u["name"] for u in state.updates]
    conn.execute(LOCK_ROWS_SQL, {"names": names})
    # The database audits each changed row (its changed columns, before and after).
    declare_actor(conn, AUTO_OPERATOR, "sync_definition", {"owner": state.owner, "manifest_hash": state.single_hash})
    rows = conn.execute(SYNC_SQL, {"source": state.source, "owner": state.owner, "names": names}).fetchall()
    return sorted(r["name"] for r in rows)


def certify(conn: psycopg.Connection[Any], state: OwnerState) -> bool:
    """S31: the synchronised hash certifies active ownership of every desired name."""
    if state.inserts or state.conflicts or state.single_hash is None:
        return False
    record = state.record
    if (record["certificate_hash"], record["certificate_size"]) != (state.single_hash, state.manifest_size):
        conn.execute(
            "UPDATE awa.owners SET certificate_hash = %s, certificate_size = %s, certified_at = %s, "
            "updated_at = now() WHERE owner = %s",
            (state.single_hash, state.manifest_size, state.now, state.owner),
        )
        record.update(certificate_hash=state.single_hash, certificate_size=state.manifest_size,
                      certified_at=state.now)
    return True


def retire_absent(conn: psycopg.Connection[Any], state: OwnerState) -> list[str]:
    """S26/S27: tombstone the owner's active schedules that its manifest no longer has."""
    conn.execute(LOCK_ROWS_SQL, {"names": state.retirements})
    declare_actor(conn, AUTO_OPERATOR, "auto_retire", {"owner": state.owner, "manifest_hash": state.single_hash})
    rows = conn.execute(
        RETIRE_SQL,
        {"at": state.now, "by": AUTO_OPERATOR, "names": state.retirements, "owner": state.owner},
    ).fetchall()
    return sorted(r["name"] for r in rows)


# --- preview (S34) ----------------------------------------------------------------------


@contextmanager
def read_snapshot(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """One REPEATABLE READ, read-only snapshot; never commits anything.

    Inside a transaction the caller already opened, that transaction is used as is.
    """
    if conn.info.transaction_status != pq.TransactionStatus.IDLE:
        yield
        return
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    try:
        yield
    finally:
        if not conn.closed and conn.info.transaction_status != pq.TransactionStatus.IDLE:
            conn.execute("ROLLBACK")


def plan(conn: psycopg.Connection[Any], owner: str | None = None, now: datetime | None = None) -> list[dict[str, Any]]:
    """What reconciliation would do now, per owner (all owners, or just `owner`).

    Each dict: owner, now, fresh_declarations (count), manifest_hash (single live hash or
    None), manifest_hashes (every live hash), certificate {hash, size, certified_at,
    current}, schedules {active, retired}, inserts [{name, definition}], updates [{name,
    changes: {column: {from, to}}}], retirements [name], conflicts [{name, kind
    (unowned|foreign|retired|made_at_run_time), owner, message}], will_insert / will_update / will_retire
    (bools), agreement {hash, since, recorded_since, evidence_window_s, grace_required_s,
    grace_remaining_s}, blockers [{code, message, blocks, ...}]. Blocker codes:
    no_fresh_declaration, mixed_manifests, conflict, retired_desired, incapable_runtime,
    grace_remaining (with seconds_left). Raises NotFound for an unknown owner.
    """
    with read_snapshot(conn):
        return compute_plans(conn, owner, now)


def compute_plans(
    conn: psycopg.Connection[Any], owner: str | None = None, now: datetime | None = None
) -> list[dict[str, Any]]:
    """`plan` inside the caller's snapshot; reads only, takes no advisory lock."""
    at = now or db_now(conn)
    owners = [r["owner"] for r in conn.execute(ALL_OWNERS_SQL).fetchall()]
    if owner is not None:
        check_owner(owner)
        if owner not in owners:
            raise NotFound(f"unknown owner {owner!r}")
        owners = [owner]
    runtimes = agreement.fresh_runtimes(conn, at)
    return [owner_plan(conn, name, at, runtimes) for name in owners]


def owner_plan(
    conn: psycopg.Connection[Any], owner: str, at: datetime, runtimes: list[dict[str, Any]]
) -> dict[str, Any]:
    record = agreement.read_owner(conn, owner)
    recorded_since = record["agreement_since"]
    state = agreement.assess(conn, owner, at, record, runtimes)
    evidence = agreement.agreement_after(state)
    active, retired = agreement.owned_counts(conn, owner)
    return {
        "owner": owner,
        "now": at,
        "fresh_declarations": len(state.declarations),
        "manifest_hash": state.single_hash,
        "manifest_hashes": list(state.hashes),
        "certificate": {
            "hash": record["certificate_hash"],
            "size": record["certificate_size"],
            "certified_at": record["certified_at"],
            "current": state.single_hash is not None and record["certificate_hash"] == state.single_hash,
        },
        "schedules": {"active": active, "retired": retired},
        "inserts": state.inserts,
        "updates": state.updates,
        "retirements": state.retirements,
        "conflicts": state.conflicts,
        "will_insert": state.checked and bool(state.inserts),
        "will_update": state.can_sync and bool(state.updates),
        "will_retire": bool(state.retirements) and agreement.may_retire(state, evidence),
        "agreement": {
            "hash": evidence.hash,
            "since": evidence.since,
            "recorded_since": recorded_since,
            "evidence_window_s": state.window.total_seconds(),
            "grace_required_s": state.grace_required.total_seconds(),
            "grace_remaining_s": _seconds(agreement.grace_remaining(state, evidence)),
        },
        "blockers": agreement.blockers(state, evidence),
    }


def list_owners(conn: psycopg.Connection[Any], now: datetime | None = None) -> list[dict[str, Any]]:
    """One summary dict per owner (the console's owners panel), from one snapshot.

    Keys: owner, fresh_runtimes (fresh authoritative declarations), manifest_hashes
    (live), certificate_hash, certified_at, certified (bool: certificate = the single live
    hash), schedules_owned (active), schedules_retired, agreement_since, grace_required_s,
    grace_remaining_s, pending {inserts, updates, retirements} (counts), blockers
    [{code, message, blocks, ...}], roles (the team roles that may act on it, S76).

    A team's role sees its owners only: the database hides the others' schedules and owner
    rows, and declarations of other owners by runtimes are left out here too.
    """
    with read_snapshot(conn):
        plans = compute_plans(conn, None, now)
        roles = {r["owner"]: r["roles"] for r in conn.execute(OWNER_ROLES_SQL).fetchall()}
        scope = owner_scope(conn)
    return [
        {
            "owner": p["owner"],
            "fresh_runtimes": p["fresh_declarations"],
            "manifest_hashes": p["manifest_hashes"],
            "certificate_hash": p["certificate"]["hash"],
            "certified_at": p["certificate"]["certified_at"],
            "certified": p["certificate"]["current"],
            "schedules_owned": p["schedules"]["active"],
            "schedules_retired": p["schedules"]["retired"],
            "agreement_since": p["agreement"]["since"],
            "grace_required_s": p["agreement"]["grace_required_s"],
            "grace_remaining_s": p["agreement"]["grace_remaining_s"],
            "pending": {k: len(p[k]) for k in ("inserts", "updates", "retirements")},
            "blockers": p["blockers"],
            "roles": roles.get(p["owner"], []),
        }
        for p in plans if scope is None or p["owner"] in scope
    ]


# Who may act on each owner besides the layout's operators: the team roles that still exist.
OWNER_ROLES_SQL = """
SELECT g.owner, array_agg(g.role ORDER BY g.role) AS roles
FROM awa.owner_grants g WHERE EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = g.role)
GROUP BY g.owner
"""


def describe(result: dict[str, Any]) -> str:
    """One line per owner for logs and the CLI."""
    parts = [f"owner {result['owner']} ({short_hash(result.get('manifest_hash'))})"]
    for key in ("inserted", "updated", "retired"):
        if result.get(key):
            parts.append(f"{key} {len(result[key])}")
    if result.get("blockers"):
        parts.append("blocked: " + ", ".join(sorted({b["code"] for b in result["blockers"]})))
    return "; ".join(parts)


def _seconds(value: Any) -> float | None:
    return None if value is None else value.total_seconds()


def owner_plans(conn: psycopg.Connection[Any], owner: str | None = None,
                now: datetime | None = None) -> list[OwnerPlan]:
    """`plan` as the typed read models the console and the CLI read."""
    from awa_tui.engine.ownership.plans import owner_plan

    return [owner_plan(p) for p in plan(conn, owner, now)]


def owner_summaries(conn: psycopg.Connection[Any], now: datetime | None = None) -> list[OwnerSummary]:
    """`list_owners` as typed read models."""
    from awa_tui.engine.ownership.plans import owner_summary

    return [owner_summary(o) for o in list_owners(conn, now)]
