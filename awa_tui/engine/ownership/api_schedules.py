"""Schedules made at run time (S64): create, edit and delete schedules through an API, one
or many at once, inside the caller's own transaction when given their connection.

A schedule made here is a row of `origin = 'api'` (migration v024) owned by an owner like
any other. It is validated as `periodic` validates (engine/schedules/definition.py), and
written with the statements sync writes with (engine/sync/writer.py: one jsonb array of
CHUNK rows per statement, in name order, with the first-fire hint of S52), so a million
is 40 statements, not a million round trips. Code never touches it: the additive sync
writes unowned rows only, and reconciliation leaves an owner's run-time rows out of its
manifest's inserts, updates and retirements (agreement.py, reconcile.py); an operator's
retire and restore (of it, or of its whole owner) apply as to any owned row.

The database audits every change (v024 its creation, v006/v010 its edits and deletion),
labelled with the acting client's operator label. Given a connection, the work runs in a
savepoint of the caller's transaction (`conn.transaction()`): a refusal rolls back exactly
what it wrote, and the labels and the owner's redefinition capability it declared are put
back as they were when it succeeds, so the caller's later statements are audited as theirs.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import date, timedelta
from itertools import groupby, pairwise
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row

from awa_tui.engine.core.audit import begin_action, declare_actor
from awa_tui.engine.core.db import ConnectionSource, db_now
from awa_tui.engine.core.errors import Conflict, DeclaredInCode, NameTaken, NotFound, ValidationError
from awa_tui.engine.core.errors import short_repr as _short
from awa_tui.engine.ownership.manifest import check_new_owner, check_owner
from awa_tui.engine.schedules.columns import DEFINITION, KEY, listed
from awa_tui.engine.schedules.definition import Schedule, built, with_default_lateness
from awa_tui.engine.sync.first_hints import FirstHints
from awa_tui.engine.sync.writer import CHUNK, CHUNK_WORK_MEM, INPUT_CTE, pipelined, rows_json

ORIGIN = "api"  # awa.cron_jobs.origin of a schedule made at run time (v024)
# The owner of a schedule made at run time when neither the call nor the client names one.
DEFAULT_OWNER = "app"
# The parameters of `Schedule.build` an edit may change (all but the name).
EDITABLE = tuple(p for p in inspect.signature(Schedule.build).parameters if p != KEY)
# The settings this room declares in a transaction (labels for the audit trail, the
# owner's redefinition capability's label, a bulk create's work_mem): put back when it
# runs in the caller's.
_SETTINGS = ("awa.label", "awa.action", "awa.detail", "awa.manager", "work_mem")

_T = TypeVar("_T")

INSERT_SQL = f"""
WITH {INPUT_CTE},
written AS (
    INSERT INTO awa.cron_jobs (name, {listed(DEFINITION)}, owner, origin, next_fire_at)
    SELECT name, {listed(DEFINITION)}, %(owner)s, '{ORIGIN}', next_fire_at FROM input ORDER BY name
    ON CONFLICT (name) DO NOTHING
    RETURNING name
)
-- The first name the insert skipped (it exists), looked for only when some were skipped.
SELECT count(*) AS n,
       CASE WHEN count(*) < %(given)s THEN
           (SELECT i.name FROM input i WHERE NOT EXISTS (SELECT FROM written w WHERE w.name = i.name)
            ORDER BY i.name LIMIT 1) END AS skipped
FROM written
"""

# The rows a change is about, locked in name order (S32's order, as sync's).
LOCK_SQL = """
SELECT name, owner, origin, retired_at{definition}
FROM awa.cron_jobs WHERE name = ANY(%(names)s::text[]) ORDER BY name FOR UPDATE
"""
_DEFINITION_COLUMNS = f", {listed(DEFINITION)}"  # an edit of some settings reads the others

HOLDER_SQL = "SELECT name, owner, origin FROM awa.cron_jobs WHERE name = %(name)s"

# A definition replaced whole; an operator override of it (if any) ends with it. Only the
# expression and zone move the fire hint (as sync's UPSERT); bounds reset it by trigger (v009).
UPDATE_SQL = f"""
WITH {INPUT_CTE}
UPDATE awa.cron_jobs c SET {", ".join(f"{col} = i.{col}" for col in DEFINITION)},
    overridden = NULL, updated_at = now(),
    next_fire_at = CASE WHEN (c.cron_expr, c.timezone) IS DISTINCT FROM (i.cron_expr, i.timezone)
                        THEN NULL ELSE c.next_fire_at END
FROM input i
WHERE c.name = i.name AND c.origin = '{ORIGIN}' AND c.owner = %(owner)s AND c.retired_at IS NULL
RETURNING c.name
"""

DELETE_SQL = f"""
DELETE FROM awa.cron_jobs
WHERE name = ANY(%(names)s::text[]) AND origin = '{ORIGIN}' AND retired_at IS NULL
RETURNING name
"""


# --- the transaction ---------------------------------------------------------------------


def run(db: ConnectionSource, conn: psycopg.Connection[Any] | None, work: Callable[[psycopg.Connection[Any]], _T],
        *, dry_run: bool = False, gate: tuple[str, str] | None = None) -> _T:
    """`work` on the caller's connection (in a savepoint of their open transaction, which
    then commits or rolls back with their own rows) or, without one, on a pooled
    connection of the engine's, committed at once. A dry run does the work, every check
    of it included, and rolls it back: nothing is written. `gate` (operator, action): an
    operator's action (the CLI's), which passes the audit gate first like every other, so a
    role without the audit privilege is refused before anything is written."""
    if conn is None:
        with db.connection() as own, own.transaction(force_rollback=dry_run):
            if gate is not None:
                begin_action(own, *gate)
            return work(own)
    with _dict_rows(conn), conn.transaction(force_rollback=dry_run):
        with _settings_kept(conn):
            return work(conn)


@contextmanager
def _dict_rows(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """The caller's connection may return tuples: this room (and the helpers it shares
    with sync) reads rows by column name. Client side only; nothing is sent."""
    before = conn.row_factory
    conn.row_factory = dict_row  # type: ignore[assignment]
    try:
        yield
    finally:
        conn.row_factory = before


@contextmanager
def _settings_kept(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """Put the transaction-local settings this room declares back as they were, once its
    work succeeded (a failure rolls the savepoint back, settings with it)."""
    row = conn.execute("SELECT " + ", ".join(f"current_setting(%s, true) AS s{i}" for i in range(len(_SETTINGS))),
                       _SETTINGS).fetchone()
    assert row is not None
    yield
    conn.execute("SELECT " + ", ".join("set_config(%s, %s, true)" for _ in _SETTINGS),
                 [v for i, name in enumerate(_SETTINGS) for v in (name, row[f"s{i}"] or "")])


# --- the entry points (Client's) -----------------------------------------------------------


def create_one(db: ConnectionSource, conn: psycopg.Connection[Any] | None, owner: str, label: str,
               schedule: Schedule, *, dry_run: bool = False, operator_action: bool = False) -> Schedule:
    run(db, conn, lambda c: create(c, [schedule], owner, label), dry_run=dry_run,
        gate=(label, "create") if operator_action else None)
    return schedule


def create_many(db: ConnectionSource, conn: psycopg.Connection[Any] | None, owner: str, label: str,
                schedules: Iterable[Schedule], max_lateness: int | None) -> int:
    given = [with_default_lateness(_checked_schedule(s), max_lateness) for s in schedules]
    return run(db, conn, lambda c: create(c, given, owner, label))


def edit_one(db: ConnectionSource, conn: psycopg.Connection[Any] | None, name: str, changes: Mapping[str, Any],
             owner: str | None, label: str, max_lateness: int | None, *, dry_run: bool = False,
             operator_action: bool = False) -> Schedule:
    return run(db, conn, lambda c: edit(c, name, changes, owner, label, max_lateness), dry_run=dry_run,
               gate=(label, "edit") if operator_action else None)


def update_many(db: ConnectionSource, conn: psycopg.Connection[Any] | None, schedules: Iterable[Schedule],
                owner: str | None, label: str, max_lateness: int | None) -> int:
    given = [with_default_lateness(_checked_schedule(s), max_lateness) for s in schedules]
    return run(db, conn, lambda c: update(c, given, owner, label))


def delete_many(db: ConnectionSource, conn: psycopg.Connection[Any] | None, names: Iterable[str],
                owner: str | None, label: str, *, dry_run: bool = False, operator_action: bool = False) -> int:
    wanted = [_check_name(n) for n in ([names] if isinstance(names, str) else names)]
    return run(db, conn, lambda c: delete(c, wanted, owner, label), dry_run=dry_run,
               gate=(label, "delete") if operator_action else None)


def _checked_schedule(schedule: object) -> Schedule:
    if not isinstance(schedule, Schedule):
        raise ValidationError(f"schedules: expected definitions made with Schedule.build, got {_short(schedule)}")
    return schedule


# --- create ------------------------------------------------------------------------------


def create(conn: psycopg.Connection[Any], schedules: Iterable[Schedule], owner: str, label: str) -> int:
    """Insert `schedules`, owned by `owner`, made at run time; returns how many. Refused
    whole (NameTaken, ValidationError naming the field) when a name is given twice or
    taken, or a calendar does not exist; the caller's transaction holds the savepoint."""
    from awa_tui.engine.calendars.store import refuse_unknown_calendars

    owner = check_new_owner(owner)
    ordered = _in_name_order(schedules)
    refuse_unknown_calendars(conn, ordered)
    declare_actor(conn, label, "create")  # the database adds the owner to each entry (v024)
    created = conn.execute("SELECT set_config('work_mem', %s, true), now() AS created_at",
                           (CHUNK_WORK_MEM,)).fetchone()
    assert created is not None
    hints = FirstHints(created["created_at"])  # S52: each row's first hint, as sync writes it
    parts = [ordered[start:start + CHUNK] for start in range(0, len(ordered), CHUNK)]
    rows = pipelined(conn, INSERT_SQL, ({"rows": rows_json(part, hints), "owner": owner, "given": len(part)}
                                        for part in parts))
    for part, row in zip(parts, rows, strict=True):
        if row is None or row["n"] != len(part):
            _refuse_taken(conn, row["skipped"] if row else None, owner)  # all or none: run() rolls back
    return len(ordered)


def _in_name_order(schedules: Iterable[Schedule]) -> list[Schedule]:
    ordered = sorted(schedules, key=lambda s: s.name)
    for a, b in pairwise(ordered):
        if a.name == b.name:
            raise NameTaken(f"name: {a.name!r} is given twice")
    return ordered


def _refuse_taken(conn: psycopg.Connection[Any], name: str | None, owner: str) -> None:
    """Say who holds `name`, which the insert skipped (it exists)."""
    holder = conn.execute(HOLDER_SQL, {"name": name}).fetchone()
    if holder is None:  # a concurrent delete between the two statements: say it plainly
        raise NameTaken("name: a name was taken while this change ran; try again")
    raise NameTaken(_taken_text(holder, owner))


def _taken_text(holder: Mapping[str, Any], owner: str | None) -> str:
    name = holder["name"]
    if holder["origin"] != ORIGIN:
        return f"name: {name!r} is taken by a schedule declared in code"
    if owner is not None and holder["owner"] != owner:
        return f"name: {name!r} is held by owner {holder['owner']!r}, not {owner!r}"
    return f"name: {name!r} already exists"


# --- edit --------------------------------------------------------------------------------


def update(conn: psycopg.Connection[Any], schedules: Iterable[Schedule], owner: str | None, label: str) -> int:
    """Replace the definitions of existing run-time schedules (of `owner`, when given, else
    of whichever owner holds each) by `schedules`; returns how many."""
    from awa_tui.engine.calendars.store import refuse_unknown_calendars

    ordered = _in_name_order(schedules)
    refuse_unknown_calendars(conn, ordered)
    rows: dict[str, dict[str, Any]] = {}
    for start in range(0, len(ordered), CHUNK):  # a bounded lock list per statement
        rows.update(_locked(conn, [s.name for s in ordered[start:start + CHUNK]], owner, "edited"))
    _write_definitions(conn, ordered, rows, label)
    return len(ordered)


def edit(conn: psycopg.Connection[Any], name: str, changes: Mapping[str, Any], owner: str | None, label: str,
         max_lateness: int | None) -> Schedule:
    """Change some of one run-time schedule's definition (`Schedule.build`'s parameters,
    the name excepted); the rest stays as stored. Returns the definition now in force."""
    from awa_tui.engine.calendars.store import refuse_unknown_calendars

    unknown = sorted(set(changes) - set(EDITABLE))
    if unknown:
        raise ValidationError(f"{unknown[0]}: not a setting an edit can change "
                              f"(one of {', '.join(EDITABLE)}; a name never changes)")
    if not changes:
        raise ValidationError("edit: nothing to change; give at least one setting")
    row = _locked(conn, [name], owner, "edited", definitions=True)[name]
    schedule = built(max_lateness, name, **{**_build_arguments(row), **changes})
    refuse_unknown_calendars(conn, [schedule])
    _write_definitions(conn, [schedule], {name: row}, label)
    return schedule


def _build_arguments(row: Mapping[str, Any]) -> dict[str, Any]:
    """A stored definition as `Schedule.build`'s arguments (the expression as written, the
    jitter, the exclusions): building them again gives the stored definition back."""
    out = {c: row[c] for c in EDITABLE if c in row and c not in ("cron_expr", "tags")}
    out["cron_expr"] = row["cron_written"] or row["cron_expr"]
    out["tags"] = list(row["tags"] or [])
    out["jitter"] = timedelta(milliseconds=row["jitter_ms"]) if row["jitter_ms"] else None
    out["exclude"] = [(date.fromisoformat(a), date.fromisoformat(b)) for a, b in row["exclude_dates"] or []] or None
    out["calendar"] = list(row["exclude_calendars"] or []) or None
    return out


def _write_definitions(conn: psycopg.Connection[Any], schedules: list[Schedule],
                       rows: Mapping[str, Mapping[str, Any]], label: str) -> None:
    declare_actor(conn, label, "edit")  # no detail: parsed per audited row (core/audit.py)
    no_hints = FirstHints(db_now(conn), budget_s=-1.0)  # an edit's hint is reset, never guessed
    by_owner = sorted(schedules, key=lambda s: (rows[s.name]["owner"], s.name))
    for owner, group in groupby(by_owner, key=lambda s: rows[s.name]["owner"]):
        # The owner's capability to redefine its rows (v021): the update fence lets a
        # redefinition of an owned row through for its owner alone.
        conn.execute("SELECT awa.begin_reconcile(%s)", (owner,))
        part = list(group)
        for start in range(0, len(part), CHUNK):
            chunk = part[start:start + CHUNK]
            done = conn.execute(UPDATE_SQL, {"rows": rows_json(chunk, no_hints), "owner": owner}).fetchall()  # type: ignore[arg-type]
            if len(done) != len(chunk):  # the rows are locked: only a fence could refuse
                raise DeclaredInCode(f"name: {chunk[0].name!r} could not be edited (refused by the database fence)")


# --- delete ------------------------------------------------------------------------------


def delete(conn: psycopg.Connection[Any], names: Iterable[str], owner: str | None, label: str) -> int:
    """Delete run-time schedules (of `owner`, when given); returns how many. Their jobs and
    ledger stay; a retired one is kept (a tombstone is never deleted, S27)."""
    wanted = sorted(set(names))
    declare_actor(conn, label, "delete")  # no detail: parsed per audited row (core/audit.py)
    deleted = 0
    for start in range(0, len(wanted), CHUNK):
        part = wanted[start:start + CHUNK]
        _locked(conn, part, owner, "deleted")
        deleted += len(conn.execute(DELETE_SQL, {"names": part}).fetchall())
    return deleted


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise ValidationError(f"name: expected a schedule name, got {_short(name)}")
    return name


def _locked(conn: psycopg.Connection[Any], names: Sequence[str], owner: str | None, verb: str, *,
            definitions: bool = False) -> dict[str, dict[str, Any]]:
    """The rows of `names`, locked; refused whole when one is missing, declared in code,
    another owner's or retired."""
    if owner is not None:
        check_owner(owner)
    sql = LOCK_SQL.format(definition=_DEFINITION_COLUMNS if definitions else "")
    rows = {r[KEY]: r for r in conn.execute(sql, {"names": list(names)}).fetchall()}  # type: ignore[arg-type]
    for name in names:
        row = rows.get(name)
        if row is None:
            raise NotFound(f"name: unknown schedule {name!r}")
        if row["origin"] != ORIGIN:
            raise DeclaredInCode(f"name: {name!r} is declared in code and cannot be {verb} at run time; "
                                 "change it in code, or override it (awa-tui cron override)")
        if owner is not None and row["owner"] != owner:
            raise NameTaken(f"name: {name!r} is held by owner {row['owner']!r}, not {owner!r}")
        if row["retired_at"] is not None:
            raise Conflict(f"name: {name!r} is retired; restore it before it can be {verb}")
    return rows
