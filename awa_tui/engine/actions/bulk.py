"""Bulk operator actions: pause, resume, trigger, retire, restore or adopt a selection of
schedules (names, or a parsed filter), and adopt every unowned schedule an owner declares.

The selection is cut into batches of `BATCH_SIZE` names, each one transaction that does
what the single action does (ops.py, actions/lifecycle.py): declare the action to the
audit trail first, take the locks in the same order (protocol lock, owner rows sorted,
schedule rows in name order: S32), re-check each row's state under its lock, change the
rows that pass, and void the certificates of the owners touched (S31). A row whose state
already says no (already paused, not retired...) is reported as skipped with the reason
the single action would give, and the rest of its batch goes on. The database writes one
audit row per changed schedule (S20); a trigger, which changes no audited row, records
one event per schedule, as a single trigger does.

A dry run reads the same rows without locks and reports what would be done; it writes
nothing (not even an audit row).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from awa_tui.engine.actions.lifecycle import RESTORE_SET
from awa_tui.engine.actions.ops import PAUSE_SET, PauseWindow, past_end, pause_window
from awa_tui.engine.core.audit import begin_action, jsonable
from awa_tui.engine.core.db import PROTOCOL_LOCK_KEY, db_now
from awa_tui.engine.core.errors import NotFound, ValidationError
from awa_tui.engine.core.guards import check_operator
from awa_tui.engine.core.limits import BATCH_SIZE, MAX_BATCH_SIZE
from awa_tui.engine.filtering.sql import schedule_condition
from awa_tui.engine.ownership.agreement import fresh_runtimes, invalidate_certificates, lock_owner
from awa_tui.engine.ownership.manifest import PROTOCOL_VERSION, check_new_owner, check_owner
from awa_tui.filters import Filter
from awa_tui.printable import printable


@dataclass(frozen=True)
class Skipped:
    name: str
    reason: str  # the single action's refusal, e.g. "already paused (by alice@ops)"


@dataclass(frozen=True)
class BulkResult:
    """What a bulk action did (or, for a dry run, would do), names in name order."""

    action: str
    done: tuple[str, ...]
    skipped: tuple[Skipped, ...]
    dry_run: bool
    batches: int
    owner: str | None = None  # the new owner, for adopt
    job_ids: dict[str, int] = field(default_factory=dict)  # trigger: schedule -> job written

    @property
    def selected(self) -> int:
        return len(self.done) + len(self.skipped)


_ROW_COLUMNS = "name, paused_at, paused_by, retired_at, retired_by, owner, end_at"
Check = Callable[[dict[str, Any], str | None], str | None]


def _check_pause(row: dict[str, Any], owner: str | None) -> str | None:
    return f"already paused (by {printable(row['paused_by'])})" if row["paused_at"] is not None else None


def _check_resume(row: dict[str, Any], owner: str | None) -> str | None:
    return "not paused" if row["paused_at"] is None else None


def _check_trigger(row: dict[str, Any], owner: str | None) -> str | None:
    return "retired; restore it before triggering" if row["retired_at"] is not None else None


def _check_retire(row: dict[str, Any], owner: str | None) -> str | None:
    return f"already retired (by {printable(row['retired_by'])})" if row["retired_at"] is not None else None


def _check_restore(row: dict[str, Any], owner: str | None) -> str | None:
    return "not retired" if row["retired_at"] is None else None


def _check_adopt(row: dict[str, Any], owner: str | None) -> str | None:
    if row["owner"] == owner:
        return f"already owned by {printable(repr(owner))}"
    if row["owner"] is not None:
        return f"owned by {printable(repr(row['owner']))}; use transfer to move it to {printable(repr(owner))}"
    return None


@dataclass(frozen=True)
class _Action:
    check: Check
    set_sql: str  # the UPDATE's SET list; empty for trigger (it inserts jobs)
    lifecycle: bool  # under the protocol lock, with owner locks and certificate voiding


ACTIONS: dict[str, _Action] = {
    "pause": _Action(_check_pause, PAUSE_SET, False),
    "resume": _Action(_check_resume, "paused_at = NULL, paused_by = NULL", False),
    "trigger": _Action(_check_trigger, "", False),
    "retire": _Action(_check_retire, "retired_at = %(at)s, retired_by = %(by)s", True),
    "restore": _Action(_check_restore, RESTORE_SET, True),
    "adopt": _Action(_check_adopt, "owner = %(owner)s", True),
}

def select_names(
    conn: psycopg.Connection[Any], names: Sequence[str] | None, where: Filter | None, now: datetime | None = None
) -> list[str]:
    """The selection in name order: the given names (deduplicated), or the schedules that
    `where` matches now. Exactly one of the two must be given, and a filter must say
    something: an empty one would select every schedule by accident."""
    if names and where is not None:
        raise ValidationError("select schedules by names or by a filter, not both")
    if where is not None:
        if not where:
            raise ValidationError("filter: empty; to select every schedule say so: name:*")
        condition = schedule_condition(conn, where, now)
        rows = conn.execute(
            f"SELECT c.name FROM awa.cron_jobs c WHERE {condition.sql} ORDER BY c.name", condition.params
        ).fetchall()
        return [r["name"] for r in rows]
    if not names:
        raise ValidationError("nothing selected: give schedule names or a filter")
    for name in names:
        if not isinstance(name, str) or not name:
            raise ValidationError(f"schedule name: a non-empty string is required, got {name!r}")
    return sorted(set(names))


def _pause_check(window: PauseWindow) -> Check:
    """S65: with an end or a reason, a paused row is edited, not skipped; a row whose end
    came before the pause's (changed since the selection was checked) is skipped."""
    def check(row: dict[str, Any], owner: str | None) -> str | None:
        refusal = past_end(window, row["end_at"])
        return refusal.removeprefix("until: ") if refusal else None
    return check


def _batch(
    conn: psycopg.Connection[Any], verb: str, names: list[str], *, operator: str, owner: str | None,
    now: datetime | None, dry_run: bool, detail: dict[str, Any], window: PauseWindow | None = None,
) -> tuple[list[str], list[Skipped], dict[str, int]]:
    action = ACTIONS[verb]
    if window:
        action = _Action(_pause_check(window), action.set_sql, action.lifecycle)
    with conn.transaction():
        if not dry_run:
            begin_action(conn, operator, verb, detail)  # first: a role without the gate changes nothing
        at = None
        if action.lifecycle and not dry_run:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (PROTOCOL_LOCK_KEY,))
            at = now or db_now(conn)
            # Owners change only under the protocol lock we hold: this unlocked read stays true.
            peek = conn.execute(
                f"SELECT {_ROW_COLUMNS} FROM awa.cron_jobs WHERE name = ANY(%s::text[])", (names,)
            ).fetchall()
            touched = {owner} if verb == "adopt" else {r["owner"] for r in peek if not action.check(r, owner)}
            for name in sorted(o for o in touched if o is not None):
                lock_owner(conn, name)
        lock = "" if dry_run else " FOR UPDATE"
        rows = {
            r["name"]: r for r in conn.execute(
                f"SELECT {_ROW_COLUMNS} FROM awa.cron_jobs WHERE name = ANY(%s::text[]) ORDER BY name{lock}",
                (names,),
            ).fetchall()
        }
        skipped: list[Skipped] = []
        eligible: list[str] = []
        for name in names:
            row = rows.get(name)
            reason = "unknown schedule" if row is None else action.check(row, owner)
            if reason:
                skipped.append(Skipped(name, reason))
            else:
                eligible.append(name)
        if dry_run or not eligible:
            return eligible, skipped, {}
        # A pause starts at `now` when given, as a single one does (DB time otherwise).
        params = {"names": eligible, "by": operator, "at": now if verb == "pause" else at, "owner": owner,
                  "operator": operator,
                  "until": window.until if window else None, "reason": window.reason if window else None}
        job_ids: dict[str, int] = {}
        if verb == "trigger":
            for name in sorted(eligible):  # each job and its audit event, by the schema's function
                job = conn.execute("SELECT id FROM awa.trigger_job(%s, %s)", (name, Jsonb(jsonable(detail)))).fetchone()
                assert job is not None
                job_ids[name] = int(job["id"])
            changed = set(job_ids)
        else:
            changed = {
                r["name"] for r in conn.execute(
                    f"UPDATE awa.cron_jobs SET {action.set_sql} WHERE name = ANY(%(names)s::text[]) RETURNING name",
                    params,
                ).fetchall()
            }
        # The rows are locked: only the database fence can have held one back.
        skipped += [Skipped(n, "refused by the database fence") for n in eligible if n not in changed]
        if action.lifecycle:
            owners = [owner] if verb == "adopt" else [rows[n]["owner"] for n in changed]
            invalidate_certificates(conn, [o for o in owners if o is not None])
        return [n for n in eligible if n in changed], skipped, job_ids


def run_bulk(
    conn: psycopg.Connection[Any],
    verb: str,
    names: Sequence[str] | None,
    operator: str,
    *,
    where: Filter | None = None,
    owner: str | None = None,
    dry_run: bool = False,
    batch_size: int = BATCH_SIZE,
    now: datetime | None = None,
    until: datetime | timedelta | None = None,
    reason: str | None = None,
) -> BulkResult:
    """Apply `verb` (pause, resume, trigger, retire, restore, adopt) to the selection, one
    transaction per batch of `batch_size` names. `owner` is adopt's new owner; `now` is
    the retire/restore instant (DB time when omitted) and the filter's `late` clock.
    `until` and `reason` (pause only, S65): the pause's end and reason, checked against
    every selected schedule's end before anything is written."""
    if verb not in ACTIONS:
        raise ValidationError(f"bulk action: expected one of {', '.join(ACTIONS)}, got {verb!r}")
    if verb == "adopt":
        owner = check_new_owner(owner)
    elif owner is not None:
        raise ValidationError(f"bulk {verb}: an owner applies only to adopt")
    if not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise ValidationError(f"batch size: must be 1..{MAX_BATCH_SIZE}, got {batch_size!r}")
    window: PauseWindow | None = None
    if until is not None or reason is not None:
        if verb != "pause":
            raise ValidationError(f"bulk {verb}: an end (until) or a reason applies only to pause")
        now = now or db_now(conn)  # every batch's pause starts here, and a duration counts from it
        window = pause_window(until, reason, now)
    if not dry_run:
        operator = check_operator(operator)
    selected = select_names(conn, names, where, now)
    if window is not None and window.until is not None and selected:
        _check_ends(conn, selected, window)
    return _run(conn, verb, selected, operator, owner=owner, dry_run=dry_run, batch_size=batch_size, now=now,
                window=window)


def _check_ends(conn: psycopg.Connection[Any], selected: list[str], window: PauseWindow) -> None:
    """S65: a pause that outlasts a selected schedule's end is refused for the whole
    selection, in one line, before any batch writes."""
    ended = conn.execute(
        "SELECT name, end_at FROM awa.cron_jobs WHERE name = ANY(%s::text[]) AND end_at < %s ORDER BY name",
        (selected, window.until)).fetchall()
    if ended:
        first = ended[0]
        refusal = past_end(window, first["end_at"])
        assert refusal is not None
        more = f" and {len(ended) - 1} more selected" if len(ended) > 1 else ""
        raise ValidationError(f"{refusal}: schedule {printable(first['name'])}{more}")


def _run(
    conn: psycopg.Connection[Any], verb: str, selected: list[str], operator: str, *, owner: str | None,
    dry_run: bool, batch_size: int, now: datetime | None, window: PauseWindow | None = None,
) -> BulkResult:
    done: list[str] = []
    skipped: list[Skipped] = []
    job_ids: dict[str, int] = {}
    chunks = [selected[i:i + batch_size] for i in range(0, len(selected), batch_size)]
    for index, chunk in enumerate(chunks, start=1):
        detail: dict[str, Any] = {"bulk": True, "batch": index, "batches": len(chunks), "selected": len(selected)}
        if owner is not None:
            detail["owner"] = owner
        ok, refused, jobs = _batch(conn, verb, chunk, operator=operator, owner=owner, now=now,
                                   dry_run=dry_run, detail=detail, window=window)
        done += ok
        skipped += refused
        job_ids.update(jobs)
    return BulkResult(verb, tuple(done), tuple(sorted(skipped, key=lambda s: s.name)), dry_run, len(chunks),
                      owner, job_ids)


def declared_unowned(conn: psycopg.Connection[Any], owner: str, now: datetime | None = None) -> list[str]:
    """Unowned schedules that a fresh authoritative declaration of `owner` lists in its
    manifest (what `owner list`/`plan` show as unowned conflicts), in name order."""
    owner = check_owner(owner)
    declarations = [
        r["instance_id"] for r in fresh_runtimes(conn, now or db_now(conn))
        if r["authoritative"] and r["owner"] == owner and r["manifest_hash"] is not None
        and r["protocol_version"] >= PROTOCOL_VERSION
    ]
    if not declarations:
        raise NotFound(f"owner {owner!r} has no fresh authoritative declaration: no running runtime declares "
                       "its manifest")
    rows = conn.execute(
        "SELECT c.name FROM awa.cron_jobs c WHERE c.owner IS NULL AND EXISTS ("
        "SELECT 1 FROM awa.runtime_instances r WHERE r.instance_id = ANY(%s) AND r.manifest ? c.name) "
        "ORDER BY c.name",
        (declarations,),
    ).fetchall()
    return [r["name"] for r in rows]


def adopt_declared(
    conn: psycopg.Connection[Any], owner: str, operator: str, *, dry_run: bool = False,
    batch_size: int = BATCH_SIZE, now: datetime | None = None,
) -> BulkResult:
    """Adopt for `owner` every unowned schedule its fresh declarations list, as one
    action (batched like any bulk action; each row re-checked under its lock)."""
    names = declared_unowned(conn, owner, now)
    if not names:
        return BulkResult("adopt", (), (), dry_run, 0, owner)
    return run_bulk(conn, "adopt", names, operator, owner=owner, dry_run=dry_run, batch_size=batch_size, now=now)
