"""Operator actions (S16-S18, S20). Each runs in one transaction: it declares itself to
the audit trail first (`begin_action`), locks its target row, checks the state and changes
it; the database writes the audit entry with before/after (migration v006).

Read-only enforcement lives here (and in the read-only session setting of a read-only
client), not only in the console.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg

from awa_tui.engine.core.audit import begin_action
from awa_tui.engine.core.db import PROTOCOL_LOCK_KEY
from awa_tui.engine.core.errors import Conflict, NotFound, ValidationError
from awa_tui.engine.core.guards import check_operator, check_pause_reason
from awa_tui.engine.core.scope import unseen_schedule
from awa_tui.engine.ownership.agreement import invalidate_certificates, lock_owner
from awa_tui.engine.schedules.columns import ACTION_ROW, listed
from awa_tui.printable import printable

SCHEDULE_STATE_COLUMNS = listed(ACTION_ROW)


# What an operator action needs: to pause a schedule (column-level grants count) and the
# audit gate (awa.begin_action; the trail itself is written by the database, so INSERT on
# awa.audit_log is neither needed nor granted). A job is made by awa.trigger_job (v035),
# granted with the gate: no role but the runtime writes awa.jobs itself.
WRITE_ACCESS_SQL = """
SELECT current_user AS role, pg_is_in_recovery() AS standby,
       current_setting('transaction_read_only') = 'on' AS read_only_session,
       has_column_privilege('awa.cron_jobs', 'paused_at', 'UPDATE') AS schedules,
       coalesce(has_function_privilege(to_regprocedure('awa.begin_action(text, text, jsonb)'), 'EXECUTE'),
                false) AS audit
"""


def write_refusal(conn: psycopg.Connection[Any]) -> str | None:
    """Why this session cannot perform operator actions (one line), or None if it can.

    Lets a console on a SELECT-only role or a standby say READ-ONLY up front, instead of
    offering actions that the database would refuse one by one.
    """
    row = conn.execute(WRITE_ACCESS_SQL).fetchone()
    assert row is not None
    if row["standby"]:
        from awa_tui.engine.core.standby import server_where, standby_message

        return standby_message(server_where(conn))
    if row["read_only_session"]:
        return "the session is read-only (default_transaction_read_only)"
    missing = [what for what, ok in (("UPDATE on awa.cron_jobs", row["schedules"]),
                                     ("EXECUTE on awa.begin_action", row["audit"])) if not ok]
    if missing:
        return f"role {row['role']} lacks {', '.join(missing)}"
    return None


def lock_schedule(conn: psycopg.Connection[Any], name: str) -> dict[str, Any]:
    row = conn.execute(
        f"SELECT {SCHEDULE_STATE_COLUMNS} FROM awa.cron_jobs WHERE name = %s FOR UPDATE", (name,)
    ).fetchone()
    if row is None:
        raise unseen_schedule(conn, name)
    return row


@contextmanager
def _action(
    conn: psycopg.Connection[Any], operator: str, action: str, lock: Callable[[], dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    """The transaction of one operator action on one row: declared to the audit trail
    first (a role without the gate changes nothing), then `lock` locks and returns the
    row, which is yielded as it was before the change."""
    with conn.transaction():
        begin_action(conn, operator, action)
        yield lock()


def _update_one(
    conn: psycopg.Connection[Any], table: str, key: str, value: str, set_sql: str, returning: str, operator: str
) -> dict[str, Any]:
    """UPDATE the row of `table` whose `key` is `value` (locked by `_action`); `set_sql`
    may use %(operator)s."""
    after = conn.execute(
        f"UPDATE {table} SET {set_sql} WHERE {key} = %(value)s RETURNING {returning}",
        {"value": value, "operator": operator},
    ).fetchone()
    assert after is not None
    return after


def _update_schedule(conn: psycopg.Connection[Any], name: str, set_sql: str, operator: str) -> dict[str, Any]:
    return _update_one(conn, "awa.cron_jobs", "name", name, set_sql, SCHEDULE_STATE_COLUMNS, operator)


@dataclass(frozen=True)
class PauseWindow:
    """S65: what a pause says beyond who and since when: its end (an instant, resolved) and
    its reason; either may be None."""

    until: datetime | None
    reason: str | None

    def __bool__(self) -> bool:
        return self.until is not None or self.reason is not None


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="seconds") if not t.microsecond else t.isoformat()


def pause_window(until: datetime | timedelta | None, reason: str | None, at: datetime) -> PauseWindow:
    """The end and reason of a pause made at `at`: `until` an instant, or a duration from
    `at`; refused in one line when it is not after `at` (or is naive), or the reason is not
    one printable line."""
    reason = check_pause_reason(reason)
    if until is None:
        return PauseWindow(None, reason)
    if isinstance(until, timedelta):
        end = at + until
    elif isinstance(until, datetime):
        if until.utcoffset() is None:
            raise ValidationError(f"until: must be a timezone-aware instant, got {until.isoformat()}")
        end = until
    else:
        raise ValidationError(f"until: expected an instant or a duration, got {until!r}"[:200])
    if end <= at:
        raise ValidationError(f"until: {_iso(end)} is not in the future (now {at.isoformat(timespec='seconds')})")
    return PauseWindow(end, reason)


def past_end(window: PauseWindow, end_at: datetime | None) -> str | None:
    """Why `window` does not fit a schedule ending at `end_at` (None when it does): a pause
    that outlasts the schedule would never be resumed into anything."""
    if window.until is None or end_at is None or window.until <= end_at:
        return None
    return f"until: {_iso(window.until)} is after the schedule's end ({_iso(end_at)})"


# One SET for a pause and for an edit of one (S65): a paused row keeps its paused_at; an end
# or reason not given is kept (the trigger of v025 cleared them at the last resume).
PAUSE_SET = ("paused_at = coalesce(paused_at, %(at)s::timestamptz, now()), paused_by = %(operator)s, "
             "paused_until = coalesce(%(until)s::timestamptz, paused_until), "
             "pause_reason = coalesce(%(reason)s::text, pause_reason)")


def pause(conn: psycopg.Connection[Any], name: str, operator: str, *, until: datetime | timedelta | None = None,
          reason: str | None = None, now: datetime | None = None) -> dict[str, Any]:
    """S16: set paused_at (DB time, or `now`) and paused_by; last_enqueued_at is untouched.
    S65: with `until` (an instant or a duration from now) the leader resumes it then, and
    `reason` says why; pausing a paused schedule with either edits them (and paused_by)."""
    operator = check_operator(operator)
    with _action(conn, operator, "pause", lambda: lock_schedule(conn, name)) as before:
        # The pause's start (the transaction's time, which its audit row carries too), and
        # what a duration counts from.
        at = now or conn.execute("SELECT now() AS now").fetchone()["now"]  # type: ignore[index]
        window = pause_window(until, reason, at)
        if before["paused_at"] is not None and not window:
            # paused_by is a database string: escaped, so its newline is shown, not folded away.
            raise Conflict(f"schedule {name!r} is already paused (by {printable(before['paused_by'])})")
        refusal = past_end(window, before["end_at"])
        if refusal:
            raise ValidationError(refusal)
        after = conn.execute(
            f"UPDATE awa.cron_jobs SET {PAUSE_SET} WHERE name = %(name)s RETURNING {SCHEDULE_STATE_COLUMNS}",
            {"name": name, "operator": operator, "at": at, "until": window.until, "reason": window.reason},
        ).fetchone()
        assert after is not None
        return after


# The leader ends at most this many pauses a round (one statement); the rest the next round.
END_PAUSES_LIMIT = 1000


def end_pauses(conn: psycopg.Connection[Any], now: datetime | None = None, *, runtime: str | None = None,
               limit: int = END_PAUSES_LIMIT) -> list[tuple[str, datetime]]:
    """S65: resume every schedule whose pause has reached its end at `now` (DB time when
    omitted): the leader's duty. One statement (awa.end_pauses, v025: a probe of a partial
    index when nothing is due), audited as a resume by `awa-autoresume` with the runtime;
    the next pass applies each schedule's missed-fire policy, as after any resume. Returns
    (name, the end it reached), oldest end first."""
    try:
        with conn.transaction():
            rows = conn.execute("SELECT name, paused_until FROM awa.end_pauses(%s, %s, %s)",
                                (now, limit, runtime)).fetchall()
    except psycopg.errors.UndefinedFunction:
        return []  # a schema rolled back below v025 while this runtime leads (S61): no pause ends there
    return [(r["name"], r["paused_until"]) for r in rows]


def resume(conn: psycopg.Connection[Any], name: str, operator: str) -> dict[str, Any]:
    """S16: clear the pause; the schedule's policy decides what fires next pass."""
    operator = check_operator(operator)
    with _action(conn, operator, "resume", lambda: lock_schedule(conn, name)) as before:
        if before["paused_at"] is None:
            raise Conflict(f"schedule {name!r} is not paused")
        return _update_schedule(conn, name, "paused_at = NULL, paused_by = NULL", operator)


def trigger(conn: psycopg.Connection[Any], name: str, operator: str) -> dict[str, Any]:
    """S17: one job now, even while paused; refused for a retired schedule."""
    operator = check_operator(operator)
    with _action(conn, operator, "trigger", lambda: lock_schedule(conn, name)) as row:
        if row["retired_at"] is not None:
            raise Conflict(f"schedule {name!r} is retired; restore it before triggering")
        # The job and its audit event, by the schema's function (the role writes no job itself).
        job = conn.execute(
            "SELECT id, kind, queue, state, metadata, created_at FROM awa.trigger_job(%s)", (name,)).fetchone()
        assert job is not None
        return job


def remove(conn: psycopg.Connection[Any], name: str, operator: str) -> dict[str, Any]:
    """S6: delete a schedule row; code that still registers it brings it back at sync."""
    operator = check_operator(operator)
    with conn.transaction():
        begin_action(conn, operator, "remove")
        # S31/S32: removing an owned row voids its owner's certificate; owner state changes
        # under the protocol lock, then the owner row, then the schedule row.
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (PROTOCOL_LOCK_KEY,))
        peek = conn.execute("SELECT owner FROM awa.cron_jobs WHERE name = %s", (name,)).fetchone()
        if peek and peek["owner"] is not None:
            lock_owner(conn, peek["owner"])
        before = lock_schedule(conn, name)
        if before["retired_at"] is not None:
            raise Conflict(f"schedule {name!r} is retired; a retired schedule cannot be removed")
        conn.execute("DELETE FROM awa.cron_jobs WHERE name = %s", (name,))
        if before["owner"] is not None:
            invalidate_certificates(conn, [before["owner"]])
    return before


# --- queues (S18) -----------------------------------------------------------------------

QUEUE_ROW = "queue, paused, paused_at, paused_by"


def _queue_row(conn: psycopg.Connection[Any], queue: str) -> dict[str, Any]:
    conn.execute(
        "INSERT INTO awa.queue_meta (queue) VALUES (%s) ON CONFLICT (queue) DO NOTHING", (queue,)
    )
    row = conn.execute(
        f"SELECT {QUEUE_ROW} FROM awa.queue_meta WHERE queue = %s FOR UPDATE",
        (queue,),
    ).fetchone()
    assert row is not None
    return row


def _check_queue_name(queue: str) -> str:
    if not isinstance(queue, str) or not 1 <= len(queue) <= 200:
        raise ValidationError(f"queue: must be 1..200 characters, got {queue!r}")
    return queue


def _known_queue(conn: psycopg.Connection[Any], queue: str) -> None:
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM awa.queue_meta WHERE queue = %(q)s)"
        " OR EXISTS (SELECT 1 FROM awa.cron_jobs WHERE queue = %(q)s)"
        " OR EXISTS (SELECT 1 FROM awa.jobs WHERE queue = %(q)s) AS known",
        {"q": queue},
    ).fetchone()
    if not row or not row["known"]:
        raise NotFound(f"unknown queue {queue!r} (no schedule or job uses it)")


def _lock_queue(conn: psycopg.Connection[Any], queue: str) -> dict[str, Any]:
    """The queue's pause row, locked (which serialises actions on the queue)."""
    _known_queue(conn, queue)
    return _queue_row(conn, queue)


def _update_queue(conn: psycopg.Connection[Any], queue: str, set_sql: str, operator: str) -> dict[str, Any]:
    return _update_one(conn, "awa.queue_meta", "queue", queue, set_sql, QUEUE_ROW, operator)


def queue_pause(conn: psycopg.Connection[Any], queue: str, operator: str) -> dict[str, Any]:
    operator = check_operator(operator)
    _check_queue_name(queue)
    with _action(conn, operator, "queue_pause", lambda: _lock_queue(conn, queue)) as before:
        if before["paused"]:
            raise Conflict(f"queue {queue!r} is already paused (by {printable(before['paused_by'])})")
        return _update_queue(conn, queue, "paused = true, paused_at = now(), paused_by = %(operator)s", operator)


def queue_resume(conn: psycopg.Connection[Any], queue: str, operator: str) -> dict[str, Any]:
    operator = check_operator(operator)
    _check_queue_name(queue)
    with _action(conn, operator, "queue_resume", lambda: _lock_queue(conn, queue)) as before:
        if not before["paused"]:
            raise Conflict(f"queue {queue!r} is not paused")
        return _update_queue(conn, queue, "paused = false, paused_at = NULL, paused_by = NULL", operator)


def queue_drain(conn: psycopg.Connection[Any], queue: str, operator: str) -> dict[str, Any]:
    """Cancel every job of the queue that is waiting (available or retryable).

    Running jobs are left to finish: killing in-flight work is a separate decision.
    """
    operator = check_operator(operator)
    _check_queue_name(queue)
    with _action(conn, operator, "queue_drain", lambda: _lock_queue(conn, queue)):
        # The cancels and their audit event, by the schema's function.
        row = conn.execute("SELECT awa.drain_queue(%s) AS n", (queue,)).fetchone()
        assert row is not None
        result = {"queue": queue, "cancelled": int(row["n"])}
        return result
