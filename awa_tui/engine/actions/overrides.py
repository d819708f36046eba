"""Operator overrides of a schedule's definition, without a deploy (S49).

An override writes the effective values into the main columns of awa.cron_jobs, so the
fire path and the next-fire hint read them as they read any definition, and keeps the
code's values of the columns it replaced in `overridden` (migration v010). Sync and
reconciliation write the code's side there while the override lasts (columns.py
`keep_overridden_set`); `reset` puts the code's values back. Both are audited by the
database with before/after, as `override` and `override_reset` (a definition change).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from awa_tui.engine.actions.ops import SCHEDULE_STATE_COLUMNS, lock_schedule
from awa_tui.engine.core.audit import begin_action, jsonable
from awa_tui.engine.core.errors import Conflict, ValidationError
from awa_tui.engine.core.guards import check_operator
from awa_tui.engine.schedules.columns import DEFINITION, ORIGIN, OVERRIDDEN, OVERRIDE_COLUMNS, code_value, listed
from awa_tui.engine.schedules.definition import Schedule

_FIRE_COLUMNS = ("cron_expr", "timezone")  # a change of either moves the next-fire hint
RUN_TIME = "api"  # awa.cron_jobs.origin of a schedule made at run time (v024; api_schedules.ORIGIN)


@dataclass(frozen=True)
class OverrideRequest:
    """The values an operator sets; None leaves that column as it is."""

    cron: str | None = None
    timezone: str | None = None
    args: dict[str, Any] | None = None
    queue: str | None = None
    priority: int | None = None

    def changes(self) -> dict[str, Any]:
        out = {k: v for k, v in (("cron_expr", self.cron), ("timezone", self.timezone), ("args", self.args),
                                 ("queue", self.queue), ("priority", self.priority)) if v is not None}
        if not out:
            raise ValidationError("override: nothing to change; give a cron expression, time zone, args, "
                                  "queue or priority")
        return out


def effective_schedule(row: dict[str, Any], changes: dict[str, Any]) -> Schedule:
    """The stored definition with `changes` applied, validated as a registration is: a
    value that would not validate is refused here, before anything is written."""
    definition = {c: row[c] for c in DEFINITION}
    definition["tags"] = list(definition["tags"] or [])
    if "cron_expr" in changes:
        definition["cron_written"] = None  # Schedule resolves H for this name again
    definition.update(changes)
    return Schedule(name=row["name"], **definition)


def override(conn: psycopg.Connection[Any], name: str, operator: str, request: OverrideRequest) -> dict[str, Any]:
    """Override some of a schedule's definition; returns the row after."""
    operator = check_operator(operator)
    with conn.transaction():
        begin_action(conn, operator, "override")
        before = lock_schedule(conn, name)
        changes = request.changes()  # after the schema is known to be there (one error at a time)
        if before["retired_at"] is not None:
            raise Conflict(f"schedule {name!r} is retired; restore it before overriding it")
        _refuse_made_at_run_time(conn, name)
        wanted = effective_schedule(before, changes).definition()
        changed = [c for c in OVERRIDE_COLUMNS if jsonable(wanted[c]) != jsonable(before[c])]
        if not changed:
            raise Conflict(f"schedule {name!r} already has these values; nothing to override")
        code = dict(before[OVERRIDDEN] or {})
        for column in changed:
            code.setdefault(column, jsonable(before[column]))  # the code's value, kept once
            if jsonable(wanted[column]) == code[column]:
                del code[column]  # set back to the code's value: no longer overridden
        params: dict[str, Any] = {c: Jsonb(wanted[c]) if c == "args" else wanted[c] for c in changed}
        params["code"] = Jsonb(code) if code else None
        params["name"] = name
        hint = ", next_fire_at = NULL" if any(c in _FIRE_COLUMNS for c in changed) else ""
        sets = ", ".join(f"{c} = %({c})s" for c in changed)
        after = conn.execute(
            f"UPDATE awa.cron_jobs SET {sets}, {OVERRIDDEN} = %(code)s, updated_at = now(){hint} "
            f"WHERE name = %(name)s RETURNING {SCHEDULE_STATE_COLUMNS}",
            params,
        ).fetchone()
    assert after is not None
    return after


def _refuse_made_at_run_time(conn: psycopg.Connection[Any], name: str) -> None:
    """An override keeps code's values beside an operator's: a schedule made at run time
    has no code, and is changed by an edit instead (S64)."""
    row = conn.execute(f"SELECT {ORIGIN} FROM awa.cron_jobs WHERE name = %s", (name,)).fetchone()
    if row is not None and row[ORIGIN] == RUN_TIME:
        raise Conflict(f"schedule {name!r} was made at run time: change it with awa-tui cron edit (console: e), "
                       "not an override")


# Only the overridable columns: `overridden` holds no other (an override writes nothing
# else), and the operator's and a team's UPDATE grant covers these and no more.
_CODE_VALUES = ", ".join(code_value("c", col) for col in OVERRIDE_COLUMNS)
RESET_SQL = f"""
UPDATE awa.cron_jobs c SET ({listed(OVERRIDE_COLUMNS)}) = ({_CODE_VALUES}),
    {OVERRIDDEN} = NULL, updated_at = now(),
    next_fire_at = CASE WHEN c.{OVERRIDDEN} ?| ARRAY['cron_expr', 'timezone'] THEN NULL ELSE c.next_fire_at END
WHERE c.name = %(name)s
RETURNING {SCHEDULE_STATE_COLUMNS}
"""


def reset(conn: psycopg.Connection[Any], name: str, operator: str) -> dict[str, Any]:
    """Return a schedule to its code definition; returns the row after."""
    operator = check_operator(operator)
    with conn.transaction():
        begin_action(conn, operator, "override_reset")
        before = lock_schedule(conn, name)
        if before[OVERRIDDEN] is None:
            raise Conflict(f"schedule {name!r} is not overridden")
        after = conn.execute(RESET_SQL, {"name": name}).fetchone()
    assert after is not None
    return after
