"""S63, S70, S71 in the console: the alerts screen (`!`) shows what `awa-tui alerts list
--state open` and `alerts silences` show, and `s` / `S` silence the selected alert's schedule
or owner through the engine's `alerts silence`, audited as it is.

Real parts: the seeded database (tui_seed.py, clock NOW = 12:00:30), two webhook sinks, one
at a real local HTTP receiver (delivered) and one at a closed local port (refused: failing),
health and fleet transitions written as the leader's passes write them, and one delivery
round at NOW. The expected rows are written by hand.

Update the snapshot after an intended change:
pytest tests/tui/test_alerts_console.py --snapshot-update
"""

from __future__ import annotations

import html
import socket
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from helpers import drained
from http_receiver import Receiver
from lease_seed import leader_lock_held
from tui_helpers import notes, ready, screen_text, until
from tui_seed import NOW, RUNTIMES, seed, t

from awa_tui.engine.alerts.deliver import Deliverer
from awa_tui.engine.client import Client
from awa_tui.tui.screens.alerts import AlertsScreen
from awa_tui.tui.screens.confirm import ConfirmScreen
from awa_tui.tui.widgets.keyed_table import KeyedTable

# The sinks' URLs hold their secrets in the path: the screen never shows either.
HOOK_PATH = "/hooks/T0KEN-s3cret"
PAGER_PATH = "/pager/k3y-s3cret"
# A closed local port that stays the same from run to run (the snapshot shows it, masked
# URL and all): the discard port, which nothing on the test host listens on (checked first).
PAGER_PORT = 9
LATE = "the fire due at 2025-03-08 07:30:00Z was not enqueued within 60 s\x1b[2J"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def seeded(dsn: str, conn: psycopg.Connection[Any], receiver: Receiver,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The console's seed, plus: sinks `hook` (the receiver) and `pager` (a closed port);
    reports.hourly late then recovered (not open); the fleet without a leader, metrics.rollup
    failing and billing.nightly-invoice late (its reason holding a control sequence), open;
    billing's alerts silenced by owner; one delivery round at NOW."""
    seed(conn)
    monkeypatch.setenv("AWA_TEST_HOOK_KEY", "s3cret-hmac-key")  # the runtime's environment holds the signing key
    with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
        probe.connect(("127.0.0.1", PAGER_PORT))
    with Client(dsn, operator="carol@ops") as client:
        client.actions.add_alert_sink("hook", "webhook", url=f"{receiver.url}{HOOK_PATH}",
                                      key_env="AWA_TEST_HOOK_KEY")
        client.actions.add_alert_sink("pager", "webhook", url=f"http://127.0.0.1:{PAGER_PORT}{PAGER_PATH}",
                                      key_env="AWA_TEST_HOOK_KEY")
        for name, was, now, why, at in (
                ("reports.hourly", "ok", "late", "slow", t("11:00:00")),
                ("reports.hourly", "late", "ok", "on time again", t("11:30:00"))):
            conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health, reason) "
                         "VALUES (%s, %s, %s, %s, %s)", (name, at, was, now, why))
        conn.execute("INSERT INTO awa.fleet_transitions (at, from_state, to_state, reason) "
                     "VALUES (%s, 'ok', 'no_leader', 'nobody has led for 45 s')", (t("11:57:00"),))
        for name, why, health, at in (("metrics.rollup", "the last job failed", "failing", t("11:58:00")),
                                      ("billing.nightly-invoice", LATE, "late", t("11:59:00"))):
            conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health, reason) "
                         "VALUES (%s, %s, 'ok', %s, %s)", (name, at, health, why))
        client.actions.silence_alerts(None, t("14:00:00"), "quarter close", owner="billing", now=t("11:59:30"))
        Deliverer().round(conn, NOW)
    with leader_lock_held(dsn, RUNTIMES[0]["instance_id"], NOW):
        yield dsn


def rows(screen: AlertsScreen, table: str) -> list[list[str]]:
    shown = screen.query_one(f"#{table}", KeyedTable)
    return [[str(c) for c in shown.get_row(row.key)] for row in shown.ordered_rows]


async def open_alerts(pilot: Any, app: Any) -> AlertsScreen:
    await ready(pilot, app)
    await pilot.press("exclamation_mark")
    await until(pilot, lambda: isinstance(app.screen, AlertsScreen) and app.screen.data is not None,
                what="the alerts screen with its data")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, AlertsScreen)
    return screen


REFUSED = f"sink pager (http://127.0.0.1:{PAGER_PORT}/…): cannot connect: Connection refused"


async def test_the_screen_lists_the_open_alerts_each_sinks_delivery_and_the_silences(
        console_factory: Any, conn: psycopg.Connection[Any], receiver: Receiver) -> None:
    app = console_factory()
    async with app.run_test(size=(260, 40)) as pilot:
        screen = await open_alerts(pilot, app)
        assert rows(screen, "alerts-table") == [
            ["billing.nightly-invoice", "late (was ok)", "03-08 11:59:00", "hook", "silenced", "-", "-", "-",
             "the fire due at 2025-03-08 07:30:00Z was not enqueued within 60 s\\x1b[2J"],
            ["billing.nightly-invoice", "late (was ok)", "03-08 11:59:00", "pager", "silenced", "-", "-", "-",
             "the fire due at 2025-03-08 07:30:00Z was not enqueued within 60 s\\x1b[2J"],
            ["metrics.rollup", "failing (was ok)", "03-08 11:58:00", "hook", "delivered", "1", "-", "-",
             "the last job failed"],
            ["metrics.rollup", "failing (was ok)", "03-08 11:58:00", "pager", "failing", "1", "in 5s", REFUSED,
             "the last job failed"],
            ["(fleet)", "no leader", "03-08 11:57:00", "hook", "delivered", "1", "-", "-",
             "nobody has led for 45 s"],
            ["(fleet)", "no leader", "03-08 11:57:00", "pager", "failing", "1", "in 5s", REFUSED,
             "nobody has led for 45 s"],
        ]
        assert rows(screen, "silences-table") == [
            ["owner billing", "2025-03-08 14:00:00Z", "in 1h59m", "quarter close", "carol@ops",
             "2025-03-08 11:59:30Z"]]
        shown = html.unescape(screen_text(app))
        assert "Alerts 3 open · 2 deliveries failing · s: silence its schedule, S: its owner" in shown
        assert "Silences in force 1" in shown
        # The first row in full under the table; the sinks' secrets nowhere, no raw escape byte.
        assert ("billing.nightly-invoice late (was ok) since 2025-03-08 11:59:00Z (1m ago): the fire due at "
                "2025-03-08 07:30:00Z was not enqueued within 60 s\\x1b[2J · sink hook: silenced") in shown
        await pilot.press("j", "j", "j")
        await pilot.pause()
        assert (f"metrics.rollup failing (was ok) since 2025-03-08 11:58:00Z (2m ago): the last job failed · "
                f"sink pager: FAILING after 1 attempt, next try in 5s: {REFUSED}") in html.unescape(screen_text(app))
        for secret in (HOOK_PATH, PAGER_PATH, "s3cret", receiver.url):
            assert secret not in html.unescape(screen_text(app))
    # The receiver got what the screen says was delivered: the fleet's and metrics.rollup's.
    assert [[(a["schedule"], a["health"]) for a in body["alerts"]] for body in receiver.bodies()] == [
        [("reports.hourly", "late"), ("reports.hourly", "ok"), (None, "no_leader"), ("metrics.rollup", "failing")]]


async def test_s_silences_the_selected_alerts_schedule_until_a_time_with_a_reason_audited(
        console_factory: Any, conn: psycopg.Connection[Any]) -> None:
    app = console_factory()
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await open_alerts(pilot, app)
        await pilot.press("j", "j")  # metrics.rollup, its hook delivery
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the silence dialog")
        dialog = app.screen
        assert dialog.heading == "Silence alerts?"
        # Both values are required: confirming an empty dialog says so under each field.
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert str(dialog.query_one("#choice-until-note").render()) == "until: required"
        assert str(dialog.query_one("#choice-reason-note").render()) == "reason: required"
        await pilot.press(*"2h")
        await pilot.press("tab", *"db failover")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, AlertsScreen), what="back on the alerts screen")
        await drained(pilot, app)
        await until(pilot, lambda: len(rows(screen, "silences-table")) == 2, what="the new silence listed")
    silence = conn.execute("SELECT name, owner, filter, until - starts_at AS span, reason, created_by "
                           "FROM awa.alert_silences WHERE name IS NOT NULL").fetchall()
    assert [tuple(r.values()) for r in silence] == [
        ("metrics.rollup", None, None, timedelta(hours=2), "db failover", "alice@ops")]
    audit = conn.execute("SELECT operator, action, target, after ->> 'reason' AS reason, "
                         "(after ->> 'until')::timestamptz - (after ->> 'starts_at')::timestamptz AS span "
                         "FROM awa.audit_log WHERE action = 'alert_silence' ORDER BY id").fetchall()
    assert [tuple(r.values()) for r in audit] == [
        ("carol@ops", "alert_silence", "owner:billing", "quarter close", timedelta(hours=2, seconds=30)),
        ("alice@ops", "alert_silence", "metrics.rollup", "db failover", timedelta(hours=2))]
    # The waiting (failing) delivery of metrics.rollup was silenced with it; the delivered one stays.
    states = conn.execute("SELECT d.sink, d.state FROM awa.alert_deliveries d JOIN awa.alert_outbox o "
                          "ON o.id = d.outbox_id WHERE o.name = 'metrics.rollup' ORDER BY d.sink").fetchall()
    assert [(r["sink"], r["state"]) for r in states] == [("hook", "delivered"), ("pager", "silenced")]


async def test_capital_s_silences_the_owner_and_a_fleet_alert_has_nothing_to_silence(
        console_factory: Any, conn: psycopg.Connection[Any]) -> None:
    app = console_factory()
    async with app.run_test(size=(160, 40)) as pilot:
        await open_alerts(pilot, app)
        await pilot.press("G")  # the fleet's pager delivery
        await pilot.press("s")
        await drained(pilot, app)
        assert isinstance(app.screen, AlertsScreen)
        assert notes(app) == ["a fleet alert (no leader, a stalled leader) names no schedule: it cannot be silenced"]
        await pilot.press("g", "j", "j", "S")  # metrics.rollup, owner platform
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the silence dialog")
        await pilot.press(*"1d", "tab", *"platform upgrade", "enter")
        await until(pilot, lambda: isinstance(app.screen, AlertsScreen), what="back on the alerts screen")
        await drained(pilot, app)
    rows_ = conn.execute("SELECT owner, reason, created_by, until - starts_at AS span FROM awa.alert_silences "
                         "WHERE owner = 'platform'").fetchall()
    assert [tuple(r.values()) for r in rows_] == [("platform", "platform upgrade", "alice@ops", timedelta(days=1))]
    assert conn.execute("SELECT target FROM awa.audit_log WHERE action = 'alert_silence' ORDER BY id DESC LIMIT 1"
                        ).fetchone()["target"] == "owner:platform"


@pytest.mark.console(read_only=True)
async def test_read_only_the_silence_is_refused_in_one_line(console: Any, conn: psycopg.Connection[Any]) -> None:
    app, pilot = console
    await pilot.press("exclamation_mark")
    await until(pilot, lambda: isinstance(app.screen, AlertsScreen) and app.screen.data is not None,
                what="the alerts screen (reading is allowed)")
    app.clear_notifications()
    await pilot.press("s")
    await drained(pilot, app)
    assert isinstance(app.screen, AlertsScreen)
    assert notes(app) == ["read-only console (--read-only): silence, silence owner are disabled here"]
    assert conn.execute("SELECT count(*) AS n FROM awa.alert_silences").fetchone()["n"] == 1  # the seed's only


def test_snapshot_alerts_screen(snap_compare: Any, console_factory: Any) -> None:
    async def run_before(pilot: Any) -> None:
        app = pilot.app
        await open_alerts(pilot, app)
        await pilot.press("j", "j", "j")  # metrics.rollup's failing delivery, in full under the table

    assert snap_compare(console_factory(), terminal_size=(160, 36), run_before=run_before)

