"""`!`: alerts that reach a person (S63, S70, S71), as `awa-tui alerts list --state open` and
`alerts silences` show them. Above, the open alerts (a schedule's, or the fleet's: no
leader, a stalled leader), one row per sink with its delivery: delivered, pending, failing
(tries, next try, last error) or silenced; the selected row in full under it. Below, the
silences in force. `s` silences the selected alert's schedule, `S` its owner, until a time
with a reason (one dialog, audited as `alerts silence` is). Sinks' URLs and keys are never
read here: the deliveries name a sink by its name only."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import DataTable, Footer, Header, Static

from awa_tui.engine.alerts.models import FLEET_WORDS, AlertDelivery, Silence
from awa_tui.printable import printable_row
from awa_tui.tui import actions, operations
from awa_tui.tui.formatting import relative, short_utc, utc
from awa_tui.tui.messages import AlertsDataRequested, request_operation, usable_reply
from awa_tui.tui.screens.live import LiveScreen
from awa_tui.tui.widgets.keyed_table import Column, KeyedTable, cell

if TYPE_CHECKING:
    pass

# The open alerts a read brings at most (one row per sink): past it, the title says so.
LIMIT = 1000
FLEET = "(fleet)"  # what `alerts list` shows for an alert about the fleet, which names no schedule

ALERT_COLUMNS = (
    Column("name", "SCHEDULE", 40),
    Column("health", "NOW (WAS)", 22),
    Column("since", "SINCE (UTC)", 14),
    Column("sink", "SINK", 16),
    Column("delivery", "DELIVERY", 10),
    # At 120 columns the last error stays (the tries and the next try are in the line under).
    Column("tries", "TRIES", 5, priority=3),
    Column("next", "NEXT TRY", 10, priority=2),
    Column("error", "LAST ERROR", 40, priority=1),
    Column("reason", "WHY", 60, priority=4),
)
SILENCE_COLUMNS = (
    Column("covers", "COVERS", 40),
    Column("until", "UNTIL (UTC)", 20),
    Column("left", "LEFT", 9, priority=2),
    Column("reason", "REASON", 50),
    Column("by", "BY", 18, priority=1),
    Column("since", "SINCE (UTC)", 20, priority=3),
)
DELIVERY_STYLES = {"failing": "bold red", "pending": "yellow", "silenced": "dim", "unrouted": "bold yellow"}


@dataclass(frozen=True)
class AlertsView:
    """One read of the screen: the open alerts' deliveries, the silences in force, at `now`."""

    now: datetime
    alerts: list[AlertDelivery]
    silences: list[Silence]


def _health(alert: AlertDelivery) -> str:
    if alert.fleet:
        return FLEET_WORDS.get(alert.to_health, alert.to_health)
    return f"{alert.to_health} (was {alert.from_health or 'new'})"


def _alert_row(alert: AlertDelivery, now: datetime) -> tuple[str, tuple[Text, ...]]:
    shown: AlertDelivery = printable_row(alert)  # every database string escaped; the screen keeps the real one
    failing = alert.state == "failing"
    return (f"{alert.id}/{alert.sink}", (
        cell(FLEET if alert.fleet else shown.name), cell(_health(shown), "bold"),
        cell(short_utc(alert.at)), cell(shown.sink or "-"),
        cell(alert.state, DELIVERY_STYLES.get(alert.state, "")), cell(alert.attempts if alert.attempts else "-"),
        cell(relative(alert.next_attempt_at, now) if failing else "-"),
        cell(shown.last_error if failing else None), cell(shown.reason),
    ))


def _silence_row(silence: Silence, now: datetime) -> tuple[str, tuple[Text, ...]]:
    shown: Silence = printable_row(silence)
    return (str(silence.id), (
        cell(shown.target), cell(utc(silence.until)), cell(relative(silence.until, now)), cell(shown.reason),
        cell(shown.created_by), cell(utc(silence.starts_at)),
    ))


def delivery_words(alert: AlertDelivery, now: datetime) -> str:
    """The selected delivery in full, one line (escaped): what the cut cells hold."""
    a: AlertDelivery = printable_row(alert)
    what = f"the fleet: {_health(a)}" if a.fleet else f"{a.name} {_health(a)}"
    line = f"{what} since {utc(a.at)} ({relative(a.at, now)})" + (f": {a.reason}" if a.reason else "")
    if not a.sink:
        return f"{line} · no sink takes it (unrouted)"
    if a.state == "failing":
        tries = f"{a.attempts} attempt{'s' if a.attempts != 1 else ''}"
        return (f"{line} · sink {a.sink}: FAILING after {tries}, next try {relative(a.next_attempt_at, now)}: "
                f"{a.last_error or '?'}")
    if a.state == "delivered":
        return f"{line} · sink {a.sink}: delivered {utc(a.delivered_at)}"
    return f"{line} · sink {a.sink}: {a.state}"


class AlertsScreen(LiveScreen):
    BINDINGS = actions.bindings("alerts")
    CONTEXT = "alerts"
    FOCUS = "#alerts-table"

    def __init__(self, interval: float = 2.0) -> None:
        super().__init__(interval)
        self.data: AlertsView | None = None

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static(Text("Alerts: loading…"), classes="panel-title", id="alerts-title")
        yield KeyedTable(ALERT_COLUMNS, id="alerts-table")
        yield Static(Text(""), classes="row-summary", id="alerts-summary")
        yield Static(Text("Silences in force: loading…"), classes="panel-title", id="silences-title")
        yield KeyedTable(SILENCE_COLUMNS, id="silences-table")
        yield Footer(compact=True)

    def action_reload(self) -> None:
        self.loading = True
        self.post_message(AlertsDataRequested(self.show, LIMIT))

    def show(self, data: AlertsView | None, error: str | None) -> None:
        self.loading = False
        if not usable_reply(self, "#alerts-title", error, "Alerts"):
            return
        assert data is not None
        self.data = data
        alerts, now = data.alerts, data.now
        failing = sum(a.state == "failing" for a in alerts)
        count = len({a.id for a in alerts})
        title = Text.assemble(("Alerts ", "bold"), f"{count} open" + (" (the first ones: more exist)"
                                                                       if len(alerts) >= LIMIT else ""))
        if failing:
            title.append(" · ")
            title.append(f"{failing} deliver{'y' if failing == 1 else 'ies'} failing", style="bold red")
        title.append(" · s: silence its schedule, S: its owner · tab: the silences")
        self.query_one("#alerts-title", Static).update(title)
        self.query_one("#alerts-table", KeyedTable).sync([_alert_row(a, now) for a in alerts])
        self.query_one("#silences-title", Static).update(
            Text.assemble(("Silences in force ", "bold"), str(len(data.silences))))
        self.query_one("#silences-table", KeyedTable).sync([_silence_row(s, now) for s in data.silences])
        self._summary()

    def selected(self) -> AlertDelivery | None:
        if self.data is None:
            return None
        key = self.query_one("#alerts-table", KeyedTable).selected_key
        return next((a for a in self.data.alerts if f"{a.id}/{a.sink}" == key), None)

    @on(DataTable.RowHighlighted, "#alerts-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._summary()

    def _summary(self) -> None:
        alert = self.selected()
        text = ("no open alert: every schedule and the fleet are healthy" if self.data is not None and
                not self.data.alerts else "" if alert is None or self.data is None
                else delivery_words(alert, self.data.now))
        self.query_one("#alerts-summary", Static).update(Text(text))

    def _act(self, by_owner: bool) -> None:
        alert = self.selected()
        if alert is None:
            if self.data is not None:
                self.notify("no open alert is selected", markup=False, timeout=3)
            return
        build = operations.silence_owner if by_owner else operations.silence_schedule
        request_operation(self, lambda: build(alert), self.action_reload)

    def action_silence_schedule(self) -> None:
        self._act(by_owner=False)

    def action_silence_owner(self) -> None:
        self._act(by_owner=True)

    def action_close(self) -> None:
        self.dismiss()
