"""Rows without a next-fire hint, decided by group (S51).

A fresh registration (or a hand edit of many expressions) leaves `next_fire_at` NULL on
every row it touched. Computing each row's hint in Python is linear in the schedule count
(~20-60 s at a million), and it used to sit on the critical path of every pass until the
hints were written. Instead, rows without a hint are grouped by (cron_expr, timezone)
(a loose scan of cron_jobs_unhinted_idx, v013), and per group Python computes, once:

- L, the latest instant <= now, and N, the next instant after now (engine/cron, cached
  while they hold: for any `now` in [L, N) they are the same).

A row's fires are new after its candidate C (last_enqueued_at, else created_at minus the
first-fire lookback: evaluator.first_candidate, S13). Then, with no bounds (v009):
- C < L: the instant L is due: the row goes to the Python path and fires this pass;
- L <= C <= now: nothing is due and the hint is exactly N, next_after(C) = N: written in
  SQL, set-based, in bounded chunks (HINT_CHUNK rows per statement, a time budget per
  pass), guarded like the per-row hint write (a fire or edit in between wins);
- C > now (a hand-written future instant): the Python path, which gives next_after(C).
Rows with bounds or an unknown policy (cron_jobs_unhinted_bounded_idx), and every row of
a group whose expression or zone does not parse, take the Python path on every pass, as
every row without a hint did before, so check_stored reports each broken row per pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg

from awa_tui.engine.cron.expression import compile_cron
from awa_tui.engine.firing.arrays import array_literal as _array
from awa_tui.engine.schedules.definition import POLICIES

UNHINTED = "c.next_fire_at IS NULL AND c.paused_at IS NULL AND c.retired_at IS NULL AND c.finished_at IS NULL"
# The predicate of cron_jobs_unhinted_bounded_idx (v013), word for word, so the planner
# matches it: rows whose hint SQL does not derive.
BOUNDED = ("(c.start_at IS NOT NULL OR c.end_at IS NOT NULL OR c.max_fires IS NOT NULL "
           f"OR c.missed_fire_policy NOT IN ({', '.join(repr(p) for p in POLICIES)}))")

HINT_CHUNK = 2000  # rows per hint statement (per range: fired rows, never-fired rows)
HINT_BUDGET_S = 0.5  # per pass, from the pass's start: the rest waits for the next pass
INSTANTS_CACHED = 65536

# The distinct (cron_expr, timezone) of rows without a hint, with the first and the last
# entry of each in the index order (last_enqueued_at ascending, NULL last, then created_at):
# the smallest candidates and the largest, from which Python tells which ranges of the
# group can hold rows to plan. A loose index scan (Postgres 15 has no skip scan of its
# own): the step to the next group lands on its first entry, one more descent reads its
# last; with every hint written the index is empty, one descent.
GROUPS_SQL = f"""
WITH RECURSIVE g AS (
    (SELECT c.cron_expr, c.timezone, c.last_enqueued_at, c.created_at FROM awa.cron_jobs c WHERE {UNHINTED}
     ORDER BY c.cron_expr, c.timezone, c.last_enqueued_at, c.created_at LIMIT 1)
    UNION ALL
    SELECT n.* FROM g, LATERAL (
        SELECT c.cron_expr, c.timezone, c.last_enqueued_at, c.created_at FROM awa.cron_jobs c
        WHERE {UNHINTED} AND (c.cron_expr, c.timezone) > (g.cron_expr, g.timezone)
        ORDER BY c.cron_expr, c.timezone, c.last_enqueued_at, c.created_at LIMIT 1) n
)
SELECT g.cron_expr, g.timezone,
       g.last_enqueued_at IS NOT NULL AS fired, awa.safe_ts(g.last_enqueued_at) AS first_last,
       awa.safe_ts(g.created_at) AS first_created,
       l.last_enqueued_at IS NULL AS fresh, awa.safe_ts(l.created_at) AS last_created
FROM g
CROSS JOIN LATERAL (
    SELECT c.last_enqueued_at, c.created_at FROM awa.cron_jobs c
    WHERE c.cron_expr = g.cron_expr AND c.timezone = g.timezone AND {UNHINTED}
    ORDER BY c.last_enqueued_at DESC, c.created_at DESC LIMIT 1) l
"""

def _source(prefix: str) -> str:
    """The groups of one range, as parameters `<prefix>_exprs`, `_zones`, `_latest`, `_next`."""
    return (f"unnest(%({prefix}_exprs)s::text[], %({prefix}_zones)s::text[], %({prefix}_latest)s::timestamptz[], "
            f"%({prefix}_next)s::timestamptz[]) AS g(cron_expr, timezone, latest, next_hint)")


def _per_group(columns: str, where: str, groups: str = "g", limit: str = "") -> str:
    """`columns` of the rows of each group matching `where`, as one index range per group.
    OFFSET 0 keeps the subquery from being pulled up into a join: on a fresh table (no
    statistics yet) the planner would hash all the rows without hints against the groups
    (measured: 34 s at a million rows) instead of descending the index once per group."""
    return f"""SELECT u.* FROM {groups} CROSS JOIN LATERAL (
    SELECT {columns} FROM awa.cron_jobs c
    WHERE c.cron_expr = g.cron_expr AND c.timezone = g.timezone AND {UNHINTED} AND NOT {BOUNDED}
      AND {where}
    OFFSET 0) u{limit}"""


def unhinted_rows_sql(columns: str) -> str:
    """Rows without a hint that the Python path plans this pass: due (C < L) or dated after
    now in a group, every row of a broken group, every bounded row. Each branch is a range
    of one of the v013 indexes; `lookback` moves created_at onto the candidate's scale."""
    return f"""
{_per_group(columns, "c.last_enqueued_at < g.latest", _source("due_fired"))}
UNION ALL
{_per_group(columns, "c.last_enqueued_at IS NULL AND c.created_at < g.latest + %(lookback)s", _source("due_fresh"))}
UNION ALL
{_per_group(columns, "c.last_enqueued_at > %(now)s", _source("future_fired"))}
UNION ALL
{_per_group(columns, "c.last_enqueued_at IS NULL AND c.created_at > %(now)s + %(lookback)s", _source("future_fresh"))}
UNION ALL
{_per_group(columns, "true", _source("broken"))}
UNION ALL
SELECT {columns} FROM awa.cron_jobs c WHERE {UNHINTED} AND {BOUNDED}
"""


def hint_write_sql(fault: str) -> str:
    """Hint N for at most 2 x %(limit)s rows whose candidate is in [L, now] (fired ones, then
    never-fired ones), none with a fault, group after group (so the groups left shrink).
    The UPDATE repeats the guards of the per-row hint write (evaluator.HINT_SQL) on the row
    as it is when locked: a fire, a pause or an edit that commits first wins, and a row
    changed meanwhile is skipped (its ctid moved)."""
    pick = "c.ctid AS tid, c.last_enqueued_at AS expected, c.cron_expr, c.timezone, g.next_hint"
    fired = f"{fault} IS NULL AND c.last_enqueued_at >= g.latest AND c.last_enqueued_at <= %(now)s"
    fresh = (f"{fault} IS NULL AND c.last_enqueued_at IS NULL AND c.created_at >= g.latest + %(lookback)s "
             "AND c.created_at <= %(now)s + %(lookback)s")
    return f"""
WITH pick AS MATERIALIZED (  -- computed once; each picked row is then one TID probe
    ({_per_group(pick, fired, _source("hint_fired"), limit=" LIMIT %(limit)s")})
    UNION ALL
    ({_per_group(pick, fresh, _source("hint_fresh"), limit=" LIMIT %(limit)s")})
)
UPDATE awa.cron_jobs c SET next_fire_at = p.next_hint
FROM pick p
WHERE c.ctid = p.tid
  AND c.last_enqueued_at IS NOT DISTINCT FROM p.expected
  AND c.cron_expr = p.cron_expr AND c.timezone = p.timezone
  AND {UNHINTED}
"""


@dataclass(frozen=True)
class GroupInstants:
    latest: datetime | None  # L: the latest instant <= now (None: none within the search)
    next_hint: datetime  # N: the first instant after now

    def holds_at(self, now: datetime) -> bool:
        return (self.latest is None or self.latest <= now) and now < self.next_hint


RANGES = ("due_fired", "due_fresh", "future_fired", "future_fresh", "broken", "hint_fired", "hint_fresh")


@dataclass
class Groups:
    """The groups of rows without a hint at one `now`: their instants, the broken ones, and
    per range of the index the groups whose rows may lie there (the others are skipped)."""

    now: datetime
    instants: dict[tuple[str, str], GroupInstants] = field(default_factory=dict)
    broken: list[tuple[str, str]] = field(default_factory=list)
    ranges: dict[str, list[tuple[str, str]]] = field(default_factory=lambda: {r: [] for r in RANGES})

    def __bool__(self) -> bool:
        return bool(self.instants or self.broken)

    def add(self, row: dict[str, Any], lookback: timedelta) -> None:
        """One group of GROUPS_SQL: its instants, and which of its ranges can hold rows."""
        key = (row["cron_expr"], row["timezone"])
        try:
            found = self.instants[key] = group_instants(*key, self.now)
        except Exception:  # S15: its rows take the Python path, which reports each one
            self.broken.append(key)
            self.ranges["broken"].append(key)
            return
        latest = found.latest or datetime.min.replace(tzinfo=self.now.tzinfo)
        wanted = self.ranges
        # An unloadable instant (S15) reads as None: that range is searched.
        if row["fired"]:
            wanted["hint_fired"].append(key)
            wanted["future_fired"].append(key)
            if row["first_last"] is None or row["first_last"] < latest:
                wanted["due_fired"].append(key)
        if row["fresh"]:
            wanted["hint_fresh"].append(key)
            first_fresh = row["first_created"] if not row["fired"] else None
            if first_fresh is None or first_fresh < latest + lookback:
                wanted["due_fresh"].append(key)
            if row["last_created"] is None or row["last_created"] > self.now + lookback:
                wanted["future_fresh"].append(key)

    def params(self, lookback: timedelta) -> dict[str, Any]:
        out: dict[str, Any] = {"now": self.now, "lookback": lookback}
        for name, keys in self.ranges.items():
            found = [self.instants.get(k) for k in keys]
            out[f"{name}_exprs"] = _array(e for e, _ in keys)
            out[f"{name}_zones"] = _array(z for _, z in keys)
            # No instant within the search: every candidate up to now is at or after it.
            out[f"{name}_latest"] = _array((i.latest or "-infinity") if i else None for i in found)
            out[f"{name}_next"] = _array(i.next_hint if i else None for i in found)
        return out


# (cron_expr, timezone) -> its instants, reused while they hold (every pass within [L, N)).
_instants: dict[tuple[str, str], GroupInstants] = {}


def group_instants(cron_expr: str, timezone: str, now: datetime) -> GroupInstants:
    """L and N of one group at `now`; raises (ValidationError, OverflowError) when the
    expression or zone is broken or the calendar runs out."""
    key = (cron_expr, timezone)
    cached = _instants.get(key)
    if cached is not None and cached.holds_at(now):
        return cached
    cron = compile_cron(cron_expr, timezone)
    latest = cron.latest_at_or_before(now)
    found = GroupInstants(latest.at if latest is not None else None, cron.next_after(now).at)
    if len(_instants) >= INSTANTS_CACHED:
        _instants.clear()
    _instants[key] = found
    return found


def unhinted_groups(conn: psycopg.Connection[Any], now: datetime, lookback: timedelta) -> Groups:
    """The groups of rows without a hint, each with its instants at `now`."""
    groups = Groups(now)
    for row in conn.execute(GROUPS_SQL).fetchall():
        groups.add(row, lookback)
    return groups


def write_group_hints(conn: psycopg.Connection[Any], groups: Groups, fault: str, lookback: timedelta,
                      limit: int = HINT_CHUNK) -> int:
    """One chunk of set-based hints; returns the rows hinted (fewer than `limit`: done)."""
    if not (groups.ranges["hint_fired"] or groups.ranges["hint_fresh"]):
        return 0
    params = groups.params(lookback) | {"limit": limit}
    cur = conn.execute(hint_write_sql(fault), params, prepare=False)  # see evaluator._run_batch
    return max(cur.rowcount, 0)
