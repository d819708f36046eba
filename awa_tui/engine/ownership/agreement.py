"""What the database says about one owner (S21-S26, S31): its fresh declarations, their
manifests, conflicts, the agreement clock and every reason that blocks reconciliation.

Reads only, apart from `lock_owner` and `record_evidence`, which run inside the caller's
transaction under the protocol lock. The same assessment feeds publication (evidence),
the leader's apply, and read-only plans, so the three can never disagree on a rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg

from awa_tui.engine.core.audit import RECONCILER_LABEL, begin_reconcile, declare_actor
from awa_tui.engine.core.freshness import FRESH_MIN, fresh_sql, fresh_window_sql
from awa_tui.engine.ownership.differing import differing_names, differing_text
from awa_tui.engine.ownership.manifest import PROTOCOL_VERSION, short_hash
from awa_tui.engine.schedules.columns import (
    DEFINITION,
    DEFINITION_DEFAULTS,
    code_definition_json,
    code_differs,
    record_type,
    typed_input,
)

DEFAULT_RETIRE_GRACE = timedelta(minutes=10)  # for a declaration that stored none


# S21: fresh iff now - last_seen_at <= max(30 s, 3 x snapshot_interval), in DB time.
FRESH_RUNTIMES_SQL = f"""
SELECT instance_id, hostname, pid, version, protocol_version, owner, authoritative,
       manifest_hash, retire_grace, snapshot_interval, last_seen_at,
       {fresh_window_sql()} AS fresh_window
FROM awa.runtime_instances
WHERE {fresh_sql("%(now)s::timestamptz")}
ORDER BY last_seen_at DESC, instance_id
"""

# The desired rows of one published manifest, typed like awa.cron_jobs.
DESIRED_CTE = f"""
desired AS (
    SELECT e.key AS name, e.value AS definition, {typed_input("x")}
    FROM awa.runtime_instances r
    CROSS JOIN LATERAL jsonb_each(r.manifest) AS e
    CROSS JOIN LATERAL jsonb_to_record(e.value) AS x({record_type(with_key=False)})
    WHERE r.instance_id = %(source)s
)"""

# Only desired names that are not already owned, active and identical come back, so a
# synchronised owner costs one join that returns nothing.
DIFF_SQL = f"""
WITH {DESIRED_CTE}
SELECT d.name, d.definition, c.name IS NOT NULL AS present, c.owner, c.retired_at, c.origin,
       CASE WHEN c.name IS NOT NULL THEN {code_definition_json("c")} END AS current
FROM desired d LEFT JOIN awa.cron_jobs c ON c.name = d.name
WHERE c.name IS NULL OR c.owner IS DISTINCT FROM %(owner)s OR c.retired_at IS NOT NULL
   -- A name made at run time (S64) is never the manifest's, even with the same definition.
   OR c.origin <> 'code'
   -- An overridden row is compared on its code side: still declared as is (S49).
   OR {code_differs("c", "d")}
ORDER BY d.name
"""

ABSENT_SQL = """
SELECT c.name FROM awa.cron_jobs c
WHERE c.owner = %(owner)s AND c.retired_at IS NULL
  AND c.origin = 'code'  -- S64: a schedule made at run time is in no manifest, and stays
  AND NOT EXISTS (SELECT 1 FROM awa.runtime_instances r
                  WHERE r.instance_id = %(source)s AND r.manifest ? c.name)
ORDER BY c.name
"""

# What a certificate counts, on every reporter's snapshot: read from its own index (v036),
# never through the owner's schedules made at run time.
CODE_COUNT_SQL = """
SELECT count(*) AS n FROM awa.cron_jobs
WHERE owner = %(owner)s AND origin = 'code' AND retired_at IS NULL
"""

# Every schedule of the owner, counted for an operator's plan (`owner plan`, the owners panel).
COUNTS_SQL = """
SELECT count(*) FILTER (WHERE retired_at IS NULL) AS active,
       count(*) FILTER (WHERE retired_at IS NOT NULL) AS retired
FROM awa.cron_jobs WHERE owner = %(owner)s
"""

MANIFEST_SIZE_SQL = """
SELECT (SELECT count(*) FROM jsonb_object_keys(manifest)) AS size
FROM awa.runtime_instances WHERE instance_id = %(source)s
"""

OWNER_COLUMNS = (
    "owner, certificate_hash, certificate_size, certified_at, agreement_hash, agreement_since, agreement_seen_at"
)


def empty_record(owner: str) -> dict[str, Any]:
    return {
        "owner": owner, "certificate_hash": None, "certificate_size": None, "certified_at": None,
        "agreement_hash": None, "agreement_since": None, "agreement_seen_at": None,
    }


def read_owner(conn: psycopg.Connection[Any], owner: str) -> dict[str, Any]:
    """The owner's row without locking it (plans); defaults when it does not exist yet."""
    row = conn.execute(f"SELECT {OWNER_COLUMNS} FROM awa.owners WHERE owner = %s", (owner,)).fetchone()
    return row or empty_record(owner)


def lock_owner(conn: psycopg.Connection[Any], owner: str) -> dict[str, Any]:
    """Create if needed and lock the owner's row (caller holds the protocol lock, S32)."""
    conn.execute("INSERT INTO awa.owners (owner) VALUES (%s) ON CONFLICT (owner) DO NOTHING", (owner,))
    row = conn.execute(f"SELECT {OWNER_COLUMNS} FROM awa.owners WHERE owner = %s FOR UPDATE", (owner,)).fetchone()
    assert row is not None
    return row


def invalidate_certificates(conn: psycopg.Connection[Any], owners: list[str]) -> None:
    """S31: an operator action voids the certificates of exactly the owners it touched.

    It also restarts their agreement clock: a schedule an operator just restored or
    transferred gets a full grace period before the owner's manifest can retire it again,
    rather than vanishing on the next leader pass.
    """
    conn.execute(
        "UPDATE awa.owners SET certificate_hash = NULL, certificate_size = NULL, certified_at = NULL, "
        "agreement_hash = NULL, agreement_since = NULL, agreement_seen_at = NULL, "
        "updated_at = now() WHERE owner = ANY(%s::text[]) "
        "AND (certificate_hash IS NOT NULL OR agreement_since IS NOT NULL)",
        (sorted(set(owners)),),
    )


def fresh_runtimes(conn: psycopg.Connection[Any], now: datetime) -> list[dict[str, Any]]:
    return conn.execute(FRESH_RUNTIMES_SQL, {"now": now}).fetchall()


def runtime_label(row: dict[str, Any]) -> str:
    return f"{row['hostname']}:{row['pid']} ({str(row['instance_id'])[:8]})"


@dataclass
class OwnerState:
    """One owner at one instant. `checked` is False when no single manifest is live, in
    which case nothing is known about conflicts or differences (and nothing is done)."""

    owner: str
    now: datetime
    record: dict[str, Any]
    declarations: list[dict[str, Any]]
    incapable: list[dict[str, Any]]
    hashes: list[str]
    grace_required: timedelta
    window: timedelta
    source: Any = None  # instance_id whose manifest is the single live one
    checked: bool = False
    certified_fast: bool = False
    manifest_size: int | None = None
    inserts: list[dict[str, Any]] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    retirements: list[str] = field(default_factory=list)
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    differing: list[str] = field(default_factory=list)  # mixed manifests: the names they disagree on

    @property
    def single_hash(self) -> str | None:
        return self.hashes[0] if self.declarations and len(self.hashes) == 1 else None

    @property
    def can_sync(self) -> bool:
        """S25: exactly one live manifest and no conflicts (no grace needed)."""
        return self.checked and not self.conflicts

    @property
    def agreeable(self) -> bool:
        """S26 minus the grace: what must hold for evidence of agreement to count."""
        return self.can_sync and not self.incapable


def assess(
    conn: psycopg.Connection[Any],
    owner: str,
    now: datetime,
    record: dict[str, Any],
    runtimes: list[dict[str, Any]] | None = None,
) -> OwnerState:
    """Everything reconciliation needs to decide about `owner` at `now` (reads only)."""
    if runtimes is None:
        runtimes = fresh_runtimes(conn, now)
    declarations = [
        r for r in runtimes
        if r["authoritative"] and r["owner"] == owner and r["protocol_version"] >= PROTOCOL_VERSION
        and r["manifest_hash"] is not None
    ]
    incapable = [r for r in runtimes if r["protocol_version"] < PROTOCOL_VERSION]
    grace = max(
        (DEFAULT_RETIRE_GRACE if r["retire_grace"] is None else r["retire_grace"] for r in declarations),
        default=timedelta(0),
    )
    window = max((r["fresh_window"] for r in declarations), default=FRESH_MIN)
    state = OwnerState(
        owner=owner, now=now, record=record, declarations=declarations, incapable=incapable,
        hashes=sorted({r["manifest_hash"] for r in declarations}), grace_required=grace, window=window,
    )
    live = state.single_hash
    if live is None:
        if len(state.hashes) > 1:
            state.differing = differing_names(conn, declarations)
        return state
    state.source = declarations[0]["instance_id"]  # the most recently seen publisher
    state.checked = True
    if live == record["certificate_hash"] and declared_count(conn, owner) == record["certificate_size"]:
        # S31: a certificate proves every desired name active, owned and in sync; any
        # operator action touching this owner voids it, and the count catches deletions.
        state.certified_fast = True
        state.manifest_size = record["certificate_size"]
        return state
    params = {"owner": owner, "source": state.source}
    for row in conn.execute(DIFF_SQL, params).fetchall():
        classify(state, row)
    state.retirements = [r["name"] for r in conn.execute(ABSENT_SQL, params).fetchall()]
    size = conn.execute(MANIFEST_SIZE_SQL, params).fetchone()
    state.manifest_size = int(size["size"]) if size else 0
    return state


def declared_count(conn: psycopg.Connection[Any], owner: str) -> int:
    """The owner's active schedules declared in code: what a certificate counts (S64 rows
    made at run time are not)."""
    row = conn.execute(CODE_COUNT_SQL, {"owner": owner}).fetchone()
    return int(row["n"]) if row else 0


def owned_counts(conn: psycopg.Connection[Any], owner: str) -> tuple[int, int]:
    """The owner's active and retired schedules, every origin: an operator's read."""
    row = conn.execute(COUNTS_SQL, {"owner": owner}).fetchone()
    return (int(row["active"]), int(row["retired"])) if row else (0, 0)


def classify(state: OwnerState, row: dict[str, Any]) -> None:
    name, owner = row["name"], state.owner
    if not row["present"]:
        state.inserts.append({"name": name, "definition": row["definition"]})
    elif row["owner"] is None:
        state.conflicts.append({
            "name": name, "kind": "unowned", "owner": None,
            "message": f"schedule {name!r} exists unowned; an operator must adopt it for {owner!r}",
        })
    elif row["owner"] != owner:
        state.conflicts.append({
            "name": name, "kind": "foreign", "owner": row["owner"],
            "message": f"schedule {name!r} is owned by {row['owner']!r}, not {owner!r}; "
                       "an operator must transfer it",
        })
    elif row["origin"] != "code":
        state.conflicts.append({
            "name": name, "kind": "made_at_run_time", "owner": owner,
            "message": f"schedule {name!r} of {owner!r} was made at run time; the manifest cannot declare it "
                       "(delete it at run time, or rename the declared one)",
        })
    elif row["retired_at"] is not None:
        state.conflicts.append({
            "name": name, "kind": "retired", "owner": owner,
            "message": f"schedule {name!r} is desired by {owner!r} but retired; an operator must restore it",
        })
    else:
        current, desired = row["current"], row["definition"]
        changes = {
            col: {"from": current[col], "to": desired.get(col, DEFINITION_DEFAULTS.get(col))}
            for col in DEFINITION if current[col] != desired.get(col, DEFINITION_DEFAULTS.get(col))
        }
        state.updates.append({"name": name, "changes": changes})


# --- the agreement clock (S26) --------------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    hash: str | None
    since: datetime | None
    seen_at: datetime | None


def agreement_after(state: OwnerState) -> Agreement:
    """The agreement clock once this assessment is recorded as evidence.

    It keeps running only while the same manifest has been agreed with evidence in every
    freshness window; anything that is not agreement (no declaration, mixed manifests,
    a conflict, an incapable runtime) stops it, and a gap in evidence restarts it.
    """
    if not state.agreeable:
        return Agreement(None, None, None)
    record, now, live = state.record, state.now, state.single_hash
    since, seen = record["agreement_since"], record["agreement_seen_at"]
    if record["agreement_hash"] == live and since is not None and seen is not None and now - seen <= state.window:
        return Agreement(live, since, max(seen, now))
    return Agreement(live, now, now)


def record_evidence(conn: psycopg.Connection[Any], state: OwnerState) -> Agreement:
    """Persist the agreement clock (caller holds the protocol lock and the owner row).

    The conflicts were checked by `assess` before this write, so publications and leader
    passes that alternate cannot keep restarting (or wrongly extending) the clock.
    """
    after = agreement_after(state)
    record = state.record
    if (after.hash, after.since, after.seen_at) != (
        record["agreement_hash"], record["agreement_since"], record["agreement_seen_at"]
    ):
        # The engine's own bookkeeping (a publication or a leader pass), not a hand edit: the
        # owner's reconciliation capability keeps it out of the audit trail (a label would not).
        begin_reconcile(conn, state.owner)
        declare_actor(conn, RECONCILER_LABEL)
        conn.execute(
            "UPDATE awa.owners SET agreement_hash = %s, agreement_since = %s, agreement_seen_at = %s, "
            "updated_at = now() WHERE owner = %s",
            (after.hash, after.since, after.seen_at, state.owner),
        )
        record.update(agreement_hash=after.hash, agreement_since=after.since, agreement_seen_at=after.seen_at)
    return after


def grace_remaining(state: OwnerState, agreement: Agreement) -> timedelta | None:
    if agreement.since is None:
        return None
    return max(timedelta(0), state.grace_required - (state.now - agreement.since))


def may_retire(state: OwnerState, agreement: Agreement) -> bool:
    """S26: every condition, including the longest grace any live declaration asks for."""
    remaining = grace_remaining(state, agreement)
    return state.agreeable and remaining is not None and remaining <= timedelta(0)


# --- blocking reasons (S34) -----------------------------------------------------------


def _blocker(code: str, message: str, blocks: tuple[str, ...], **extra: Any) -> dict[str, Any]:
    return {"code": code, "message": message, "blocks": list(blocks), **extra}


def blockers(state: OwnerState, agreement: Agreement) -> list[dict[str, Any]]:
    """Every reason reconciliation of this owner is held back, most fundamental first.

    `blocks` says what each reason holds back: inserts, updates, retirements.
    """
    owner, out = state.owner, []
    if not state.declarations:
        out.append(_blocker(
            "no_fresh_declaration",
            f"no fresh authoritative runtime declares owner {owner!r}",
            ("inserts", "updates", "retirements"),
        ))
    elif len(state.hashes) > 1:
        out.append(_blocker(
            "mixed_manifests",
            f"{len(state.declarations)} fresh runtimes of {owner!r} publish {len(state.hashes)} different "
            f"manifests ({', '.join(short_hash(h) for h in state.hashes)}){differing_text(state.differing)}; "
            "waiting for one",
            ("inserts", "updates", "retirements"),
            hashes=list(state.hashes),
        ))
    for conflict in state.conflicts:
        code = "retired_desired" if conflict["kind"] == "retired" else "conflict"
        out.append(_blocker(code, conflict["message"], ("updates", "retirements"), name=conflict["name"],
                            kind=conflict["kind"], owner=conflict["owner"]))
    for runtime in state.incapable:
        out.append(_blocker(
            "incapable_runtime",
            f"runtime {runtime_label(runtime)} (version {runtime['version']}) is fresh but does not support "
            f"the ownership protocol (protocol {runtime['protocol_version']} < {PROTOCOL_VERSION})",
            ("retirements",),
            instance_id=str(runtime["instance_id"]),
        ))
    remaining = grace_remaining(state, agreement)
    if state.agreeable and state.retirements and remaining is not None and remaining > timedelta(0):
        seconds = remaining.total_seconds()
        out.append(_blocker(
            "grace_remaining",
            f"agreement on {short_hash(state.single_hash)} since {agreement.since:%Y-%m-%d %H:%M:%S%z}; "
            f"retirement waits {seconds:.0f}s more (grace {state.grace_required.total_seconds():.0f}s)",
            ("retirements",),
            seconds_left=seconds,
        ))
    return out
