"""Forwarding: jobs of a kind deferred to Procrastinate in the transaction that inserts them
(`awa-tui forward procrastinate`, docs/forwarding.md).

An opt-in BEFORE INSERT row trigger on awa.jobs, one per forwarded kind, made by the
operator's command (not a migration: the DDL is the operator's, and removing it is one
command). Its WHEN clause compares the kind, so a job of any other kind pays that one
comparison and nothing else (the fire statement itself is unchanged). For a job of the
kind it calls Procrastinate's own SQL defer function and marks the awa job completed and
forwarded, in the same statement as the fire's compare-and-swap: the Procrastinate job
commits or rolls back with the fire, so each fire reaches Procrastinate exactly once.

When Procrastinate's schema is gone (or a job's args are not an object) the trigger
refuses the job with a PL/pgSQL RAISE: the fire is not marked, the evaluator sets that
schedule aside with the reason in its log (and keeps firing the others, S15's bisection),
and the fire stays due until the schema is back or the forward removed. Nothing is lost,
nothing is doubled, and it is never silent.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from awa_tui.engine.core.db import connect, translate
from awa_tui.engine.core.errors import ReadOnly, ValidationError
from awa_tui.engine.core.standby import standby_refusal
from awa_tui.engine.migrations.detect import detect_schema

# Procrastinate's SQL API as of the version bench/requirements-procrastinate.txt pins
# (3.10.0, procrastinate/sql/schema.sql): its versioned names change only with a migration
# of Procrastinate's, which keeps the old one until its next major release.
DEFER_FUNCTION = "procrastinate_defer_jobs_v1"
DEFER_TYPE = "procrastinate_job_to_defer_v1"
DEFAULT_SCHEMA = "public"
NAME_MAX = 128  # Procrastinate's task_name and queue_name are varchar(128)
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_KWARG_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PREFIX = "forward_procrastinate_"


@dataclass(frozen=True)
class Forward:
    """One forwarded kind: where its jobs go in Procrastinate."""

    kind: str
    task: str
    queue: str | None  # None: the awa job's own queue
    fire_time_kwarg: str | None  # the keyword argument that carries the fire instant, if any
    schema: str  # the schema holding Procrastinate's tables and functions

    @property
    def trigger(self) -> str:
        return trigger_name(self.kind)

    @property
    def sql(self) -> str:
        return install_sql(self)


def trigger_name(kind: str) -> str:
    """The trigger (and its function) of `kind`: readable, unique per kind, at most 63 bytes."""
    slug = re.sub(r"[^a-z0-9]+", "_", kind.lower()).strip("_")[:28]
    return f"{_PREFIX}{slug}_{hashlib.sha256(kind.encode()).hexdigest()[:10]}"


def _text(value: str, what: str, limit: int = NAME_MAX) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > limit or "\x00" in value:
        raise ValidationError(f"{what}: 1 to {limit} characters required, got {value!r}")
    return value


def forward(kind: str, task: str, queue: str | None = None, fire_time_kwarg: str | None = None,
            schema: str = DEFAULT_SCHEMA) -> Forward:
    """A checked forward (nothing is written)."""
    _text(kind, "kind", 1000)
    _text(task, "task")
    if queue is not None:
        _text(queue, "queue")
    if fire_time_kwarg is not None and not _KWARG_RE.match(fire_time_kwarg):
        raise ValidationError(f"fire time argument: a Python identifier required, got {fire_time_kwarg!r}")
    if not _IDENT_RE.match(schema):
        raise ValidationError(f"schema: a plain identifier required (letters, digits, _), got {schema!r}")
    return Forward(kind, task, queue, fire_time_kwarg, schema)


def _lit(value: Any) -> str:
    return sql.Literal(value).as_string(None)


def _dollar_tag(body: str) -> str:
    tag, n = "$forward$", 0
    while tag in body:  # a kind or task quoting the tag must not end the body early
        n += 1
        tag = f"$forward{n}$"
    return tag


def install_sql(fwd: Forward) -> str:
    """The forward's DDL, one transaction; applying it again replaces the forward of that kind."""
    name = fwd.trigger
    defer = f"{fwd.schema}.{DEFER_FUNCTION}"
    args = "NEW.args" if fwd.fire_time_kwarg is None else \
        f"NEW.args || jsonb_build_object({_lit(fwd.fire_time_kwarg)}, NEW.metadata -> 'cron_fire_time')"
    queue = "NEW.queue" if fwd.queue is None else _lit(fwd.queue)
    hint = _lit(f"apply Procrastinate's schema to this database again, or stop forwarding: "
                f"awa-tui forward procrastinate --kind {fwd.kind} --remove --apply")
    body = f"""
DECLARE
    sent bigint[];
BEGIN
    -- Checked first so a missing schema is a RAISE (class P0): the evaluator sets only this
    -- schedule aside and says why; an undefined function would end the whole pass.
    IF to_regproc({_lit(defer)}) IS NULL OR to_regtype({_lit(f"{fwd.schema}.{DEFER_TYPE}")}) IS NULL THEN
        RAISE EXCEPTION 'jobs of kind % go to Procrastinate, whose schema is not in this database (no %)',
            NEW.kind, {_lit(defer)} USING HINT = {hint};
    END IF;
    IF jsonb_typeof(NEW.args) <> 'object' THEN
        RAISE EXCEPTION 'jobs of kind % go to Procrastinate, whose tasks take keyword arguments: '
            'args must be an object, not %', NEW.kind, jsonb_typeof(NEW.args);
    END IF;
    sent := {defer}(ARRAY[ROW(
        {queue}, {_lit(fwd.task)}, 0, NULL, NULL, {args},
        -- a jittered fire keeps its run time; a due one runs now
        CASE WHEN NEW.run_at > now() THEN NEW.run_at END
    )::{fwd.schema}.{DEFER_TYPE}]);
    NEW.state := 'completed';
    NEW.finalized_at := now();
    NEW.metadata := NEW.metadata
        || jsonb_build_object('forwarded_to', 'procrastinate', 'procrastinate_job_id', sent[1]);
    RETURN NEW;
END
"""
    tag = _dollar_tag(body)
    return f"""BEGIN;
SET LOCAL lock_timeout = '5s';
-- The forwarded kind's jobs go to Procrastinate in the transaction that inserts them
-- (no value of the operator's is written in a comment: a newline in one would end it).
-- pg_catalog first: nothing in {fwd.schema} can stand in for a built-in.
CREATE OR REPLACE FUNCTION awa.{name}() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, {fwd.schema}, pg_temp
AS {tag}{body}{tag};
DROP TRIGGER IF EXISTS {name} ON awa.jobs;
CREATE TRIGGER {name} BEFORE INSERT ON awa.jobs FOR EACH ROW
WHEN (NEW.kind = {_lit(fwd.kind)} AND NEW.state = 'available')
EXECUTE FUNCTION awa.{name}();
COMMIT;
"""


def remove_sql(kind: str) -> str:
    name = trigger_name(_text(kind, "kind", 1000))
    return f"""BEGIN;
SET LOCAL lock_timeout = '5s';
-- The kind's jobs stay in awa's own queue from now on.
DROP TRIGGER IF EXISTS {name} ON awa.jobs;
DROP FUNCTION IF EXISTS awa.{name}();
COMMIT;
"""


def _statements(script: str) -> str:
    """The script without its BEGIN/COMMIT: run inside our own transaction."""
    return script.removeprefix("BEGIN;\n").removesuffix("COMMIT;\n")


Check = Callable[[psycopg.Connection[Any]], None]


def _run(dsn: str, script: str, check: Check | None = None) -> None:
    conn = connect(dsn, application_name="awa-tui forward")
    try:
        refusal = standby_refusal(conn)
        if refusal is not None:
            raise ReadOnly(refusal)
        info = detect_schema(conn)
        if info.kind != "awa-tui":  # upstream Awa's jobs are not ours to put a trigger on
            raise ValidationError(f"forwarding needs awa-tui's own schema, and this database has {info.detail}: "
                                  "run `awa-tui migrate` on a database of its own first")
        if check is not None:
            check(conn)
        with conn.transaction():
            conn.execute(_statements(script))  # type: ignore[arg-type]  # our own DDL, literals quoted
    except psycopg.Error as exc:
        raise translate(exc) from None
    finally:
        conn.close()


def _require_procrastinate(fwd: Forward) -> Check:
    def check(conn: psycopg.Connection[Any]) -> None:
        found = conn.execute("SELECT to_regproc(%s) IS NOT NULL AND to_regtype(%s) IS NOT NULL AS present",
                             (f"{fwd.schema}.{DEFER_FUNCTION}", f"{fwd.schema}.{DEFER_TYPE}")).fetchone()
        if not (found and found["present"]):
            raise ValidationError(
                f"Procrastinate's schema is not in schema {fwd.schema} of this database (no {DEFER_FUNCTION}): "
                "apply it first (procrastinate schema --apply), or name its schema with --schema")
    return check


def install(dsn: str, fwd: Forward) -> dict[str, Any]:
    """Install (or replace) the forward; refused in one line when Procrastinate's schema is absent."""
    _run(dsn, install_sql(fwd), _require_procrastinate(fwd))
    return {"kind": fwd.kind, "task": fwd.task, "queue": fwd.queue, "schema": fwd.schema,
            "fire_time_kwarg": fwd.fire_time_kwarg, "trigger": fwd.trigger, "installed": True}


def remove(dsn: str, kind: str) -> dict[str, Any]:
    """Remove the forward of `kind` (nothing to remove is not an error)."""
    _run(dsn, remove_sql(kind))
    return {"kind": kind, "trigger": trigger_name(kind), "installed": False}
