"""`awa-tui cron ...`: list, show, next, pause, resume, trigger, remove (S38), override and
reset (S49)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from awa_tui.cli import command_group
from awa_tui.cli.bulk import DryRunOpt, FilterOpt, NamesArg, run_named
from awa_tui.cli.common import (
    emit,
    emit_table,
    errors_as_lines,
    fail,
    field_of,
    fmt,
    make_client,
    plain,
    run_action,
    say,
)
from awa_tui.cli.headings import listing_line
from awa_tui.cli.options import DsnOpt, JsonOpt, OperatorOpt
from awa_tui.engine.core.errors import ValidationError, short_repr
from awa_tui.instants import parse_instant as _parse_instant
from awa_tui.instants import span_precise
from awa_tui.printable import printable

if TYPE_CHECKING:
    from awa_tui.engine.read.models import AnySchedule, Fire

cron_app = command_group("cron", "Periodic schedules.")

NameArg = Annotated[str, typer.Argument(help="Schedule name.")]


# The table's first page: an operator's answer, not a million lines (the console pages too).
LIST_LIMIT = 1000
ALL_ROWS = 2**63 - 1  # LIMIT's largest value: no cut
LIST_COLUMNS = ("name", "cron_expr", "timezone", "kind", "queue", "missed_fire_policy", "state_text",
                "last_enqueued_at", "next_fire_at", "overdue", "owner", "origin_text")
LIST_FIELDS = tuple(c for c in LIST_COLUMNS if c not in ("state_text", "overdue", "origin_text"))
# S64: where a schedule's definition comes from, in an operator's words.
ORIGIN_WORDS = {"code": "in code", "api": "at run time"}
SHOW_ORIGIN_WORDS = {"code": "declared in code", "api": "made at run time"}


@cron_app.command("list")
def cron_list(
    dsn: DsnOpt = None,
    as_json: JsonOpt = False,
    filter_text: Annotated[str | None, typer.Option("--filter", metavar="EXPR", help=(
        "owner:billing state:paused queue:q1 late, free text (name, kind, queue, owner)... (docs/keys.md)."))] = None,
    limit: Annotated[int | None, typer.Option("--limit", metavar="N", min=1, help=(
        f"At most N schedules, in name order (the table's default: {LIST_LIMIT}). With --json, the output is "
        "then {\"schedules\": [...], \"limit\": N, \"truncated\": true|false}."))] = None,
    show_all: Annotated[bool, typer.Option("--all", help=(
        "Every schedule, however many (the default with --json, which is then a plain list)."))] = False,
) -> None:
    """Schedules in name order with their state and queue pause; the table shows the first 1000 (--limit N, --all)."""
    from awa_tui.filters import parse

    with errors_as_lines():
        if show_all and limit is not None:
            fail("--limit and --all: pass one of them, not both")
        where = parse(filter_text)  # a bad filter is refused before any connection
        # A script reading --json gets every row unless it asks for a limit (its output
        # then says whether it was cut); the table stops at its first page and says so.
        cap = limit if limit is not None else (ALL_ROWS if show_all or as_json else LIST_LIMIT)
        client = make_client(dsn, read_only=True)
        rows = client.reads.list_schedules(where=where, limit=cap if cap == ALL_ROWS else cap + 1)
        truncated = len(rows) > cap
        rows = rows[:cap]

        now = client.reads.db_time()  # OVERDUE by the database's clock, never this host's

        def render() -> None:
            # Only the shown fields are read off each row (copying whole rows was most of the time).
            shown = [{**{f: field_of(row, f) for f in LIST_FIELDS}, "cron_expr": _schedule_words(row.cron_expr),
                      "state_text": _state_text(row),
                      "overdue": _overdue_text(row, now),
                      "origin_text": ORIGIN_WORDS.get(row.origin, row.origin)} for row in rows]
            emit_table(shown, LIST_COLUMNS)
            if truncated:
                say(f"first {cap} schedules shown, more match: --limit N for more, --all for every one")

        # --json: each row's fields, then `overdue_s` (null unless OVERDUE), as the table's column.
        listed = [{**plain(row), "overdue_s": _overdue(row, now)} for row in rows] if as_json else []
        emit({"schedules": listed, "limit": cap, "truncated": truncated} if limit is not None else listed,
             as_json, render)


def _schedule_words(cron_expr: str) -> str:
    """The expression as the table shows it: an interval in words (`every 90s`)."""
    from awa_tui.engine.cron.expression import interval_words

    return interval_words(cron_expr) or cron_expr


def _overdue(row: AnySchedule, now: datetime) -> float | None:
    """Seconds an active schedule's due fire has waited once it is OVERDUE (a fleet that
    stopped firing), else None; a faulty row's hint is not a due fire."""
    from awa_tui.engine.read.models import overdue_s

    return overdue_s(row.state, row.next_fire_at, not row.fault, now)


def _overdue_text(row: AnySchedule, now: datetime) -> str:
    waited = _overdue(row, now)
    return "-" if waited is None else span_precise(waited)


def _state_text(row: AnySchedule) -> str:
    if row.state == "retired":
        text = f"RETIRED by {row.retired_by}"
    elif row.state == "finished":
        # Past end_at or max_fires (v009): nothing more fires; not broken, not late.
        text = f"FINISHED at {fmt(row.finished_at)}"
    elif row.state == "paused":
        # S65: "PAUSED until 14:00 by alice since 12:00: db migration"
        until = f" until {fmt(row.paused_until)}" if row.paused_until is not None else ""
        text = f"PAUSED{until} by {row.paused_by} since {fmt(row.paused_at)}"
        if row.pause_reason:
            text += f": {row.pause_reason}"
    else:
        text = "active"
    if row.overridden:
        # S49: an operator's values are in force; `cron show` lists the code's.
        text += f" OVERRIDDEN ({', '.join(sorted(row.overridden))})"
    if row.fault:
        # S15: the row cannot fire until repaired; the reason is the evaluator's own words.
        text = f"BROKEN: {row.fault}" + ("" if text == "active" else f"; {text}")
    if row.queue_paused:
        text += " [queue paused]"
    return text


@cron_app.command("show")
def cron_show(name: NameArg, dsn: DsnOpt = None, as_json: JsonOpt = False) -> None:
    """One schedule: definition, state, recent fires."""
    with errors_as_lines():
        client = make_client(dsn, read_only=True)
        row = client.reads.get_schedule(name)
        fires = client.reads.recent_fires(name)
        def render() -> None:
            for key, value in plain(row).items():
                if key != "origin":
                    say(listing_line(key, fmt(value)))
            say(listing_line("origin_text", SHOW_ORIGIN_WORDS.get(row.origin, row.origin)))
            interval = _interval_line(row)
            if interval is not None:
                say(listing_line("interval", interval))
            say(listing_line("status", _state_text(row)))
            columns = ["id", "state", "fire_time", "created_at", "manual"]
            if any(f.replaced or f.replaced_by is not None for f in fires):
                # The overlap policy replace: which fire cancelled which job.
                shown = [{**plain(f), "replace_text": _replace_text(f)} for f in fires]
                emit_table(shown, [*columns, "replace_text"], title="recent fires")
            else:
                emit_table(fires, columns, title="recent fires")
        emit({**plain(row), "recent_fires": plain(fires)}, as_json, render)


def _interval_line(row: AnySchedule) -> str | None:
    """An interval schedule in words with where its instants are counted from (its start,
    else the epoch), printable; None for a cron expression."""
    from awa_tui.engine.cron.expression import interval_words

    words = interval_words(row.cron_expr, getattr(row, "start_at", None), counted=True)
    return None if words is None else printable(words)


def _replace_text(fire: Fire) -> str:
    """What the overlap policy replace did with this fire's job, in words."""
    parts = []
    if fire.replaced:
        parts.append("replaced job " + ", ".join(str(i) for i in fire.replaced))
    if fire.replaced_by is not None:
        parts.append(f"replaced by job {fire.replaced_by}")
    return "; ".join(parts)


DST_MARKS = {
    "gap": "DST gap: this wall time does not exist; fires at the end of the gap",
    "fold": "DST fold: this wall time occurs twice; fires at the first occurrence only",
}


def _stamp(value: datetime, pattern: str) -> str:
    """strftime with a four-digit year: glibc prints year 1 as "1", not "0001"."""
    return value.strftime(pattern.replace("%Y", f"{value.year:04d}"))


@cron_app.command("next")
def cron_next(
    name: NameArg,
    dsn: DsnOpt = None,
    as_json: JsonOpt = False,
    count: Annotated[int, typer.Option("-n", "--count", min=1, max=1000)] = 5,
    after: Annotated[
        str | None, typer.Option("--after", help="Preview from this ISO-8601 instant (default: now, DB time).")
    ] = None,
) -> None:
    """The next fires in the schedule's zone and in UTC, with DST gap/fold marks."""
    with errors_as_lines():
        start = _parse_instant(after) if after is not None else None
        client = make_client(dsn, read_only=True)
        fires = client.reads.next_fires(name, count, after=start)
        row = client.reads.get_schedule(name)

        def render() -> None:
            if row.cron_written:  # S48: H, resolved for this name
                say(f"{name}: {row.cron_written} resolves to {row.cron_expr}")
            interval = _interval_line(row)
            if interval is not None:
                say(f"{name}: {interval}")
            if fires:
                say(f"next fires of {name} (zone {fires[0].timezone}; local time, then UTC):")
            for f in fires:
                local = _stamp(f.local, "%Y-%m-%d %H:%M:%S %Z (UTC%z)")
                mark = f"  [{DST_MARKS[f.dst]}]" if f.dst else ""
                if f.excluded:  # S56: listed so the gap is explained, never fired
                    mark += f"  [excluded: {printable(f.excluded)}]"
                say(f"  {local}  {_stamp(f.utc, '%Y-%m-%dT%H:%M:%SZ')}{mark}")
            if len(fires) < count:  # only the end of the calendar (year 9999) cuts the list
                say(f"{len(fires)} of {count} fires: the calendar ends at 9999-12-31")

        emit(fires, as_json, render)


@cron_app.command("pause")
def cron_pause(
    names: NamesArg = None, filter_expr: FilterOpt = None, dry_run: DryRunOpt = False,
    until: Annotated[str | None, typer.Option("--until", metavar="INSTANT|DURATION", help=(
        "End the pause by itself then (an ISO-8601 instant, or a duration from now: 2h, 1d): the leader "
        "resumes it and the missed-fire policy applies. Pausing a paused schedule again changes it."))] = None,
    reason: Annotated[str | None, typer.Option("--reason", metavar="TEXT", help=(
        "Why, shown beside the pause everywhere (one line, up to 500 characters)."))] = None,
    dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False,
) -> None:
    """Pause automatic fires, optionally until a time and with a reason; several names or --filter pause in bulk."""
    from awa_tui.instants import parse_ahead

    with errors_as_lines():
        end = parse_ahead(until, "--until") if until is not None else None  # refused before any connection
    run_named("pause", names, filter_expr, dry_run, dsn, operator, as_json,
              lambda client, name: client.actions.pause(name, until=end, reason=reason), _pause_detail,
              options={"until": end, "reason": reason} if end is not None or reason is not None else None)


def _pause_detail(state: Any) -> str:
    """S65: ' until T: reason' after `paused NAME`."""
    text = f" until {fmt(state.paused_until)}" if state.paused_until is not None else ""
    return text + (f": {state.pause_reason}" if state.pause_reason else "")


@cron_app.command("resume")
def cron_resume(
    names: NamesArg = None, filter_expr: FilterOpt = None, dsn: DsnOpt = None, operator: OperatorOpt = None,
    as_json: JsonOpt = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help=(
        "One name: show what resuming would fire now (the policy's instants). Several or --filter: "
        "what would be resumed. Changes nothing."))] = False,
) -> None:
    """Resume; the missed-fire policy decides what fires. Several names or --filter resume in bulk."""
    if names is not None and len(names) == 1 and filter_expr is None and dry_run:
        _resume_preview(names[0], dsn, as_json)
    else:
        run_named("resume", names, filter_expr, dry_run, dsn, operator, as_json,
                  lambda client, name: client.actions.resume(name))


def _resume_preview(name: str, dsn: str | None, as_json: bool) -> None:
    with errors_as_lines():
        preview = make_client(dsn, read_only=True).reads.resume_preview(name)

        def render() -> None:
            say(f"{name}: {preview.explanation}")
            say("dry run: nothing changed, the schedule is still paused")

        emit(preview, as_json, render)


@cron_app.command("trigger")
def cron_trigger(names: NamesArg = None, filter_expr: FilterOpt = None, dry_run: DryRunOpt = False,
                 dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False) -> None:
    """Insert one job now, even while paused; several names or --filter trigger in bulk."""
    run_named("trigger", names, filter_expr, dry_run, dsn, operator, as_json,
              lambda client, name: client.actions.trigger(name), lambda job: f": job {job.id}")


@cron_app.command("remove")
def cron_remove(name: NameArg, dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False) -> None:
    """Delete a schedule row; code that registers it brings it back at the next sync."""
    run_action(dsn, operator, as_json, lambda client: client.actions.remove(name), lambda _: f"removed {name}")


def _args_json(text: str | None) -> dict[str, object] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"--args: not valid JSON ({exc.msg}): {short_repr(text)}") from None
    return value  # Schedule validation names a value that is not an object


@cron_app.command("override")
def cron_override(
    name: NameArg,
    cron: Annotated[str | None, typer.Option("--cron", help="Cron expression (H allowed).")] = None,
    timezone: Annotated[str | None, typer.Option("--timezone", help="IANA time zone.")] = None,
    args: Annotated[str | None, typer.Option("--args", metavar="JSON", help="Job args, a JSON object.")] = None,
    queue: Annotated[str | None, typer.Option("--queue", metavar="Q")] = None,
    priority: Annotated[int | None, typer.Option("--priority", metavar="N", help="1..4.")] = None,
    dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False,
) -> None:
    """Override a schedule's definition without a deploy (audited; sync keeps it; `cron reset` ends it)."""
    from awa_tui.engine.actions.overrides import OverrideRequest

    with errors_as_lines():
        # Bad JSON is refused before any connection; "nothing to change" by the engine,
        # after the schema check (a database without it says to migrate, like every command).
        request = OverrideRequest(cron=cron, timezone=timezone, args=_args_json(args), queue=queue,  # type: ignore[arg-type]
                                  priority=priority)
    run_action(dsn, operator, as_json, lambda client: client.actions.override(name, request),
               lambda row: f"overridden {name}: {', '.join(sorted(row.overridden or {}))} "
                           f"(effective: {row.cron_expr} {row.timezone}, queue {row.queue}, priority {row.priority})")


@cron_app.command("reset")
def cron_reset(name: NameArg, dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False) -> None:
    """End an override: the schedule returns to its code definition."""
    run_action(dsn, operator, as_json, lambda client: client.actions.reset_override(name),
               lambda row: f"reset {name} to its code definition ({row.cron_expr} {row.timezone}, "
                           f"queue {row.queue}, priority {row.priority})")
