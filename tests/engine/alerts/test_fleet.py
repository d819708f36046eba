"""S70 on real runtimes and a real receiver: nobody leading, and a leader whose passes
stopped, each reach a person once (a follower delivers while nobody leads) and are
resolved when it ends; PagerDuty's trigger and resolve share one dedup key."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from helpers import wait_for
from http_receiver import Receiver

from awa_tui.engine.alerts import fleet
from awa_tui.engine.client import Client
from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.read import views
from awa_tui.engine.runtime.loops import Runtime

KEY = "k3y"
FAST = {"leader_lease": timedelta(seconds=1), "snapshot_interval": timedelta(seconds=1),
        "fleet_alert_grace": timedelta(seconds=4), "fleet_stall_after": timedelta(seconds=2)}


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    monkeypatch.setenv("AWA_TEST_HOOK_KEY", KEY)
    monkeypatch.setenv("AWA_TEST_PD_KEY", "pd-routing")
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def clients(dsn: str) -> Iterator[list[Client]]:
    made: list[Client] = []
    yield made
    for c in made:
        c.close()


def client(dsn: str, made: list[Client], **kwargs: Any) -> Client:
    c = Client(dsn, operator="tester@test", **{**FAST, **kwargs})
    c.periodic("tick", "* * * * * *", "test.job")
    made.append(c)
    return c


def loops(c: Client) -> Runtime:
    assert c.runtime.loops is not None
    return c.runtime.loops


def by_path(receiver: Receiver, path: str) -> list[Any]:
    return [r.json for r in list(receiver.requests) if r.path == path]


def fleet_hooks(receiver: Receiver) -> list[Any]:
    """The fleet's alerts the webhook received, in order. The webhook takes every alert, and
    a schedule held back by the fault turns late: its alert arrives there too."""
    return [a for body in by_path(receiver, "/hook") for a in body["alerts"] if a["scope"] == "fleet"]


def fleet_pages(receiver: Receiver) -> list[Any]:
    """The fleet's PagerDuty events, in order (a schedule's alerts have keys of their own)."""
    return [e for e in by_path(receiver, "/pd") if e["dedup_key"].startswith("awa-fleet/")]


def transitions(conn: psycopg.Connection[Any]) -> list[tuple[str, str]]:
    return [(r["from_state"], r["to_state"]) for r in conn.execute(
        "SELECT from_state, to_state FROM awa.fleet_transitions ORDER BY id").fetchall()]


def add_sinks(c: Client, receiver: Receiver) -> None:
    c.actions.add_alert_sink("hook", "webhook", url=f"{receiver.url}/hook", key_env="AWA_TEST_HOOK_KEY")
    c.actions.add_alert_sink("pd", "pagerduty", url=f"{receiver.url}/pd", key_env="AWA_TEST_PD_KEY",
                             route="severity=critical")


def test_s70_nobody_leading_is_alerted_once_by_a_follower_and_resolved_when_a_leader_returns(
        dsn: str, conn: psycopg.Connection[Any], receiver: Receiver, clients: list[Client]) -> None:
    leader = client(dsn, clients)
    leader.migrate()
    add_sinks(leader, receiver)
    leader.start(run_worker=False)
    wait_for(lambda: leader.is_leader, timeout=30, what="leadership")
    follower = client(dsn, clients)
    follower.start(run_worker=False, lead=False)  # may never lead: only its alerts loop watches
    watch = loops(follower).alerts
    wait_for(lambda: watch.fleet is not None and watch.fleet.led, timeout=30, what="the follower seeing a leader")
    # Control: with a leader, the fleet is ok and nothing is recorded or sent.
    assert fleet.record(conn, fleet.FleetThresholds(), None)[1] is None
    assert transitions(conn) == [] and receiver.requests == []

    leader.close()  # the only runtime that may lead stops: nobody leads
    assert not views.leadership(conn).held  # the fault happened
    wait_for(lambda: by_path(receiver, "/hook") and by_path(receiver, "/pd"), timeout=30,
             what="the follower delivering 'no leader'")
    [hook] = by_path(receiver, "/hook")
    [alert] = hook["alerts"]
    [(tid,)] = [(r["id"],) for r in conn.execute("SELECT id FROM awa.fleet_transitions").fetchall()]
    assert (alert["scope"], alert["schedule"], alert["status"], alert["health"], alert["previous_health"],
            alert["severity"], alert["dedupe_key"]) == ("fleet", None, "firing", "no_leader", "ok", "critical",
                                                        f"awa-fleet/{tid}")
    assert alert["reason"].startswith("no runtime holds the leader lock; the last lease ended at ")
    assert hook["summary"].startswith("awa-tui fleet: no leader: no runtime holds the leader lock")
    [pd] = by_path(receiver, "/pd")
    assert (pd["event_action"], pd["dedup_key"], pd["payload"]["severity"], pd["payload"]["component"]) == (
        "trigger", "awa-fleet/no_leader", "critical", "awa-tui fleet")
    holder = conn.execute("SELECT instance_id FROM awa.alert_deliverer").fetchone()["instance_id"]
    assert holder == follower.identity.instance_id  # nobody leading, the follower delivered
    # Once, not every watch: three more watches record and send nothing more.
    seen = watch.watches
    wait_for(lambda: watch.watches >= seen + 3, timeout=30, what="three more watches")
    assert transitions(conn) == [("ok", "no_leader")] and len(receiver.requests) == 2
    report = follower.reads.check()
    [open_alert] = [p for p in report.fleet if p.code == "fleet_alert"]
    assert open_alert.message.startswith("fleet alert open since ")
    assert ": no leader: no runtime holds the leader lock; the last lease ended at " in open_alert.message
    assert open_alert.message.endswith("; sent to hook, pd")

    again = client(dsn, clients)  # leadership returns
    again.start(run_worker=False)
    wait_for(lambda: len(fleet_hooks(receiver)) == 2 and len(fleet_pages(receiver)) == 2, timeout=30,
             what="the recovery delivered")
    resolved = fleet_hooks(receiver)[1]
    assert (resolved["status"], resolved["health"], resolved["previous_health"]) == ("resolved", "ok", "no_leader")
    assert fleet_pages(receiver)[1] == {"routing_key": "pd-routing", "event_action": "resolve",
                                        "dedup_key": "awa-fleet/no_leader"}
    assert transitions(conn) == [("ok", "no_leader"), ("no_leader", "ok")]
    assert not [p for p in again.reads.check().fleet if p.code == "fleet_alert"]


def test_s70_a_leader_whose_passes_stop_is_alerted_stalled_and_resolved(
        dsn: str, conn: psycopg.Connection[Any], receiver: Receiver, clients: list[Client]) -> None:
    leader = client(dsn, clients, lock_timeout=timedelta(milliseconds=200))
    leader.migrate()
    add_sinks(leader, receiver)
    leader.start(run_worker=False)
    wait_for(lambda: leader.is_leader, timeout=30, what="leadership")
    watch = loops(leader).alerts
    wait_for(lambda: watch.fleet is not None and watch.fleet.led and watch.fleet.state == "ok", timeout=30,
             what="the leader judging itself ok")
    assert transitions(conn) == [] and receiver.requests == []  # control: passing, nothing sent

    with psycopg.connect(dsn, autocommit=True) as holder:
        holder.execute("BEGIN")
        holder.execute("LOCK TABLE awa.cron_jobs IN ACCESS EXCLUSIVE MODE")  # every pass waits, times out
        wait_for(lambda: fleet_hooks(receiver), timeout=30, what="'leader stalled' delivered")
        passes = leader.runtime.recent_passes.latest()
        assert passes[0].timed_out  # the fault happened: the passes time out on our lock
        assert holder.info.backend_pid in {b.pid for p in passes for b in p.blockers}
        holder.execute("ROLLBACK")
    [alert] = fleet_hooks(receiver)
    assert (alert["scope"], alert["status"], alert["health"], alert["severity"]) == (
        "fleet", "firing", "stalled", "critical")
    assert alert["reason"].startswith("the leader ") and " renews its lease but its last completed pass was at " \
        in alert["reason"]
    wait_for(lambda: len(fleet_hooks(receiver)) == 2 and len(fleet_pages(receiver)) == 2, timeout=30,
             what="the recovery delivered")
    assert [e["event_action"] for e in fleet_pages(receiver)] == ["trigger", "resolve"]
    assert {e["dedup_key"] for e in fleet_pages(receiver)} == {"awa-fleet/stalled"}
    assert fleet_hooks(receiver)[1]["status"] == "resolved"
    assert transitions(conn) == [("ok", "stalled"), ("stalled", "ok")]
    # Whatever else reached the webhook is the held-back schedule's own alert, none other.
    others = [a for body in by_path(receiver, "/hook") for a in body["alerts"] if a["scope"] != "fleet"]
    assert {(a["scope"], a["schedule"]) for a in others} <= {("schedule", "tick")}


def test_s70_alertmanager_gets_the_fleet_alert_firing_then_ended_and_slack_its_line(
        client: Client, conn: psycopg.Connection[Any], receiver: Receiver) -> None:
    from engine_helpers import at

    from awa_tui.engine.alerts.deliver import Deliverer

    client.actions.add_alert_sink("am", "alertmanager", url=f"{receiver.url}/am")
    client.actions.add_alert_sink("chat", "slack", url=f"{receiver.url}/slack")
    client.actions.add_alert_sink("billing", "slack", url=f"{receiver.url}/billing", route="severity=warning")
    conn.execute("INSERT INTO awa.fleet_transitions (at, from_state, to_state, reason) "
                 "VALUES ('2025-01-01T00:10:00Z', 'ok', 'no_leader', 'nobody leads')")
    Deliverer().round(conn, at("2025-01-01T00:10:01"))
    conn.execute("INSERT INTO awa.fleet_transitions (at, from_state, to_state, reason) "
                 "VALUES ('2025-01-01T00:11:00Z', 'no_leader', 'ok', 'app-1 pid 7 leads (term 2) and passes')")
    Deliverer().round(conn, at("2025-01-01T00:11:01"))
    labels = {"alertname": "AwaNoLeader", "severity": "critical", "source": "awa-tui"}
    assert by_path(receiver, "/am/api/v2/alerts") == [
        [{"labels": labels, "annotations": {"summary": "awa-tui fleet: no leader: nobody leads",
                                            "description": "nobody leads"},
          "startsAt": "2025-01-01T00:10:00Z", "endsAt": "2025-01-08T00:10:00Z"}],
        [{"labels": labels, "annotations": {
            "summary": "awa-tui fleet recovered: app-1 pid 7 leads (term 2) and passes (was no leader)",
            "description": "app-1 pid 7 leads (term 2) and passes"},
          "startsAt": "2025-01-01T00:10:59Z", "endsAt": "2025-01-01T00:11:00Z"}]]
    assert by_path(receiver, "/slack") == [{"text": "awa-tui: awa-tui fleet: no leader: nobody leads"},
                                           {"text": "awa-tui: awa-tui fleet recovered: app-1 pid 7 leads (term 2) "
                                                    "and passes (was no leader)"}]
    assert len(by_path(receiver, "/billing")) == 2  # a severity route takes the fleet's alerts too
    assert client.reads.alerts(state="open", sink="am") == []  # recovered: nothing open
    rows = client.reads.alerts(sink="am")
    assert [(r.fleet, r.name, r.to_health, r.open, r.state) for r in rows] == [
        (True, "fleet", "ok", False, "delivered"), (True, "fleet", "no_leader", False, "delivered")]


def test_s70_a_frozen_leader_is_alerted_by_a_follower_after_the_deliverers_lease_and_resolved_when_it_wakes(
        dsn: str, conn: psycopg.Connection[Any], receiver: Receiver, clients: list[Client], tmp_path: Any) -> None:
    import os
    import signal

    from reliability.harness import current_leader
    from reliability.harness import fleet as runtimes

    follower = client(dsn, clients)
    add_sinks(follower, receiver)
    with runtimes(dsn, tmp_path, count=3) as spawned:
        proc = spawned.spawn(args=["--leader-lease", "2"])
        wait_for(lambda: (lead := current_leader(conn)) is not None and lead.os_pid == proc.pid, timeout=60,
                 what="the subprocess leading")
        wait_for(lambda: conn.execute("SELECT instance_id IS NOT NULL AND expires_at > now() AS held "
                                      "FROM awa.alert_deliverer").fetchone()["held"], timeout=30,
                 what="the leader holding the deliverer's lease")
        follower.start(run_worker=False, lead=False)
        watch = loops(follower).alerts
        wait_for(lambda: watch.fleet is not None and watch.fleet.led, timeout=30, what="the follower seeing it lead")
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            wait_for(lambda: fleet_hooks(receiver), timeout=60, what="'leader stalled' delivered")
            lead = views.leadership(conn)
            assert lead.held and lead.stalled  # the fault: the frozen session keeps the lock, its lease ran out
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        [alert] = fleet_hooks(receiver)
        assert (alert["health"], alert["status"]) == ("stalled", "firing")
        assert " holds the leader lock but its lease expired at " in alert["reason"]
        holder = conn.execute("SELECT instance_id FROM awa.alert_deliverer").fetchone()["instance_id"]
        assert holder == follower.identity.instance_id  # took the frozen leader's lease once it ran out
        wait_for(lambda: len(fleet_hooks(receiver)) == 2 and len(fleet_pages(receiver)) == 2, timeout=60,
                 what="the recovery delivered")
        assert [e["event_action"] for e in fleet_pages(receiver)] == ["trigger", "resolve"]
        assert {e["dedup_key"] for e in fleet_pages(receiver)} == {"awa-fleet/stalled"}
        assert transitions(conn) == [("ok", "stalled"), ("stalled", "ok")]
        assert proc.stop() == 0


def test_s70_one_runtime_delivers_at_a_time_and_a_holder_that_stops_lets_the_next_take_over(
        dsn: str, conn: psycopg.Connection[Any]) -> None:
    import uuid

    from awa_tui.engine.runtime.alerting import AlertLoop

    first, second, leader = (AlertLoop(dsn, f"test-{i}", instance_id=uuid.uuid4()) for i in range(3))
    try:
        # Nobody leads (no runtime at all): both followers may deliver, one holds the lease.
        a, b = first.step(leads=False), second.step(leads=False)
        assert a is not None and b is not None and (a.held, b.held) == (True, False)
        assert first.fleet is not None and not first.fleet.led
        c = leader.step(leads=True)  # a leader waits for the lease too: never two deliverers
        assert c is not None and not c.held
        holder = lambda: conn.execute("SELECT instance_id FROM awa.alert_deliverer").fetchone()["instance_id"]  # noqa: E731
        assert holder() == first.instance_id
        first.close()  # a holder that stops lets go at once
        c = leader.step(leads=True)
        assert c is not None and c.held and holder() == leader.instance_id
        b = second.step(leads=False)
        assert b is not None and not b.held
    finally:
        for loop in (first, second, leader):
            loop.close()


def test_s70_a_schema_rolled_back_below_v028_under_a_running_runtime_still_delivers_then_watches_when_back(
        dsn: str, conn: psycopg.Connection[Any], receiver: Receiver) -> None:
    import uuid

    from engine_helpers import force

    from awa_tui.engine.migrations import available, migrate, migrate_down
    from awa_tui.engine.runtime.alerting import NO_FLEET_TABLE_RECHECK_S, AlertLoop

    later = [m.version for m in available() if m.version > 27]  # the fleet tables (v028) and what follows
    assert migrate_down(dsn, 27) == later[::-1]
    force(conn, "INSERT INTO awa.alert_sinks (name, kind, url, key_ref) VALUES ('hook', 'webhook', %s, "
                "'env:AWA_TEST_HOOK_KEY')", (f"{receiver.url}/hook",))
    force(conn, "INSERT INTO awa.cron_jobs (name, cron_expr, kind) VALUES ('tick', '* * * * *', 'k')")
    conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health) "
                 "VALUES ('tick', now(), 'ok', 'failing')")
    ticks = [0.0]  # the loop's monotonic clock, moved by the test
    loop = AlertLoop(dsn, "test-rolled-back", instance_id=uuid.uuid4(), clock=lambda: ticks[0])
    try:
        done = loop.step(leads=True)
        assert done is not None and [(s.sink, s.alerts, s.delivered) for s in done.sinks] == [("hook", 1, True)]
        assert loop.fleet is None  # no fleet table: not watched (said once in the log)
        assert [a["schedule"] for b in by_path(receiver, "/hook") for a in b["alerts"]] == ["tick"]
        assert loop.step(leads=False) is None  # a follower delivers nothing there
        # Migrated forward under the same runtime: it watches again at its next look for the
        # table, not only after a restart.
        assert migrate(dsn) == later
        ticks[0] = NO_FLEET_TABLE_RECHECK_S - 0.5
        loop.step(leads=True)
        assert (loop.fleet, loop.watches) == (None, 0)  # not looked for again yet
        ticks[0] = NO_FLEET_TABLE_RECHECK_S
        loop.step(leads=True)
        assert loop.watches == 1 and loop.fleet is not None and loop.fleet.state == "ok"
    finally:
        loop.close()


@pytest.mark.parametrize(("given", "error"), [
    ({"fleet_alert_grace": timedelta(seconds=2)}, "fleet_alert_grace: from 4 s to a day, got 2 s"),
    ({"fleet_stall_after": timedelta(days=2)}, "fleet_stall_after: from 1 s to a day, got 172800 s"),
    ({"fleet_stall_after": 30}, "fleet_stall_after: from 1 s to a day, got 30"),
])
def test_a_fleet_threshold_out_of_range_is_refused_naming_the_keyword(dsn: str, given: dict[str, Any],
                                                                       error: str) -> None:
    """The same words the CLI shows for its options (test_cli_run.py), from the engine."""
    with pytest.raises(ValidationError) as raised:
        Client(dsn, **given)
    assert str(raised.value) == error
