"""`awa-tui cron create / edit / delete`: schedules made at run time (S64), by an operator.

The flags mirror the API (`Client.create_schedule`, `update_schedule`, `delete_schedule`);
`--dry-run` checks everything the change would (a taken name, an unknown calendar, a
schedule declared in code), shows the definition and its next fires, and writes nothing.
Every change is audited by the database under the operator's label. Code-declared
schedules are changed by overrides (`cron override`), never here.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from awa_tui.cli.common import emit, errors_as_lines, fmt, make_client, plain, say
from awa_tui.cli.cron import DST_MARKS, NameArg, cron_app
from awa_tui.cli.headings import listing_line
from awa_tui.cli.options import DsnOpt, JsonOpt, OperatorOpt
from awa_tui.engine.core.errors import ValidationError, short_repr
from awa_tui.instants import parse_days, parse_duration, parse_instant
from awa_tui.printable import printable

if TYPE_CHECKING:
    from awa_tui import Schedule
    from awa_tui.engine.client import Client
    from awa_tui.engine.read.models import NextFire

CronOpt = Annotated[str | None, typer.Option("--cron", metavar="EXPR", help="Cron expression (H allowed).")]
EveryOpt = Annotated[str | None, typer.Option("--every", metavar="DURATION", help=(
    "An interval instead of --cron: fires every DURATION (90s, 15m, 1h30m), counted from --start-at "
    "(else from 1970-01-01T00:00:00Z), whatever the zone."))]
KindOpt = Annotated[str | None, typer.Option("--kind", metavar="KIND", help="The job kind each fire enqueues.")]
ArgsOpt = Annotated[str | None, typer.Option("--args", metavar="JSON", help="Job args, a JSON object.")]
ZoneOpt = Annotated[str | None, typer.Option("--timezone", metavar="ZONE", help="IANA time zone (default UTC).")]
QueueOpt = Annotated[str | None, typer.Option("--queue", metavar="Q")]
PriorityOpt = Annotated[int | None, typer.Option("--priority", metavar="N", help="1..4.")]
AttemptsOpt = Annotated[int | None, typer.Option("--max-attempts", metavar="N", help="1..1000.")]
TagOpt = Annotated[list[str] | None, typer.Option("--tag", metavar="TAG", help="A tag (repeat for several).")]
MetadataOpt = Annotated[str | None, typer.Option("--metadata", metavar="JSON", help="Job metadata, a JSON object.")]
PolicyOpt = Annotated[str | None, typer.Option("--missed-fire-policy", metavar="POLICY", help="coalesce | catch_up.")]
OverlapOpt = Annotated[str | None, typer.Option("--overlap", metavar="POLICY",
                                               help="allow | skip | buffer_one | replace.")]
StartOpt = Annotated[str | None, typer.Option("--start-at", metavar="INSTANT", help="No fire before (ISO-8601).")]
EndOpt = Annotated[str | None, typer.Option("--end-at", metavar="INSTANT", help="No fire after (ISO-8601).")]
MaxFiresOpt = Annotated[int | None, typer.Option("--max-fires", metavar="N", help="Finished after N fires.")]
JitterOpt = Annotated[str | None, typer.Option("--jitter", metavar="DURATION", help="Delay each job by up to this.")]
ExcludeOpt = Annotated[list[str] | None, typer.Option("--exclude", metavar="DATE|FROM..TO", help=(
    "A day it never fires on, or an inclusive range of days, in its zone (repeat for several)."))]
CalendarOpt = Annotated[list[str] | None, typer.Option("--calendar", metavar="NAME", help=(
    "A calendar of days it never fires on (repeat for several; it must exist)."))]
LatenessOpt = Annotated[str | None, typer.Option("--max-lateness", metavar="DURATION")]
SuccessOpt = Annotated[str | None, typer.Option("--expect-success-within", metavar="DURATION")]
FailuresOpt = Annotated[int | None, typer.Option("--max-consecutive-failures", metavar="N")]
PauseOpt = Annotated[int | None, typer.Option("--pause-after-failures", metavar="N")]
OwnerOpt = Annotated[str | None, typer.Option("--owner", metavar="OWNER", help=(
    "The owner it belongs to (create: default app; edit, delete: refused unless it is this owner's)."))]
# What `cron edit --clear` can take away: the optional settings, by their flag's name, and
# the value each then gets (the one a create without the flag stores).
CLEARABLE: dict[str, tuple[str, Any]] = {
    "args": ("args", None), "metadata": ("metadata", None), "tag": ("tags", []), "start-at": ("start_at", None),
    "end-at": ("end_at", None), "max-fires": ("max_fires", None), "jitter": ("jitter", None),
    "exclude": ("exclude", None), "calendar": ("calendar", None), "max-lateness": ("max_lateness", None),
    "expect-success-within": ("expect_success_within", None),
    "max-consecutive-failures": ("max_consecutive_failures", None),
    "pause-after-failures": ("pause_after_failures", None),
}
ClearOpt = Annotated[list[str] | None, typer.Option("--clear", metavar="SETTING", help=(
    "Take an optional setting away (it then has its default), by its flag's name without dashes: "
    f"{', '.join(CLEARABLE)}. Repeat for several; not with the same setting's own flag."))]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help=(
    "Check everything, show the definition and its next fires; write nothing."))]
CountOpt = Annotated[int, typer.Option("-n", "--count", min=1, max=100, help="How many next fires --dry-run shows.")]


def _json_object(text: str | None, option: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{option}: not valid JSON ({exc.msg}): {short_repr(text)}") from None


def _excluded(values: list[str] | None) -> list[Any] | None:
    return parse_days(values, "--exclude") if values else None


def _settings(**given: Any) -> dict[str, Any]:
    """The API's keyword arguments from the flags given (None: not given), parsed."""
    parsers = {
        "args": lambda v: _json_object(v, "--args"), "metadata": lambda v: _json_object(v, "--metadata"),
        "start_at": lambda v: parse_instant(v, "--start-at"), "end_at": lambda v: parse_instant(v, "--end-at"),
        "jitter": lambda v: parse_duration(v, "--jitter"),
        "max_lateness": lambda v: parse_duration(v, "--max-lateness"),
        "expect_success_within": lambda v: parse_duration(v, "--expect-success-within"),
        "exclude": _excluded, "tags": lambda v: v or None, "calendar": lambda v: v or None,
    }
    out = {}
    for key, value in given.items():
        parsed = parsers[key](value) if key in parsers and value is not None else value
        if parsed is not None:
            out[key] = parsed
    return out


def _cleared(names: list[str], given: dict[str, Any]) -> dict[str, Any]:
    """--clear's settings with the value each then has; refused in one line when one is not
    an optional setting, or is also given a value."""
    out: dict[str, Any] = {}
    for name in names:
        flag = name.strip().removeprefix("--")
        if flag not in CLEARABLE:
            raise ValidationError(f"--clear: {short_repr(name)} is not an optional setting; one of "
                                  f"{', '.join(CLEARABLE)} (a required one is changed with its own flag)")
        key, value = CLEARABLE[flag]
        if key in given:
            raise ValidationError(f"--clear {flag} and --{flag}: give one of them")
        out[key] = value
    return out


def _cron_or_every(cron: str | None, every: str | None) -> str | None:
    """--cron, or --every as the interval expression it stands for (`@every 90s`)."""
    from awa_tui.engine.cron.expression import every_expression

    if every is None:
        return cron
    if cron is not None:
        raise ValidationError("--every: give --cron or --every, not both")
    return every_expression(every, "--every")


def _writable_client(dsn: str | None, operator: str | None, cron: str | None = None) -> Client:
    from awa_tui.engine.client import Client
    from awa_tui.engine.cron.expression import is_interval

    client = make_client(dsn, operator)
    if not isinstance(client, Client):
        if is_interval(cron):
            raise ValidationError("--every: upstream Awa has no interval schedules; this database holds "
                                  "upstream Awa's schema")
        raise ValidationError("cron create/edit/delete: this database holds upstream Awa's schema, whose "
                              "schedules its own code declares; nothing can be made at run time here")
    return client


def _report(client: Client, schedule: Schedule, verb: str, dry_run: bool, count: int, as_json: bool,
            owner: str | None, fired: int = 0) -> None:
    """`fired`: the scheduled fires an edited schedule has made, which its max_fires counts."""
    fires = client.reads.definition_fires(schedule, count, fired=fired) if dry_run else []
    definition = schedule.definition()

    def render() -> None:
        if not dry_run:
            say(f"{verb} {schedule.name}: {_words(schedule)} ({schedule.timezone})"
                + (f", owner {owner}" if owner else ""))
            return
        say(f"dry run: {schedule.name} would be {verb}; nothing written")
        for key, value in definition.items():
            if key != "name" and value not in (None, [], {}):
                say(listing_line(key, fmt(value)))
        if schedule.max_fires is not None and fired:
            left = max(schedule.max_fires - fired, 0)
            say(f"{fired} of its at most {schedule.max_fires} fires made; {left} left")
        _say_fires(schedule.name, fires)

    emit({"name": schedule.name, "owner": owner, "dry_run": dry_run, "definition": definition,
          "fires_made": fired, "next_fires": plain(fires)}, as_json, render)


def _words(schedule: Schedule) -> str:
    """The definition's expression as an operator reads it: an interval in words."""
    from awa_tui.engine.cron.expression import interval_words

    return interval_words(schedule.cron_expr) or schedule.cron_written or schedule.cron_expr


def _say_fires(name: str, fires: list[NextFire]) -> None:
    if fires:
        say(f"next fires of {name} (zone {fires[0].timezone}; local time, then UTC):")
    for f in fires:
        mark = f"  [{DST_MARKS[f.dst]}]" if f.dst else ""
        if f.excluded:
            mark += f"  [excluded: {printable(f.excluded)}]"
        say(f"  {f.local:%Y-%m-%d %H:%M:%S %Z (UTC%z)}  {f.utc:%Y-%m-%dT%H:%M:%SZ}{mark}")


@cron_app.command("create")
def cron_create(
    name: NameArg, cron: CronOpt = None, kind: KindOpt = None, args: ArgsOpt = None, timezone: ZoneOpt = None,
    queue: QueueOpt = None, priority: PriorityOpt = None, max_attempts: AttemptsOpt = None, tag: TagOpt = None,
    metadata: MetadataOpt = None, missed_fire_policy: PolicyOpt = None, overlap: OverlapOpt = None,
    start_at: StartOpt = None, end_at: EndOpt = None, max_fires: MaxFiresOpt = None, jitter: JitterOpt = None,
    exclude: ExcludeOpt = None, calendar: CalendarOpt = None, max_lateness: LatenessOpt = None,
    expect_success_within: SuccessOpt = None, max_consecutive_failures: FailuresOpt = None,
    pause_after_failures: PauseOpt = None, owner: OwnerOpt = None, dry_run: DryRunOpt = False, every: EveryOpt = None,
    count: CountOpt = 5, dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False,
) -> None:
    """Make a schedule at run time (audited); code sync never touches it. --cron (or --every) and --kind are
    required."""
    with errors_as_lines():
        cron = _cron_or_every(cron, every)
        if cron is None or kind is None:
            raise ValidationError(f"{'--cron' if cron is None else '--kind'}: required to create a schedule")
        options = _settings(
            timezone=timezone, queue=queue, priority=priority, max_attempts=max_attempts, tags=tag,
            metadata=metadata, missed_fire_policy=missed_fire_policy, overlap=overlap, start_at=start_at,
            end_at=end_at, max_fires=max_fires, jitter=jitter, exclude=exclude, calendar=calendar,
            max_lateness=max_lateness, expect_success_within=expect_success_within,
            max_consecutive_failures=max_consecutive_failures, pause_after_failures=pause_after_failures)
        job_args = _json_object(args, "--args")
        from awa_tui.engine.ownership.api_schedules import DEFAULT_OWNER  # loaded by this command only

        client = _writable_client(dsn, operator, cron)
        owner = owner or DEFAULT_OWNER  # said here: the CLI's client has no owner of its own
        made = client.create_schedule(name, cron, kind, job_args, owner=owner, dry_run=dry_run,
                                      operator_action=True, **options)
        _report(client, made, "created", dry_run, count, as_json, owner)


@cron_app.command("edit")
def cron_edit(
    name: NameArg, cron: CronOpt = None, kind: KindOpt = None, args: ArgsOpt = None, timezone: ZoneOpt = None,
    queue: QueueOpt = None, priority: PriorityOpt = None, max_attempts: AttemptsOpt = None, tag: TagOpt = None,
    metadata: MetadataOpt = None, missed_fire_policy: PolicyOpt = None, overlap: OverlapOpt = None,
    start_at: StartOpt = None, end_at: EndOpt = None, max_fires: MaxFiresOpt = None, jitter: JitterOpt = None,
    exclude: ExcludeOpt = None, calendar: CalendarOpt = None, max_lateness: LatenessOpt = None,
    expect_success_within: SuccessOpt = None, max_consecutive_failures: FailuresOpt = None,
    pause_after_failures: PauseOpt = None, clear: ClearOpt = None, owner: OwnerOpt = None, dry_run: DryRunOpt = False,
    every: EveryOpt = None, count: CountOpt = 5, dsn: DsnOpt = None, operator: OperatorOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a schedule made at run time (only the settings given, or --clear'ed; audited). One declared in code:
    `cron override`."""
    with errors_as_lines():
        cron = _cron_or_every(cron, every)
        changes = _settings(
            cron_expr=cron, kind=kind, args=args, timezone=timezone, queue=queue, priority=priority,
            max_attempts=max_attempts, tags=tag, metadata=metadata, missed_fire_policy=missed_fire_policy,
            overlap=overlap, start_at=start_at, end_at=end_at, max_fires=max_fires, jitter=jitter, exclude=exclude,
            calendar=calendar, max_lateness=max_lateness, expect_success_within=expect_success_within,
            max_consecutive_failures=max_consecutive_failures, pause_after_failures=pause_after_failures)
        changes.update(_cleared(clear or [], changes))
        if not changes:
            raise ValidationError("edit: nothing to change; give at least one setting (--cron, --timezone, ...) "
                                  "or --clear one")
        client = _writable_client(dsn, operator, cron)
        edited = client.update_schedule(name, owner=owner, dry_run=dry_run, operator_action=True, **changes)
        # A dry run's preview counts the fires made so far against max_fires, as the leader will.
        fired = client.reads.get_schedule(name).fires_count if dry_run else 0
        _report(client, edited, "edited", dry_run, count, as_json, owner, fired)


@cron_app.command("delete")
def cron_delete(name: NameArg, owner: OwnerOpt = None, dry_run: DryRunOpt = False, dsn: DsnOpt = None,
                operator: OperatorOpt = None, as_json: JsonOpt = False) -> None:
    """Delete a schedule made at run time (audited); its jobs and history stay. One declared in code: `cron remove`."""
    with errors_as_lines():
        client = _writable_client(dsn, operator)
        client.delete_schedule(name, owner=owner, dry_run=dry_run, operator_action=True)
        emit({"name": name, "deleted": not dry_run, "dry_run": dry_run}, as_json,
             lambda: say(f"dry run: {name} would be deleted; nothing written" if dry_run else f"deleted {name}"))
