"""`cron why`: one paragraph explaining a due instant's verdict (the last one, or a given one)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import psycopg

from awa_tui.engine.core.db import db_now
from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.cron.expression import iso_utc, parse_timezone
from awa_tui.engine.ledger import models
from awa_tui.engine.ledger.models import LedgerView, Verdict, Why
from awa_tui.engine.ledger.verdicts import (
    MAX_INSTANTS,
    born,
    calendars_for,
    definition_segments,
    due_instants,
    excluded_instants,
    imported_runs,
    ledger,
    next_due,
    schedule_history,
)
from awa_tui.printable import printable


def _t(value: datetime | None) -> str:
    return iso_utc(value) if value is not None else "?"


def _second(value: datetime) -> datetime:
    return value.replace(microsecond=0)


def _s(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds:.3f}".rstrip("0").rstrip(".") + "s"


def _rule(reason: str | None) -> str:
    """An exclusion rule in words: 'calendar NAME', or the date rule as written."""
    if reason is None:
        return "?"
    return reason if reason.startswith("calendar ") else f"the date rule {reason}"


# How many excluded instants the next due one is looked for past (a calendar excluding
# every day of a year still leaves the answer within reach; beyond it, "?").
MAX_EXCLUDED_SKIPS = 1000


def _next_not_excluded(row: dict[str, Any], segments: Any, after: datetime, calendars: Any) -> datetime | None:
    """The next due instant after `after` that the schedule's exclusions (S56) leave in,
    not before its start (v009)."""
    if row.get("start_at") is not None and after < row["start_at"]:
        after = row["start_at"] - timedelta(microseconds=1)
    following = next_due(segments, after)
    for _ in range(MAX_EXCLUDED_SKIPS):
        if following is None or not excluded_instants(row, [following], calendars):
            return following
        following = next_due(segments, following)
    return None


def _excluded_day(row: dict[str, Any], at: datetime, calendars: Any) -> str | None:
    """'calendar X (2027-01-05)' when the day of `at` in the schedule's zone is excluded."""
    rule = excluded_instants(row, [at], calendars).get(at)
    if rule is None:
        return None
    try:
        day = at.astimezone(parse_timezone(row["timezone"])).date().isoformat()
    except ValidationError:
        day = "?"
    return f"{_rule(rule)} ({day})"


def _jobs(ids: tuple[int, ...]) -> str:
    """'job 5' or 'jobs 5 and 6' or 'jobs 4, 5 and 6'."""
    if len(ids) == 1:
        return f"job {ids[0]}"
    return "jobs " + ", ".join(str(i) for i in ids[:-1]) + f" and {ids[-1]}"


def _by(v: Verdict) -> str:
    return printable(v.by or "?")


# The verdicts said in one line from their fields alone: one template each, one lookup.
_ONE_LINE: dict[str, Callable[[Verdict, str], str]] = {
    models.BACKFILLED: lambda v, at: f"{at}: backfilled by {_by(v)} (job {v.job_id}, {v.result}).",
    models.SKIPPED_OVERLAP: lambda v, at: (
        f"{at}: not fired: skipped by the overlap policy (a previous job was still waiting or running)."),
    models.SKIPPED_EXCLUDED: lambda v, at: f"{at}: not fired: excluded by {printable(_rule(v.reason))}.",
    models.MANUAL: lambda v, at: f"{at}: triggered by hand by {_by(v)} (job {v.job_id}, {v.result}).",
    models.SKIPPED_PAUSED: lambda v, at: f"{at}: not fired: the schedule was paused by {_by(v)} at {_t(v.since)}.",
    models.SKIPPED_RETIRED: lambda v, at: f"{at}: not fired: the schedule was retired by {_by(v)} at {_t(v.since)}.",
}


def describe(v: Verdict) -> str:
    """The verdict of one instant, as a sentence (database strings escaped)."""
    at = _t(v.instant)
    if v.verdict == models.FIRED:
        text = f"{at}: fired (job {v.job_id}, {_s(v.lateness_s)} late)"
        if v.result == "ok":
            text += ", ok"
        elif v.result == "failed":
            text += f", failed: {printable(v.error or '?')}"
            if v.job_state == "retryable":
                text += " (will retry)"
        elif v.result == "waiting":
            text += ", waiting to run"
            if v.queue_paused_by is not None:
                text += f"; its queue {printable(v.queue or '?')} is paused (by {printable(v.queue_paused_by)})"
        elif v.replaced_by is not None and v.result == "cancelled":
            text += f", cancelled: replaced by job {v.replaced_by}"
        elif v.replaced_by is not None and v.result == "running":
            text += f", running; replaced by job {v.replaced_by}, which asked it to stop"
        else:
            text += f", {v.result}"
        if v.replaced:
            text += (f"; it replaced {_jobs(v.replaced)}, still waiting or running at this instant "
                     "(the overlap policy replace)")
        if v.folded:
            text += f"; {v.folded} earlier instant{'s' if v.folded != 1 else ''} folded into it"
        return text + "."
    simple = _ONE_LINE.get(v.verdict)
    if simple is not None:
        return simple(v, at)
    if v.verdict == models.NO_LEADER:
        # The gap's ends are terms' ends and starts (to the microsecond): whole seconds in a sentence.
        since = f"from {_t(_second(v.gap_from))}" if v.gap_from else "(since before the recorded terms)"
        until = f"until {_t(_second(v.gap_until))}" if v.gap_until else "and none holds it now"
        text = f"{at}: not fired: no runtime held leadership {since} {until}"
        if v.into is not None:
            text += f"; coalesced into the fire at {_t(v.into)} ({v.folded} instant{'s' if v.folded != 1 else ''})"
        return text + "."
    if v.verdict == models.SKIPPED_TOO_OLD:
        # S66: whole seconds, like the gap's ends: `since` is the pass that skipped it.
        from awa_tui.instants import span_precise

        window = "?" if v.catchup_window_s is None else span_precise(v.catchup_window_s)
        when = f" at {_t(_second(v.since))}" if v.since is not None else ""
        return (f"{at}: not fired: too old to catch up: when the leader could fire it{when}, it was older "
                f"than the schedule's catch-up window ({window}).")
    if v.verdict == models.COALESCED:
        return (f"{at}: not fired on its own: coalesced into the fire at {_t(v.into)} "
                f"({v.folded} instant{'s' if v.folded != 1 else ''} folded).")
    if v.verdict == models.IMPORTED:
        # S68: a run of the scheduler it was imported from, carried over as a finished job.
        outcome = "completed" if v.job_state == "completed" else f"failed: {printable(v.error or '?')}"
        return f"{at}: ran in {printable(v.reason or '?')} before the import (job {v.job_id}, {outcome})."
    if v.verdict == models.PENDING:
        return f"{at}: due, not fired yet (the leader's next pass decides)."
    return f"{at}: unknown ({v.reason})."


def why(conn: psycopg.Connection[Any], name: str, *, at: datetime | None = None,
        now: datetime | None = None) -> Why:
    """Explain the last due instant at or before `at` (default: now)."""
    now = now or db_now(conn)
    asked = at if at is not None else now
    found = [v for v in ledger(conn, name, until=min(asked, now), limit=1, now=now) if v.verdict != models.MANUAL]
    row, history = schedule_history(conn, name)
    segments = definition_segments(history, row["cron_expr"], row["timezone"], row["start_at"])
    calendars = calendars_for(conn, [row])
    following = _next_not_excluded(row, segments, max(asked, born(row)), calendars)
    verdict = found[-1] if found else None
    if verdict is not None and verdict.into is not None and verdict.into > verdict.instant:
        # Read up to the fire it was folded into, so every folded instant is counted.
        between, _ = due_instants(segments, verdict.instant, verdict.into, MAX_INSTANTS - 1)
        span = ledger(conn, name, until=verdict.into, limit=len(between), now=now)
        verdict = next((v for v in span if v.instant == verdict.instant and v.verdict != models.MANUAL), verdict)
    label = printable(name)
    excluded = _excluded_day(row, at, calendars) if at is not None else None
    imported = imported_runs(conn, name, born(row), at, at, 1) if at is not None and at < born(row) else []
    if imported:
        ran = describe(imported[0]).split(": ", 1)[1][:-1]  # the sentence without its instant and full stop
        text = (f"{label}: {_t(at)} {ran}; the schedule was created {_t(row['created_at'])} "
                f"(next due {_t(following)}).")
    elif at is not None and at < born(row):
        text = (f"{label}: not due at {_t(at)}: the schedule did not exist yet: created {_t(row['created_at'])} "
                f"(next due {_t(following)}).")
    elif excluded is not None and (verdict is None or verdict.instant != at):
        # An instant not judged yet (in the future, or before the first due one) on an
        # excluded day: the exclusion is the answer, not "not due yet".
        text = f"{label}: not due at {_t(at)}: excluded by {printable(excluded)} (next due {_t(following)})."
    elif verdict is None:
        text = f"{label}: not due yet at {_t(asked)} (next is {_t(following)})."
    elif at is not None and verdict.instant != at:
        text = (f"{label}: not due at {_t(at)} (next is {_t(following)}); "
                f"the last due instant before it, {describe(verdict)}")
    else:
        text = f"{label}: last due instant {describe(verdict)} Next due {_t(following)}."
        if at is not None:
            text = f"{label}: due instant {describe(verdict)}"
    if row["retired_at"] is not None:
        text += f" Now retired (by {printable(row['retired_by'] or '?')})."
    elif row["paused_at"] is not None:
        # S65: the pause's end and reason, as everywhere a pause is shown.
        until = f" until {_t(row['paused_until'])}" if row["paused_until"] is not None else ""
        reason = f": {printable(row['pause_reason'])}" if row["pause_reason"] else ""
        text += f" Now paused{until} (by {printable(row['paused_by'] or '?')} at {_t(row['paused_at'])}){reason}."
    return Why(schedule=name, asked_at=at, verdict=verdict, next_due=following, text=text)


def ledger_view(conn: psycopg.Connection[Any], name: str, *, at: datetime | None = None, limit: int = 50,
                now: datetime | None = None) -> LedgerView:
    """The verdicts of the last `limit` due instants and the `why` of the instant `at` (the
    latest when None): what the console's schedule detail shows, at one `now`."""
    now = now or db_now(conn)
    verdicts = tuple(ledger(conn, name, limit=limit, now=now))
    return LedgerView(now=now, verdicts=verdicts, why=why(conn, name, at=at, now=now))
