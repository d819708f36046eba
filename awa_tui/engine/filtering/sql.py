"""A parsed schedules filter (awa_tui/filters.py) as a parameterised SQL condition.

Every SQL fragment here is fixed text chosen by the term's field or flag, which the
parser has already checked against the grammar; the user's values only ever travel as
parameters. The schedules condition reads the `awa.cron_jobs` row as `c`; jobs' reads `awa.jobs` as
`j`, the audit trail's `awa.audit_log` as `a`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg

from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.core.standby import read_time
from awa_tui.engine.cron.expression import parse_cron, parse_timezone
from awa_tui.engine.schedules.columns import FAULT_SQL
from awa_tui.engine.schedules.definition import POLICIES
from awa_tui.filters import GRAMMARS, LATE_AFTER_SECONDS, TIME_FIELDS, Filter, PanelGrammar, Term
from awa_tui.instants import parse_point


@dataclass(frozen=True)
class Condition:
    """A boolean SQL expression over `c` and the parameters it names."""

    sql: str = "true"
    params: dict[str, Any] = field(default_factory=dict)


_COLUMNS = {
    "name": "c.name ILIKE {p}",
    "owner": "c.owner ILIKE {p}",
    "paused_by": "c.paused_by ILIKE {p}",
    "queue": "c.queue ILIKE {p}",
    "kind": "c.kind ILIKE {p}",
    "policy": "c.missed_fire_policy ILIKE {p}",
    "overlap": "c.overlap ILIKE {p}",
    "tz": "c.timezone ILIKE {p}",
    "tag": "EXISTS (SELECT 1 FROM unnest(c.tags) AS t(tag) WHERE t.tag ILIKE {p})",
    # S42: the health the leader last recorded (no row yet: ok).
    "health": "coalesce((SELECT hh.health FROM awa.cron_health hh WHERE hh.name = c.name), 'ok') ILIKE {p}",
}
# `result:` on schedules: the state of the schedule's latest job (manual ones too).
_LAST_STATE = ("(SELECT jr.state FROM awa.jobs jr WHERE jr.metadata ? 'cron_name' "
               "AND jr.metadata ->> 'cron_name' = c.name "
               "ORDER BY jr.metadata ->> 'cron_name' DESC, jr.id DESC LIMIT 1)")
# Free text matches what the plain `/` filter always matched (views.list_schedules): the
# name, kind, queue or owner. Four ILIKEs fold the case of four fields and of the pattern
# four times a row; one ILIKE over the four joined by a separator does it once (measured at
# 1M rows: a scan of 0.59 s becomes 0.32 s) and matches exactly the same rows when the
# pattern has no wildcard inside and no separator: such a match cannot span two fields
# (text_sql). A NULL owner joins as '' (its ILIKE was NULL: no match; '' matches no
# non-empty pattern, and an empty one matches every name anyway).
TEXT_SEPARATOR = "\x1f"  # US, the unit separator (a field may hold it: see text_sql)
_TEXT = "(c.name ILIKE {p} OR c.kind ILIKE {p} OR c.queue ILIKE {p} OR c.owner ILIKE {p})"
_TEXT_JOINED = (
    "((c.name || E'\\x1f' || c.kind || E'\\x1f' || c.queue || E'\\x1f' || coalesce(c.owner, '')) "
    "ILIKE {p})"
)


def _inner_wildcard(inner: str) -> bool:
    """Whether an ILIKE pattern's text holds a wildcard (`%` or `_` not escaped by `\\`)."""
    escaped = False
    for char in inner:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "%_":
            return True
    return False


def text_sql(placeholder: str, pattern: str) -> str:
    """The free-text match of ILIKE `pattern` (escaped: `\\` escapes, `%` and `_` are
    wildcards) over a schedule's name, kind, queue and owner: one ILIKE over the fields
    joined when that is exact, else one ILIKE per field.

    Exact when the pattern is `%text%` and the text holds no wildcard and no separator: a
    match of it is then a run of the joined fields without a separator, which lies within
    one field (a separator inside a field only splits it further); case folding (lower(),
    what ILIKE does in UTF-8) folds each character alone, so folding the joined text folds
    each field as it would alone."""
    inner = pattern[1:-1] if len(pattern) >= 2 and pattern[0] == pattern[-1] == "%" else None
    if inner is not None and not _inner_wildcard(inner) and TEXT_SEPARATOR not in inner:
        return _TEXT_JOINED.format(p=placeholder)
    return _TEXT.format(p=placeholder)

# BROKEN is judged as schedule.row_fault judges it: SQL's fault, then the expression,
# zone and policy by the same parsers. Expressions and zones are few, so the bad ones are
# found once per query (`_bad_values`) and passed in as arrays.
_BROKEN = (
    f"({FAULT_SQL} IS NOT NULL OR c.cron_expr = ANY(%(flt_bad_exprs)s::text[]) "
    "OR c.timezone = ANY(%(flt_bad_zones)s::text[]) "
    "OR NOT coalesce(c.missed_fire_policy = ANY(%(flt_policies)s::text[]), false))"
)
# A finished schedule (v009) is neither active nor late: it fires nothing more.
_LIVE = "c.paused_at IS NULL AND c.retired_at IS NULL AND c.finished_at IS NULL"
_FLAGS = {
    "retired": "c.retired_at IS NOT NULL",
    "paused": "c.paused_at IS NOT NULL AND c.retired_at IS NULL AND c.finished_at IS NULL",
    "finished": "c.finished_at IS NOT NULL AND c.retired_at IS NULL",
    "broken": _BROKEN,
    "active": f"{_LIVE} AND NOT {_BROKEN}",
    # Due for more than LATE_AFTER_SECONDS at `now` and still not written: see filters.py.
    "late": f"{_LIVE} AND NOT {_BROKEN} AND awa.safe_ts(c.next_fire_at) < %(flt_late_before)s::timestamptz",
    "unowned": "c.owner IS NULL",
    "overridden": "c.overridden IS NOT NULL",  # S49: an operator override in force
    "interval": "starts_with(lower(ltrim(c.cron_expr)), '@every')",  # S73: `@every 90s`
}


def _bad_values(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    exprs = [r["v"] for r in conn.execute("SELECT DISTINCT cron_expr AS v FROM awa.cron_jobs").fetchall()]
    zones = [r["v"] for r in conn.execute("SELECT DISTINCT timezone AS v FROM awa.cron_jobs").fetchall()]
    return {
        "flt_bad_exprs": [e for e in exprs if not _valid(parse_cron, e)],
        "flt_bad_zones": [z for z in zones if not _valid(parse_timezone, z)],
        "flt_policies": list(POLICIES),
    }


def _valid(check: Any, value: Any) -> bool:
    try:
        check(value)
    except ValidationError:
        return False
    return True


def like_pattern(term: Term, grammar: PanelGrammar) -> str:
    """The ILIKE pattern of a text or field term: LIKE's own wildcards are literal, `*`
    is any run; text and substring fields match anywhere, other fields the whole value."""
    escaped = term.value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_").replace("*", "%")
    anywhere = term.kind == "text" or term.name in grammar.substring_fields
    return f"%{escaped}%" if anywhere else escaped


def _term_sql(term: Term, placeholder: str) -> str:
    if term.kind == "text":
        return text_sql(placeholder, like_pattern(term, GRAMMARS["schedules"]))
    if term.kind == "flag":
        return _FLAGS[term.name]
    if term.name == "state":
        return _FLAGS[term.value]
    if term.name == "result":
        return f"{_LAST_STATE} IS NULL" if term.value == "none" else \
            _JOB_RESULTS[term.value].replace("j.state", _LAST_STATE)
    return _COLUMNS[term.name].format(p=placeholder)


def schedule_condition(conn: psycopg.Connection[Any], flt: Filter | None, now: datetime | None) -> Condition:
    """The WHERE condition of `flt` (a schedules filter) at `now` (for `late`; DB time
    when None)."""
    grammar = GRAMMARS["schedules"]
    condition = _compiled(flt, "schedules", _term_sql, lambda term: like_pattern(term, grammar))
    params = dict(condition.params)
    if "flt_bad_exprs" in condition.sql:
        params.update(_bad_values(conn))
    if "flt_late_before" in condition.sql:
        params["flt_late_before"] = (now or read_time(conn)) - timedelta(seconds=LATE_AFTER_SECONDS)
    return Condition(condition.sql, params)


# --- jobs and the audit trail: the same grammar over `awa.jobs j` and `awa.audit_log a` -----

_JOB_CRON_NAME = "(j.metadata ->> 'cron_name')"
_JOB_FIELDS = {
    "schedule": f"{_JOB_CRON_NAME} ILIKE {{p}}",
    "queue": "j.queue ILIKE {p}",
    "kind": "j.kind ILIKE {p}",
}
_JOB_TEXT = f"({_JOB_CRON_NAME} ILIKE {{p}} OR j.kind ILIKE {{p}} OR j.queue ILIKE {{p}})"
# The last-result vocabulary (ledger/models.job_result) as the states it stands for.
_JOB_RESULTS = {
    "ok": "j.state = 'completed'",
    "failed": "j.state IN ('retryable', 'discarded')",
    "running": "j.state = 'running'",
    "waiting": "j.state = 'available'",
    "cancelled": "j.state = 'cancelled'",
}
_JOB_FLAGS = {
    "failed": _JOB_RESULTS["failed"],
    "manual": "coalesce(j.metadata ->> 'triggered_manually' = 'true', false)",
}

_AUDIT_FIELDS = {
    "operator": "a.operator ILIKE {p}",
    "action": "a.action ILIKE {p}",
    "target": "a.target ILIKE {p}",
    "since": "a.at >= {p}",
    "until": "a.at <= {p}",
}
_AUDIT_TEXT = "a.target ILIKE {p}"


def _compiled(flt: Filter | None, panel: str, term_sql: Any, value: Any) -> Condition:
    """AND of the terms: `term_sql(term, placeholder)` is fixed SQL chosen by the term,
    `value(term)` the parameter it names (None: it names none)."""
    if not flt:
        return Condition()
    if flt.panel != panel:
        raise ValidationError(f"filter: a {flt.panel} filter cannot select {panel}")
    parts: list[str] = []
    params: dict[str, Any] = {}
    for index, term in enumerate(flt.terms):
        key = f"flt_{index}"
        sql = term_sql(term, f"%({key})s")
        if f"%({key})s" in sql:
            params[key] = value(term)
        # IS [NOT] TRUE, as coalesce(x, false) would: a NULL (an owner-less row's owner:x)
        # neither matches nor matches its negation; unlike coalesce(), the planner sees
        # through it and estimates the term (coalesce() was a blind 50%: at 1M rows, an
        # index walk in name order over every row for a filter that matches one).
        parts.append(f"(({sql}) IS NOT TRUE)" if term.negated else f"(({sql}) IS TRUE)")
    return Condition(f"({' AND '.join(parts)})", params)


def job_condition(flt: Filter | None) -> Condition:
    """The WHERE condition of a jobs filter over `awa.jobs j`."""
    grammar = GRAMMARS["jobs"]

    def term_sql(term: Term, p: str) -> str:
        if term.kind == "text":
            return _JOB_TEXT.format(p=p)
        if term.kind == "flag":
            return _JOB_FLAGS[term.name]
        if term.name == "state":
            return f"j.state = {p}"
        if term.name == "result":
            return _JOB_RESULTS[term.value]
        return _JOB_FIELDS[term.name].format(p=p)

    def value(term: Term) -> Any:
        return term.value if term.name == "state" else like_pattern(term, grammar)

    return _compiled(flt, "jobs", term_sql, value)


def audit_condition(flt: Filter | None, now: datetime) -> Condition:
    """The WHERE condition of an audit filter over `awa.audit_log a`; `since:2h` counts
    back from `now`."""
    grammar = GRAMMARS["audit"]

    def term_sql(term: Term, p: str) -> str:
        if term.kind == "text":
            return _AUDIT_TEXT.format(p=p)
        return _AUDIT_FIELDS[term.name].format(p=p)

    def value(term: Term) -> Any:
        if term.name in TIME_FIELDS:
            return parse_point(term.value, f"filter: {term.name}", now)
        return like_pattern(term, grammar)

    return _compiled(flt, "audit", term_sql, value)
