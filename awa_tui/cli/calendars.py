"""`awa-tui calendar ...`: named calendars of dates schedules exclude (S56): set, list, show, delete."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Annotated

import typer

from awa_tui.cli import command_group
from awa_tui.cli.common import emit, emit_table, errors_as_lines, make_client, run_action, say
from awa_tui.cli.options import DsnOpt, JsonOpt, OperatorOpt

calendar_app = command_group("calendar", "Named calendars: dates schedules do not fire on.")

NameArg = Annotated[str, typer.Argument(help="Calendar name (letters, digits, '.', '_', '-').")]


@calendar_app.command("set")
def calendar_set(
    name: NameArg,
    dates: Annotated[Path, typer.Option("--dates", help=(
        "An iCalendar file (.ics: each event's DTSTART..DTEND days) or a plain list: one ISO date "
        "or START..END range per line, '#' comments."))],
    zone: Annotated[str | None, typer.Option("--zone", help=(
        "The time zone whose dates timed .ics events cover (default: each event's own)."))] = None,
    until: Annotated[str | None, typer.Option("--until", help=(
        "The last day (YYYY-MM-DD) .ics repeating events are expanded to; needed for one without end."))] = None,
    dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False,
) -> None:
    """Create or replace a calendar from a file; audited. Schedules naming it follow at once."""
    from awa_tui.engine.calendars.files import parse_dates, read_text
    from awa_tui.engine.cron.expression import parse_timezone

    with errors_as_lines():
        last = _iso_day(until) if until is not None else None
        ranges = parse_dates(read_text(dates, f"--dates {dates}"), source=str(dates),
                             zone=parse_timezone(zone) if zone is not None else None, until=last)
    run_action(dsn, operator, as_json, lambda client: client.actions.set_calendar(name, ranges),
               lambda info: f"calendar {info.name}: {len(info.ranges)} dates and ranges, {info.days} days")


def _iso_day(text: str) -> date:
    from awa_tui.engine.core.errors import ValidationError, short_repr

    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ValidationError(f"--until: not an ISO date (YYYY-MM-DD): {short_repr(text)}") from None


@calendar_app.command("list")
def calendar_list(dsn: DsnOpt = None, as_json: JsonOpt = False) -> None:
    """Calendars: how many days each holds, its span and how many schedules name it."""
    with errors_as_lines():
        rows = make_client(dsn, read_only=True).reads.list_calendars()
        emit(rows, as_json, lambda: emit_table(rows, ["name", "ranges", "days", "first", "last", "used_by",
                                                      "updated_at"]))


@calendar_app.command("show")
def calendar_show(name: NameArg, dsn: DsnOpt = None, as_json: JsonOpt = False) -> None:
    """One calendar's dates and ranges and the schedules naming it."""
    with errors_as_lines():
        info = make_client(dsn, read_only=True).reads.get_calendar(name)

        def render() -> None:
            say(f"calendar {info.name}: {len(info.ranges)} dates and ranges, {info.days} days, "
                f"updated {info.updated_at.isoformat()}")
            if info.fault:
                say(f"  unreadable: {info.fault}")
            for first, last in info.ranges:
                say(f"  {first.isoformat()}" if first == last else f"  {first.isoformat()}..{last.isoformat()}")
            say(f"used by: {', '.join(info.used_by)}" if info.used_by else "used by: no schedule")

        emit(info, as_json, render)


@calendar_app.command("delete")
def calendar_delete(name: NameArg, dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False) -> None:
    """Delete a calendar; refused while a schedule names it (they are listed). Audited."""
    run_action(dsn, operator, as_json, lambda client: client.actions.delete_calendar(name),
               lambda info: f"deleted calendar {info.name} ({len(info.ranges)} dates and ranges)")
