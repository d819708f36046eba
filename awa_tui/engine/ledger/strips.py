"""The schedules panel's outcome strips: the verdicts of each row's last due instants,
for a whole page in a few statements.

Each row is judged by verdicts.judge, the ledger's own definition of every verdict, on
evidence read for all the rows at once: their audit rows (one statement), their jobs
since each window's first instant (one statement, one index walk per row), the skips and
pruning marks of the page (one statement each), and the leadership terms over the
page's span (one). Due instants are cron arithmetic, computed once per definition and
bounded span and shared by every row that has them.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

import psycopg

from awa_tui.engine.ledger.models import BACKFILLED, FIRED, instant_outcome
from awa_tui.engine.ledger.verdicts import (
    FIRE_TIME_COLUMN,
    Evidence,
    Segment,
    Window,
    born,
    bounded,
    calendars_for,
    decide,
    definition_segments,
    due_instants,
    excluded_instants,
    fired_jobs,
    leader_terms,
    leadership_since,
    split_skips,
    window,
)

STRIP_LENGTH = 20
FIRED_VERDICTS = (FIRED, BACKFILLED)
# Like verdicts.ID_ORDER_SLACK (a fire's transaction may start, its created_at, a little
# before an id handed to a concurrent one), but shorter: a strip reads every job created
# since its window began minus this, and a schedule firing each second has 3,600 jobs an
# hour. A fire transaction running longer than this is what it would miss.
STRIP_ID_SLACK = timedelta(minutes=5)

# The audit rows the verdicts read (verdicts.definition_segments, verdicts._intervals):
# redefinitions, pauses and retirements. Other rows are skipped by both there.
HISTORY_SQL = """
SELECT a.target, a.id, a.at, a.action, a.operator, a.before, a.after
FROM unnest(%(names)s::text[], %(born)s::timestamptz[]) AS w(name, born)
JOIN awa.audit_log a ON a.target = w.name AND a.at >= w.born
WHERE jsonb_typeof(a.before) = 'object' AND jsonb_typeof(a.after) = 'object'
  AND (a.after ? 'cron_expr' OR a.after ? 'timezone'
       OR (a.before ? 'paused_at' AND a.after ? 'paused_at')
       OR (a.before ? 'retired_at' AND a.after ? 'retired_at'))
ORDER BY a.id
"""

# The fire instant as the fire path writes it (`2025-01-01T00:00:00Z`, maybe with a
# fraction, years 1000-8999): Python reads those, exactly as awa.try_timestamptz would (an
# impossible date such as Feb 30 is no instant in both), and the database parses only the rest, each
# distinct text once (ODD_FIRE_TIMES_SQL). Calling that plpgsql function (a subtransaction
# each) for every job was half of the jobs statement's time.
CANONICAL_FIRE_TIME = (r"[1-8][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
                       r"T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?(Z|\+00:00)")
_CANONICAL = re.compile(CANONICAL_FIRE_TIME)

# Each row's jobs created since its window began (manual triggers are no due instant),
# walked through jobs_cron_name_idx from the last job created before the window's edge:
# only the columns that decide a verdict (verdicts.decide).
JOBS_SQL = """
SELECT w.name, j.id, j.state, j.metadata ->> 'cron_fire_time' AS fire_text, false AS manual,
       coalesce(j.metadata ->> 'backfill' = 'true', false) AS backfill
FROM unnest(%(names)s::text[], %(edges)s::timestamptz[]) AS w(name, edge)
CROSS JOIN LATERAL (
    SELECT coalesce((SELECT b.id FROM awa.jobs b
                     WHERE b.metadata ? 'cron_name' AND b.metadata ->> 'cron_name' = w.name AND b.created_at < w.edge
                     ORDER BY b.metadata ->> 'cron_name' DESC, b.id DESC LIMIT 1), 0) AS id
) boundary
JOIN awa.jobs j ON j.metadata ? 'cron_name' AND j.metadata ->> 'cron_name' = w.name AND j.id > boundary.id
WHERE NOT coalesce(j.metadata ->> 'triggered_manually' = 'true', false)
ORDER BY j.id
"""


ODD_FIRE_TIMES_SQL = f"""
SELECT j.fire_text, {FIRE_TIME_COLUMN.replace("j.metadata ->> 'cron_fire_time'", "j.fire_text")}
FROM unnest(%(texts)s::text[]) AS j(fire_text)
"""


@lru_cache(maxsize=65536)
def _canonical_instant(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:  # Feb 30, Apr 31, year 0: no instant (awa.try_timestamptz: NULL)
        return None


def fire_instants(conn: psycopg.Connection[Any], texts: set[str | None]) -> dict[str | None, datetime | None]:
    """Each stored fire text as an instant: the canonical ones read here, any other (a
    hand-written row) by awa.try_timestamptz, as the ledger reads them all."""
    out: dict[str | None, datetime | None] = {None: None}
    odd = []
    for text in texts:
        if text is not None:
            if _CANONICAL.fullmatch(text):
                out[text] = _canonical_instant(text)
            else:
                odd.append(text)
    if odd:
        out.update((r["fire_text"], r["fire_time"]) for r in conn.execute(ODD_FIRE_TIMES_SQL, {"texts": odd}))
    return out


SKIPS_SQL = """
SELECT f.cron_name, f.fire_time, f.reason, f.skipped_at
FROM unnest(%(names)s::text[], %(los)s::timestamptz[]) AS w(name, lo)
JOIN awa.fire_skips f ON f.cron_name = w.name AND f.fire_time >= w.lo AND f.fire_time <= %(hi)s
"""

PRUNED_SQL = "SELECT cron_name, pruned_through FROM awa.ledger_pruned WHERE cron_name = ANY(%(names)s::text[])"


def strips(conn: psycopg.Connection[Any], rows: list[dict[str, Any]], now: datetime,
           count: int = STRIP_LENGTH) -> dict[str, tuple[str, ...]]:
    """Per schedule row (as the page reads it: the ledger's columns of awa.cron_jobs and
    `fault`), the outcome of each of its last `count` due instants at `now`, oldest first
    (models.instant_outcome). A BROKEN row (S15) has none."""
    live = [r for r in rows if not r.get("fault") and r["created_at"] is not None]
    if not live:
        return {}
    with conn.transaction():
        # One snapshot for every statement; and no JIT: the jobs statement's estimate
        # (a few hundred jobs a row) makes it compile for longer than it runs.
        conn.execute("SET LOCAL jit = off")
        return _strips(conn, live, now, count)


def _strips(conn: psycopg.Connection[Any], live: list[dict[str, Any]], now: datetime,
            count: int) -> dict[str, tuple[str, ...]]:
    names = [r["name"] for r in live]
    history: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for h in conn.execute(HISTORY_SQL, {"names": names, "born": [born(r) for r in live]}).fetchall():
        history[h.pop("target")].append(h)
    windows = _windows(live, history, now, count)
    spans = [(r["name"], w.lo) for r, w in zip(live, windows, strict=True) if w.instants]
    found: dict[str, tuple[str, ...]] = {n: () for n in names}
    if not spans:
        return found
    span_names, los = [n for n, _ in spans], [lo for _, lo in spans]
    jobs: dict[str, list[dict[str, Any]]] = {n: [] for n in span_names}
    lo_of = dict(spans)
    rows = conn.execute(JOBS_SQL, {"names": span_names, "edges": [lo - STRIP_ID_SLACK for lo in los]}).fetchall()
    instants = fire_instants(conn, {j["fire_text"] for j in rows})
    for j in rows:
        j["fire_time"] = instants[j["fire_text"]]
        if j["fire_time"] is not None and j["fire_time"] >= lo_of[j["name"]]:  # older ones decide nothing here
            jobs[j.pop("name")].append(j)
    skips: dict[str, list[dict[str, Any]]] = {n: [] for n in span_names}
    for s in conn.execute(SKIPS_SQL, {"names": span_names, "los": los, "hi": now}).fetchall():
        skips[s["cron_name"]].append(s)
    pruned = {p["cron_name"]: p["pruned_through"] for p in conn.execute(PRUNED_SQL, {"names": span_names})}
    terms = leader_terms(conn, min(los), now)
    since = leadership_since(conn)
    calendars = calendars_for(conn, live)
    for row, win in zip(live, windows, strict=True):
        name = row["name"]
        if not win.instants:
            continue
        skipped, stale = split_skips(skips[name])
        evidence = Evidence(jobs=jobs[name], terms=terms, skipped=skipped, leadership_since=since,
                            pruned_through=pruned.get(name),
                            excluded=excluded_instants(row, win.instants, calendars), too_old=stale)
        decided = sorted((t, verdict, why["state"] if verdict in FIRED_VERDICTS else None)
                         for t, verdict, why, _ in decide(row, win, evidence, fired_jobs(evidence))
                         if t >= win.shown_from)
        found[name] = tuple(instant_outcome(verdict, state) for _, verdict, state in decided[-count:])
    return found


def _windows(rows: list[dict[str, Any]], history: dict[str, list[dict[str, Any]]], now: datetime,
             count: int) -> list[Window]:
    """Each row's window of its last `count` due instants. The instants of one definition
    up to one bounded end are computed once, back to the page's earliest start, and each
    row keeps those after its own start (the last `count` there: the same as computing
    them for that row alone)."""
    spans = [bounded(r, born(r), now) for r in rows]
    page_lo = min(first for first, _ in spans)
    cache: dict[tuple[tuple[Segment, ...], datetime], list[datetime]] = {}
    out = []
    for row, (first, last) in zip(rows, spans, strict=True):
        segments = definition_segments(history[row["name"]], row["cron_expr"], row["timezone"], row["start_at"])
        key = (tuple(segments), last)
        if key not in cache:
            cache[key] = due_instants(segments, page_lo, last, count)[0] if page_lo <= last else []
        out.append(window(row, history[row["name"]], born(row), now, count, 0,
                          instants=[t for t in cache[key] if t >= first]))
    return out
