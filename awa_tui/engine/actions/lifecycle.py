"""Operator lifecycle of owned schedules (S23, S27-S29, S31): adopt, transfer, retire,
restore, retire_owner, restore_owner.

Each runs in one transaction: protocol lock, then the owner rows it touches (sorted), then
schedule rows in name order (S32); it checks the state, changes it under the operator
context (S33, declared with `begin_action`, whose rows the database writes with
before/after, S20), and voids the certificates of exactly the owners it touched (S31).
`now` defaults to DB time, read after the lock.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import psycopg

from awa_tui.engine.actions.ops import SCHEDULE_STATE_COLUMNS, lock_schedule
from awa_tui.engine.core.audit import begin_action, record_event
from awa_tui.engine.core.db import PROTOCOL_LOCK_KEY, db_now
from awa_tui.engine.core.errors import Conflict
from awa_tui.engine.core.guards import check_operator
from awa_tui.engine.core.scope import unseen_owner, unseen_schedule
from awa_tui.engine.ownership.agreement import invalidate_certificates, lock_owner
from awa_tui.engine.ownership.manifest import check_new_owner, check_owner


def _begin(
    conn: psycopg.Connection[Any], now: datetime | None, operator: str, action: str,
    detail: dict[str, Any] | None = None,
) -> datetime:
    begin_action(conn, operator, action, detail)  # first: a role without the gate changes nothing
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (PROTOCOL_LOCK_KEY,))
    return now or db_now(conn)


def _peek(conn: psycopg.Connection[Any], name: str) -> dict[str, Any]:
    """The row before its owner rows are locked; owners only change under the protocol
    lock, which the caller holds, so what is read here stays true."""
    row = conn.execute(f"SELECT {SCHEDULE_STATE_COLUMNS} FROM awa.cron_jobs WHERE name = %s", (name,)).fetchone()
    if row is None:
        raise unseen_schedule(conn, name)
    return row


def _lock_owners(conn: psycopg.Connection[Any], owners: list[str | None]) -> list[str]:
    touched = sorted({o for o in owners if o is not None})
    for owner in touched:
        lock_owner(conn, owner)
    return touched


def _update(conn: psycopg.Connection[Any], sql: str, params: dict[str, Any]) -> dict[str, Any]:
    row = conn.execute(f"{sql} RETURNING {SCHEDULE_STATE_COLUMNS}", params).fetchone()  # type: ignore[arg-type]
    if row is None:  # the row is locked, so only the fence can have suppressed the change
        raise Conflict(f"schedule {params['name']!r} could not be changed (refused by the database fence)")
    return row


def _change(
    conn: psycopg.Connection[Any], name: str, operator: str, now: datetime | None, action: str,
    refusal: Callable[[dict[str, Any]], str | None], set_sql: str, to_owner: str | None = None,
) -> dict[str, Any]:
    """One lifecycle change of one schedule: refused (Conflict) when `refusal` of the current
    row says why; else its owner rows (current and `to_owner`) and row are locked in S32
    order, the row changed by `set_sql` (params: name, at, by, owner) and the touched
    owners' certificates voided (S31)."""
    with conn.transaction():
        at = _begin(conn, now, operator, action)
        current = _peek(conn, name)
        problem = refusal(current)
        if problem is not None:
            raise Conflict(problem)
        touched = _lock_owners(conn, [current["owner"], to_owner])
        lock_schedule(conn, name)
        after = _update(conn, f"UPDATE awa.cron_jobs SET {set_sql} WHERE name = %(name)s",
                        {"name": name, "at": at, "by": operator, "owner": to_owner})
        invalidate_certificates(conn, touched)
    return after


def adopt(
    conn: psycopg.Connection[Any], name: str, owner: str, operator: str, now: datetime | None = None
) -> dict[str, Any]:
    """S23: give an unowned schedule to `owner` (its manifest may then manage it)."""
    operator, owner = check_operator(operator), check_new_owner(owner)

    def refusal(current: dict[str, Any]) -> str | None:
        if current["owner"] == owner:
            return f"schedule {name!r} is already owned by {owner!r}"
        if current["owner"] is not None:
            return f"schedule {name!r} is owned by {current['owner']!r}; use transfer to move it to {owner!r}"
        return None

    return _change(conn, name, operator, now, "adopt", refusal, "owner = %(owner)s", owner)


def transfer(
    conn: psycopg.Connection[Any], name: str, to_owner: str, operator: str, now: datetime | None = None
) -> dict[str, Any]:
    """S23/S31: move an owned schedule to another owner; voids both owners' certificates."""
    operator, to_owner = check_operator(operator), check_new_owner(to_owner)

    def refusal(current: dict[str, Any]) -> str | None:
        if current["owner"] is None:
            return f"schedule {name!r} is unowned; use adopt to give it to {to_owner!r}"
        if current["owner"] == to_owner:
            return f"schedule {name!r} is already owned by {to_owner!r}"
        return None

    return _change(conn, name, operator, now, "transfer", refusal, "owner = %(owner)s", to_owner)


def retire(conn: psycopg.Connection[Any], name: str, operator: str, now: datetime | None = None) -> dict[str, Any]:
    """S27: tombstone one schedule (owned or not). It keeps its row and never fires."""
    operator = check_operator(operator)

    def refusal(current: dict[str, Any]) -> str | None:
        if current["retired_at"] is not None:
            return f"schedule {name!r} is already retired (by {current['retired_by']})"
        return None

    return _change(conn, name, operator, now, "retire", refusal, "retired_at = %(at)s, retired_by = %(by)s")


# S28: the boundary is the restore instant, so no fire of the retired period is replayed
# whatever the policy; greatest() never moves the CAS token backwards. Pause is kept.
RESTORE_SET = (
    "retired_at = NULL, retired_by = NULL, "
    "last_enqueued_at = greatest(last_enqueued_at, %(at)s::timestamptz), next_fire_at = NULL"
)


def restore(conn: psycopg.Connection[Any], name: str, operator: str, now: datetime | None = None) -> dict[str, Any]:
    """S28: clear the tombstone; evaluation resumes from now (DB time), nothing replays."""
    operator = check_operator(operator)

    def refusal(current: dict[str, Any]) -> str | None:
        return f"schedule {name!r} is not retired" if current["retired_at"] is None else None

    return _change(conn, name, operator, now, "restore", refusal, RESTORE_SET)


def _owner_rows(conn: psycopg.Connection[Any], owner: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT name, retired_at FROM awa.cron_jobs WHERE owner = %s ORDER BY name", (owner,)
    ).fetchall()
    if not rows:
        raise unseen_owner(conn, owner)
    return rows


def _bulk(
    conn: psycopg.Connection[Any], owner: str, operator: str, action: str, names: list[str], set_sql: str,
    at: datetime,
) -> dict[str, Any]:
    lock_owner(conn, owner)
    conn.execute(  # S32: schedule rows locked in name order before the UPDATE
        "SELECT name FROM awa.cron_jobs WHERE name = ANY(%s::text[]) ORDER BY name FOR UPDATE", (names,)
    )
    afters = conn.execute(
        f"UPDATE awa.cron_jobs SET {set_sql} WHERE name = ANY(%(names)s::text[]) AND owner = %(owner)s "
        f"RETURNING {SCHEDULE_STATE_COLUMNS}",
        {"names": names, "owner": owner, "at": at, "by": operator},
    ).fetchall()
    # Each schedule's row is written by the database; the owner-wide summary is an event.
    done = sorted(r["name"] for r in afters)
    record_event(conn, action, f"owner:{owner}", {"names": done}, None, {"count": len(done)})
    invalidate_certificates(conn, [owner])
    return {"owner": owner, "at": at, "names": done, "count": len(done)}


def _change_owner(
    conn: psycopg.Connection[Any], owner: str, operator: str, now: datetime | None, action: str,
    retired: bool, refusal: str, set_sql: str,
) -> dict[str, Any]:
    """Change every schedule of `owner` whose retirement is `retired` by `set_sql`; a
    Conflict (`refusal`, formatted with the owner) when there is none."""
    operator, owner = check_operator(operator), check_owner(owner)
    with conn.transaction():
        at = _begin(conn, now, operator, action, {"owner": owner})
        names = [r["name"] for r in _owner_rows(conn, owner) if (r["retired_at"] is not None) == retired]
        if not names:
            raise Conflict(refusal.format(owner=owner))
        return _bulk(conn, owner, operator, action, names, set_sql, at)


def retire_owner(
    conn: psycopg.Connection[Any], owner: str, operator: str, now: datetime | None = None
) -> dict[str, Any]:
    """S29: retire every active schedule of `owner`; needs no live runtime of that owner.

    Returns {owner, at, names (retired now), count}.
    """
    return _change_owner(conn, owner, operator, now, "retire_owner", False,
                         "every schedule of owner {owner!r} is already retired",
                         "retired_at = %(at)s, retired_by = %(by)s")


def restore_owner(
    conn: psycopg.Connection[Any], owner: str, operator: str, now: datetime | None = None
) -> dict[str, Any]:
    """S28: restore every retired schedule of `owner`, each from now (nothing replays).

    Returns {owner, at, names (restored now), count}.
    """
    return _change_owner(conn, owner, operator, now, "restore_owner", True,
                         "owner {owner!r} has no retired schedules", RESTORE_SET)
