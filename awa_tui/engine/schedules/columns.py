"""The columns of a schedule row (awa.cron_jobs), named once; the SQL fragments that list
them are built from here, so adding a definition column is one edit in Python.

- DEFINITION: what code declares (S1) and sync, manifests and reconciliation compare.
- STATE: what firing and operators change.
- BOOKKEEPING: the fire hint and the row's timestamps.
"""

from __future__ import annotations

from collections.abc import Iterable

KEY = "name"
# Each definition column with its SQL type as input rows carry it (JSON written by Python):
# tags travel as a JSON array and become text[] (see `typed_input`).
DEFINITION_TYPES = {
    "cron_expr": "text", "timezone": "text", "kind": "text", "queue": "text", "args": "jsonb",
    "priority": "smallint", "max_attempts": "smallint", "tags": "jsonb", "metadata": "jsonb",
    "missed_fire_policy": "text",
    # Expectations (S41) and pause on failure (S44): seconds and counts, NULL = none.
    "max_lateness": "integer", "expect_success_within": "integer", "max_consecutive_failures": "integer",
    "pause_after_failures": "integer",
    # What fires (v009): the overlap policy and the bounds.
    "overlap": "text", "start_at": "timestamptz", "end_at": "timestamptz", "max_fires": "integer",
    # S48 (migration v010): the expression as written when it uses H (cron_expr holds
    # it resolved, so every reader of cron_expr needs no name), and the jitter.
    "cron_written": "text", "jitter_ms": "bigint",
    # S56 (migration v018): dates and calendars the schedule never fires on, as JSON arrays
    # ([[start, end], ...] ISO dates in its zone; [name, ...]); NULL = none.
    "exclude_dates": "jsonb", "exclude_calendars": "jsonb",
    # S66 (migration v025): how old, in seconds, a due instant may be when it fires; NULL = no bound.
    "catchup_window": "integer",
}
# The expectation columns, for the health rules (engine/health.py) and the definition views.
EXPECTATIONS = ("max_lateness", "expect_success_within", "max_consecutive_failures", "pause_after_failures")
DEFINITION = tuple(DEFINITION_TYPES)
# The value of a definition column added after a manifest format was published, for a
# manifest (or input row) that predates it: an older runtime's during a rolling deploy.
DEFINITION_DEFAULTS: dict[str, object] = {"cron_written": None, "jitter_ms": 0, "overlap": "allow",
                                          "exclude_dates": None, "exclude_calendars": None,
                                          "catchup_window": None}
# S65 (migration v025): a pause's end and reason go with the pause.
STATE = ("last_enqueued_at", "paused_at", "paused_by", "paused_until", "pause_reason", "owner", "retired_at",
         "retired_by", "finished_at")
# While an operator overrides a definition (migration v010), the main columns hold the
# effective values and this jsonb object the code's values of the overridden columns.
OVERRIDDEN = "overridden"
# What an operator may override; cron_written goes with cron_expr (the text behind H).
OVERRIDE_COLUMNS = ("cron_expr", "cron_written", "timezone", "args", "queue", "priority")
# Where the definition comes from (migration v024): 'code' (sync, a manifest) or 'api'
# (made at run time, S64). Written once, at the row's creation; the fire path never reads it.
ORIGIN = "origin"
BOOKKEEPING = ("next_fire_at", "created_at", "updated_at", "fires_count")
# Definition columns holding documents (jsonb, text[]), which views load apart as text.
DOCUMENTS = ("args", "tags", "metadata")
# timestamptz columns: a hand-written row may hold an instant Python cannot load (S15).
INSTANTS = frozenset({"last_enqueued_at", "paused_at", "paused_until", "retired_at", "next_fire_at", "created_at",
                      "updated_at", "start_at", "end_at", "finished_at"})
# Definition instants travel in JSON as awa.instant_text writes them (schedule.instant_text).
DEFINITION_INSTANTS = ("start_at", "end_at")

# The definition columns a fired job copies from its schedule.
# (Expectations, overlap and bounds stay with the schedule: a job never carries them.)
JOB_COPIES = ("kind", "queue", "args", "priority", "max_attempts", "tags", "metadata")
# What an operator action returns (before and after): the key, definition and state.
ACTION_ROW = (KEY, *DEFINITION, *STATE, OVERRIDDEN)
# What the console's views list for each schedule, in the order they show it.
VIEW_ROW = (
    KEY, *(c for c in DEFINITION if c not in DOCUMENTS), "last_enqueued_at", *BOOKKEEPING,
    *(c for c in STATE if c != "last_enqueued_at"), OVERRIDDEN,
    ORIGIN,
)


# Why a row cannot fire, as far as SQL can tell (migration v004); schedule.check_stored
# adds the parser's verdict. Column arguments, not the row: the function is inlined into
# plain expressions evaluated in C (measured: ~3 ms per 100k rows), no per-row Python.
# Here, not in the evaluator, so the views and filters name it without loading the
# evaluator (a short command starts faster).
FAULT_SQL = (
    "awa.cron_job_fault(c.last_enqueued_at, c.next_fire_at, c.created_at, c.updated_at, "
    "c.paused_at, c.retired_at, c.args, c.metadata, c.priority, c.max_attempts, c.kind, "
    "c.queue, c.tags)"
)


def listed(columns: Iterable[str], alias: str = "") -> str:
    """`a, b` or, with an alias, `c.a, c.b`."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(f"{prefix}{c}" for c in columns)


def safe_listed(columns: Iterable[str], alias: str = "c") -> str:
    """Like `listed`, each instant read through awa.safe_ts (NULL when unloadable, S15)."""
    return ", ".join(
        f"awa.safe_ts({alias}.{c}) AS {c}" if c in INSTANTS else f"{alias}.{c}" for c in columns
    )


def record_type(*, with_key: bool = True) -> str:
    """The column definition list of a JSON record of a definition (jsonb_to_record...)."""
    pairs = ([(KEY, "text")] if with_key else []) + list(DEFINITION_TYPES.items())
    return ", ".join(f"{c} {t}" for c, t in pairs)


def typed_input(alias: str) -> str:
    """The definition columns of such a record, typed like awa.cron_jobs."""
    return ", ".join(_typed(alias, c) for c in DEFINITION)


def _typed(alias: str, column: str) -> str:
    if column == "tags":
        return f"ARRAY(SELECT jsonb_array_elements_text({alias}.{column})) AS {column}"
    default = DEFINITION_DEFAULTS.get(column)
    if default is not None:  # NOT NULL with a default (jitter_ms, overlap)
        literal = f"'{default}'" if isinstance(default, str) else str(default)
        return f"coalesce({alias}.{column}, {literal}) AS {column}"
    return f"{alias}.{column}"


def definition_json(alias: str) -> str:
    """A stored definition as one jsonb object, keyed like `Schedule.definition()` (no name)."""
    def value(c: str) -> str:
        if c == "tags":
            return f"to_jsonb({alias}.{c})"
        if c in DEFINITION_INSTANTS:
            return f"awa.instant_text({alias}.{c})"
        return f"{alias}.{c}"

    return "jsonb_build_object({})".format(", ".join(f"'{c}', {value(c)}" for c in DEFINITION))


def code_definition_json(alias: str) -> str:
    """The code's definition of a stored row as jsonb: the effective one with the values an
    operator override replaced put back (`overridden` holds them, migration v010)."""
    return f"({definition_json(alias)} || coalesce({alias}.{OVERRIDDEN}, '{{}}'::jsonb))"


def code_value(alias: str, column: str) -> str:
    typ = DEFINITION_TYPES[column]
    raw = f"{alias}.{OVERRIDDEN} -> '{column}'"
    if column == "tags":
        value = f"ARRAY(SELECT jsonb_array_elements_text({raw}))"
    elif typ == "jsonb":
        value = raw
    else:
        value = f"({alias}.{OVERRIDDEN} ->> '{column}')::{typ}"
    return f"CASE WHEN {alias}.{OVERRIDDEN} ? '{column}' THEN {value} ELSE {alias}.{column} END"


def code_listed(alias: str) -> str:
    """Like `listed(DEFINITION, alias)`, the code's values (see code_definition_json)."""
    return ", ".join(code_value(alias, c) for c in DEFINITION)


def code_differs(alias: str, other: str) -> str:
    """Whether stored row `alias` differs from the definition `other` on its code side. A
    row without an override takes the plain row comparison (the steady state costs what it
    did before overrides existed)."""
    return (f"CASE WHEN {alias}.{OVERRIDDEN} IS NULL "
            f"THEN ({listed(DEFINITION, alias)}) IS DISTINCT FROM ({listed(DEFINITION, other)}) "
            f"ELSE ({code_listed(alias)}) IS DISTINCT FROM ({listed(DEFINITION, other)}) END")


def keep_overridden_set(target: str, source: str) -> str:
    """The SET list of a definition write from code (sync, reconciliation) into `target`:
    overridden columns keep the operator's value, and `overridden` takes the code's new
    value of each (a row without an override is written as before)."""
    sets = [f"{c} = {kept(target, source, c)}" for c in DEFINITION]
    sets.append(
        f"{OVERRIDDEN} = CASE WHEN {target}.{OVERRIDDEN} IS NOT NULL THEN "
        f"(SELECT jsonb_object_agg(k, {definition_json(source)} -> k) "
        f"FROM jsonb_object_keys({target}.{OVERRIDDEN}) AS k) END"
    )
    return ", ".join(sets)


def kept(target: str, source: str, column: str) -> str:
    """The value a code write leaves in `column`: the operator's while overridden."""
    return f"CASE WHEN {target}.{OVERRIDDEN} ? '{column}' THEN {target}.{column} ELSE {source}.{column} END"
