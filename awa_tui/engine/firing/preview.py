"""What resuming a paused schedule would fire right now (S16), computed, never written.

The answer is the evaluator's own: the paused row is read as it stands and handed to
`evaluator.plan_fires` exactly as the first pass after the resume would see it (resuming
only clears paused_at/paused_by; last_enqueued_at and the next_fire_at hint are kept).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from awa_tui.engine.core.errors import AwaError, Conflict, NotFound, ValidationError
from awa_tui.engine.cron.expression import iso_utc, next_fire
from awa_tui.engine.firing import evaluator

# The evaluator's own columns (safe instants and the S15 fault verdict), plus the states.
ROW_SQL = f"""
SELECT {evaluator.DUE_COLUMNS}, awa.safe_ts(c.paused_at) AS paused_at, awa.safe_ts(c.retired_at) AS retired_at,
       c.finished_at
FROM awa.cron_jobs c WHERE c.name = %s
"""


@dataclass(frozen=True)
class ResumePreview:
    """What the first evaluator pass after resuming `name` at `now` enqueues.

    `count` jobs at `instants` (`first` .. `last`); under coalesce, and for a schedule
    that never fired, that is at most the one `coalesced_instant`. `more` is true when
    catch_up has missed more instants than one pass replays (the evaluator's cap): the
    passes after it continue, `catch_up_limit` per pass. `next_fire` is the first
    automatic fire after these (None for a retired schedule, which fires nothing)."""

    name: str
    policy: str
    now: datetime
    count: int
    first: datetime | None
    last: datetime | None
    coalesced_instant: datetime | None
    instants: tuple[datetime, ...]
    more: bool
    next_fire: datetime | None
    explanation: str


def resume_preview(
    conn_or_client: Any,
    name: str,
    now: datetime | None = None,
    *,
    catch_up_limit: int = evaluator.CATCH_UP_LIMIT,
) -> ResumePreview:
    """Preview resuming `name` at `now` (DB time when omitted). Reads only.

    Accepts a psycopg connection or a Client (which uses its own catch-up cap). Raises
    NotFound for an unknown name, Conflict when the schedule is not paused, and
    ValidationError for a row the evaluator would skip (bad expression or zone)."""
    if not isinstance(conn_or_client, psycopg.Connection):
        return conn_or_client.reads.resume_preview(name, now=now)  # type: ignore[no-any-return]
    conn: psycopg.Connection[Any] = conn_or_client
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(ROW_SQL, (name,)).fetchone()
        if row is None:
            raise NotFound(f"unknown schedule {name!r}")
        if row["paused_at"] is None:
            raise Conflict(f"schedule {name!r} is not paused")  # the words resume itself uses
        if now is None:
            clock = cur.execute("SELECT clock_timestamp() AS now").fetchone()
            assert clock is not None
            now = clock["now"]
    assert now is not None
    policy = str(row["missed_fire_policy"])
    if row["retired_at"] is not None:
        return ResumePreview(name, policy, now, 0, None, None, None, (), False, None,
                             "retired: resuming fires nothing until the schedule is restored")
    if row["finished_at"] is not None:
        return ResumePreview(name, policy, now, 0, None, None, None, (), False, None,
                             "finished (past end_at or max_fires): resuming fires nothing")
    try:
        plan, hint = evaluator.plan_fires(row, now, catch_up_limit)
        if plan is not None and (row["exclude_calendars"] is not None or row["exclude_dates"] is not None):
            from awa_tui.engine.calendars.store import CACHE

            known = CACHE.current(conn) if row["exclude_calendars"] is not None else None
            plan = evaluator.drop_excluded(plan, row, known, now)  # S56: never fired, never replayed
    except (AwaError, ValueError, OverflowError) as exc:  # the evaluator would skip it (S15)
        raise ValidationError(f"schedule {name!r} cannot be evaluated: {exc}") from None
    stale = _too_old_words(row, plan.too_old if plan is not None else None)
    if plan is None or not plan.fires:  # nothing due, or nothing due within the bounds (v009)
        if stale:  # S66: everything missed is older than the catch-up window
            return ResumePreview(name, policy, now, 0, None, None, None, (), False, hint,
                                 f"resuming fires nothing now: {stale}; the next fire is {iso_utc(hint)}")
        return ResumePreview(name, policy, now, 0, None, None, None, (), False, hint,
                             f"nothing missed: resuming fires nothing now; the next fire is {iso_utc(hint)}")
    instants = tuple(f.at for f in plan.fires)
    first, last = instants[0], instants[-1]
    if row["last_enqueued_at"] is None or policy == "coalesce":
        why = "never fired" if row["last_enqueued_at"] is None else "coalesce"
        return ResumePreview(
            name, policy, now, 1, first, last, last, instants, False, plan.next_hint,
            f"{why}: resuming fires once now, for the latest due instant {iso_utc(last)} "
            "(earlier missed instants are not replayed)" + (f"; {stale}" if stale else ""),
        )
    # catch_up: the pass replays at most catch_up_limit instants; anything after the cap
    # that is also due waits for the following passes.
    more = (len(instants) >= catch_up_limit
            and next_fire(row["cron_expr"], row["timezone"], last, row["start_at"]).at <= now)
    span = f"{iso_utc(first)}" if len(instants) == 1 else f"{iso_utc(first)} .. {iso_utc(last)}"
    text = f"catch_up: resuming fires {len(instants)} missed instant{'s' if len(instants) > 1 else ''} now ({span})"
    if stale:
        text += f"; {stale}"
    if more:
        text += f"; more were missed and follow in the next passes, {catch_up_limit} per pass"
    return ResumePreview(name, policy, now, len(instants), first, last, None, instants, more,
                         plan.next_hint, text)


def _too_old_words(row: dict[str, Any], too_old: datetime | None) -> str:
    """S66: what the catch-up window leaves out of a resume, in words ('' when nothing)."""
    if too_old is None:
        return ""
    from awa_tui.instants import span_precise

    return (f"the instants up to {iso_utc(too_old)} are older than the catch-up window "
            f"({span_precise(row['catchup_window'])}) and are skipped")
