"""`awa-tui alerts ...` (S63): the alerts the outbox holds and their deliveries, the sinks
they go to, a test message to one sink, and silences. Secrets are never printed: a sink
shows where its URL and key come from, or a stored URL as its scheme and host."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from awa_tui.cli import command_group
from awa_tui.cli.common import emit, emit_table, errors_as_lines, fail, make_client, say
from awa_tui.cli.options import DsnOpt, JsonOpt, OperatorOpt

if TYPE_CHECKING:
    from awa_tui.engine.client import Client

alerts_app = command_group("alerts", "Alerts that reach a person: deliveries, sinks, tests, silences.")
sinks_app = typer.Typer(help="Where alerts go: webhook, slack, pagerduty, alertmanager, notify.", no_args_is_help=True)
alerts_app.add_typer(sinks_app, name="sinks")

SinkArg = Annotated[str, typer.Argument(help="Sink name (letters, digits, '.', '_', '-').")]
LIST_COLUMNS = ["id", "name", "at", "from_health", "to_health", "open", "sink", "state", "attempts",
                "next_attempt_at", "last_error", "reason"]
STATE_HELP = ("Only these: open (still firing), pending, failing (tried, not accepted yet), delivered, "
              "silenced, unrouted (no sink takes it).")


def _own(dsn: str | None, operator: str | None = None, *, read_only: bool = False) -> Client:
    """A client of awa-tui's own schema: an upstream Awa schema has no alerts."""
    from awa_tui.engine.client import Client

    backend = make_client(dsn, operator, read_only=read_only)
    if not isinstance(backend, Client):
        fail("alerts: this database holds an upstream Awa schema, which has no alert outbox")
    return backend


@alerts_app.command("list")
def alerts_list(
    state: Annotated[str | None, typer.Option("--state", help=STATE_HELP)] = None,
    sink: Annotated[str | None, typer.Option("--sink", help="Only this sink's deliveries.")] = None,
    schedule: Annotated[str | None, typer.Option("--schedule", help="Only this schedule's alerts.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=100_000, help="At most this many rows.")] = 100,
    dsn: DsnOpt = None, as_json: JsonOpt = False,
) -> None:
    """Alerts, newest first, one row per sink: open or recovered, and delivered, pending,
    failing (with the last error and the next attempt) or silenced."""
    with errors_as_lines():
        rows = _own(dsn, read_only=True).reads.alerts(state=state, sink=sink, name=schedule, limit=limit)
        # An alert about the fleet (nobody leads, a stalled leader) names no schedule.
        shown = [{c: ("(fleet)" if c == "name" and r.fleet else getattr(r, c)) for c in LIST_COLUMNS} for r in rows]
        emit(rows, as_json, lambda: emit_table(shown, LIST_COLUMNS, title=f"{len(rows)} alert deliveries"))


@alerts_app.command("test")
def alerts_test(sink: SinkArg, dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False) -> None:
    """Send a test alert to SINK now (a made-up schedule, resolved at once where the sink
    keeps incidents); exit 1 with the sink's answer when it refuses."""
    with errors_as_lines():
        done = _own(dsn, operator).actions.test_alert_sink(sink)
        emit(done, as_json, lambda: say(f"sent a test alert to sink {done.sink} ({done.messages} message(s))"))


@alerts_app.command("silence")
def alerts_silence(
    until: Annotated[str, typer.Option("--until", help="An ISO-8601 instant, or a duration from now (2h, 1d).")],
    reason: Annotated[str, typer.Option("--reason", help="Why, for the audit trail and `alerts list`.")],
    schedule: Annotated[str | None, typer.Argument(help="The schedule whose alerts to silence.")] = None,
    owner: Annotated[str | None, typer.Option("--owner", help="Silence every schedule of this owner instead.")] = None,
    filter_: Annotated[str | None, typer.Option("--filter", help=(
        "Silence the schedules this filter selects instead (the console's `/` grammar: owner:billing "
        "tag:nightly queue:etl ...), judged when each alert is delivered."))] = None,
    dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False,
) -> None:
    """Silence SCHEDULE's alerts (or an owner's, or a filter's) until a time, with a reason:
    none is sent meanwhile (they show as silenced), waiting ones included. Audited."""
    from awa_tui.instants import parse_ahead

    with errors_as_lines():
        if sum(x is not None for x in (schedule, owner, filter_)) != 1:
            fail("alerts silence: name one schedule, or --owner, or --filter (exactly one)")
        s = _own(dsn, operator).actions.silence_alerts(schedule, parse_ahead(until, "--until"), reason,
                                                       owner=owner, filter=filter_)
        waiting = f" ({s.silenced} waiting alert(s) silenced)" if s.silenced else ""
        shown = s.name if s.name is not None else s.target
        emit(s, as_json, lambda: say(f"silenced {shown} until {s.until.isoformat()}: {s.reason}{waiting}"))


@alerts_app.command("silences")
def alerts_silences(dsn: DsnOpt = None, as_json: JsonOpt = False) -> None:
    """The silences in force: which schedule, owner or filter, until when, why, by whom."""
    with errors_as_lines():
        rows = _own(dsn, read_only=True).reads.silences()
        emit(rows, as_json, lambda: emit_table(
            rows, ["name", "owner", "filter", "until", "reason", "created_by", "starts_at"],
            title=f"{len(rows)} silences"))


@sinks_app.command("add")
def sinks_add(
    name: SinkArg,
    kind: Annotated[str, typer.Option("--kind", help="webhook, slack, pagerduty, alertmanager or notify.")],
    route: Annotated[str, typer.Option("--route", help=(
        "Which alerts: all, owner=NAME, queue=NAME, tag=NAME, severity=warning (all) or severity=critical "
        "(failing, missed, broken)."))] = "all",
    url: Annotated[str | None, typer.Option("--url", help=(
        "The http(s) URL, stored in the database (shown as scheme and host only). For a secret URL "
        "(Slack, most webhooks) prefer --url-env or --url-file."))] = None,
    url_env: Annotated[str | None, typer.Option("--url-env", metavar="VAR", help=(
        "Read the URL from this environment variable of the runtime, when delivering."))] = None,
    url_file: Annotated[str | None, typer.Option("--url-file", metavar="PATH", help=(
        "Read the URL from this file (one line, not readable by every user) on the runtime's host."))] = None,
    key_env: Annotated[str | None, typer.Option("--key-env", metavar="VAR", help=(
        "The webhook's HMAC-SHA256 key or PagerDuty's routing key: this environment variable."))] = None,
    key_file: Annotated[str | None, typer.Option("--key-file", metavar="PATH", help=(
        "The webhook's HMAC-SHA256 key or PagerDuty's routing key: this file (one line, private)."))] = None,
    channel: Annotated[str | None, typer.Option("--channel", help="notify: the channel to NOTIFY.")] = None,
    dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False,
) -> None:
    """Add a sink; nothing is stored when any option is refused. Audited."""
    with errors_as_lines():
        s = _own(dsn, operator).actions.add_alert_sink(name, kind, route=route, url=url, url_env=url_env,
                                                        url_file=url_file, key_env=key_env, key_file=key_file,
                                                        channel=channel)
        emit(s, as_json, lambda: say(f"added {s.kind} sink {s.name}: {s.route}, to {s.target}"))


@sinks_app.command("list")
def sinks_list(dsn: DsnOpt = None, as_json: JsonOpt = False) -> None:
    """The sinks, their routing and where they send (secrets masked), with the deliveries
    each still has to make."""
    with errors_as_lines():
        client = _own(dsn, read_only=True)
        sinks = client.reads.alert_sinks()
        waiting = {b.sink: b for b in client.reads.alert_backlog()}
        rows = [{"name": s.name, "kind": s.kind, "route": s.route, "target": s.target, "key_from": s.key_from,
                 "pending": waiting[s.name].pending if s.name in waiting else 0,
                 "failing": waiting[s.name].failing if s.name in waiting else 0,
                 "last_error": waiting[s.name].last_error if s.name in waiting else None} for s in sinks]
        emit(rows, as_json, lambda: emit_table(
            rows, ["name", "kind", "route", "target", "key_from", "pending", "failing", "last_error"],
            title=f"{len(rows)} sinks"))


@sinks_app.command("remove")
def sinks_remove(name: SinkArg, dsn: DsnOpt = None, operator: OperatorOpt = None, as_json: JsonOpt = False) -> None:
    """Remove a sink, with the deliveries it still had to make. Audited."""
    with errors_as_lines():
        s = _own(dsn, operator).actions.remove_alert_sink(name)
        emit(s, as_json, lambda: say(f"removed {s.kind} sink {s.name}"))
