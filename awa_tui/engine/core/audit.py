"""How the engine takes part in the audit trail the database writes (S20, migration v006).

Triggers write one row per change of operator-controlled state, stamped with DB time and
the session (session_user, client address, application_name, backend pid). Our code never
inserts audit rows: it declares who acts and what the action is called, for the triggers
to record. Operators pass through `awa.begin_action` (a privilege the role layout grants);
engine actors (sync, the reconciler) set their label as plain context; the few actions
that change no audited row (trigger, drain, an owner-wide summary) go through
`awa.record_event`, which accepts only those names.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

SYNC_LABEL = "awa-sync"
RECONCILER_LABEL = "awa-reconciler"


def _json_default(value: Any) -> str:
    # Instants in the audit trail are ISO-8601, like every other instant we print.
    return value.isoformat() if isinstance(value, datetime) else str(value)


def jsonable(value: Any) -> Any:
    if value is None:
        return None
    return json.loads(json.dumps(value, default=_json_default))


def begin_action(
    conn: psycopg.Connection[Any], operator: str, action: str, detail: dict[str, Any] | None = None
) -> None:
    """Declare an operator action for this transaction (also the fence's operator context).

    Call it first in the transaction: a role without the audit privilege is then refused
    before anything is read for update or written.
    """
    conn.execute("SELECT awa.begin_action(%s, %s, %s)", (operator, action, Jsonb(jsonable(detail or {}))))


def begin_reconcile(conn: psycopg.Connection[Any], owner: str) -> None:
    """Take the capability of `owner`'s reconciliation for this transaction: the fence lets
    it redefine and retire that owner's rows (a setting would not: anyone may set one)."""
    conn.execute("SELECT awa.begin_reconcile(%s)", (owner,))


def declare_actor(
    conn: psycopg.Connection[Any], label: str, action: str | None = None, detail: dict[str, Any] | None = None
) -> None:
    """Label the engine's own changes in this transaction (sync, reconciliation).

    Plain transaction-local settings: they name the actor, they grant nothing (the fence
    keys on capabilities only the schema's own functions grant, and every change is
    audited regardless).
    """
    conn.execute(
        "SELECT set_config('awa.label', %s, true), set_config('awa.action', %s, true), "
        "set_config('awa.detail', %s, true)",
        # No detail is '' (read as {}), not '{}': awa.audit_context_detail parses a declared
        # one in an exception block, a subtransaction per audited row of a bulk change.
        (label, action or "", json.dumps(jsonable(detail)) if detail else ""),
    )


def record_event(
    conn: psycopg.Connection[Any], action: str, target: str, before: Any, after: Any,
    detail: dict[str, Any] | None = None,
) -> int:
    """The audit row of an action that changes no audited row; returns its id."""
    row = conn.execute(
        "SELECT awa.record_event(%s, %s, %s, %s, %s) AS id",
        (action, target, Jsonb(jsonable(before)), Jsonb(jsonable(after)), Jsonb(jsonable(detail or {}))),
    ).fetchone()
    assert row is not None
    return int(row["id"])
