"""S63 with real parts: a local HTTP receiver (http.server on a thread) receives what each
kind of sink sends, checked field by field against the documented schemas (the generic
webhook's in docs/alerts.md; Slack's incoming webhooks; PagerDuty's Events API v2;
Alertmanager's API v2), and a NOTIFY listener on its own connection. Delivery rounds run
with an injected `now`; the receiver going down and up again loses nothing and doubles
nothing beyond the dedupe key."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from engine_helpers import at
from health_helpers import finish, register
from http_receiver import Receiver, closed_port

from awa_tui.engine.alerts.deliver import Deliverer, DeliveryFailed
from awa_tui.engine.alerts.outbox import LEASE, claim
from awa_tui.engine.alerts.sinks import get_sink

KEY = "s3cret-hmac-key"
ROUTING_KEY = "R0UT1NGKEY0000000000000000000000"
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtime's environment holds the keys (the sinks name the variables)."""
    monkeypatch.setenv("AWA_TEST_HOOK_KEY", KEY)
    monkeypatch.setenv("AWA_TEST_PD_KEY", ROUTING_KEY)


def transition(conn: psycopg.Connection[Any], rows: list[tuple[str, str, str, str | None]], when: datetime) -> None:
    """What the leader's health pass records (the trigger under test runs as it does then)."""
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO awa.health_transitions (name, at, from_health, to_health, reason) "
                        "VALUES (%s, %s, %s, %s, %s)", [(n, when, f, t, r) for n, f, t, r in rows])


def states(conn: psycopg.Connection[Any]) -> list[tuple[str, str, int]]:
    rows = conn.execute("SELECT d.sink, d.state, d.attempts FROM awa.alert_deliveries d ORDER BY d.outbox_id, d.sink"
                        ).fetchall()
    return [(r["sink"], r["state"], r["attempts"]) for r in rows]


# --- the documented shapes, written from each service's documentation ----------------------

WEBHOOK_KEYS = {"version", "source", "sink", "group_key", "summary", "count", "firing", "resolved", "truncated",
                "alerts"}
WEBHOOK_ALERT_KEYS = {"dedupe_key", "scope", "schedule", "status", "health", "previous_health", "severity",
                      "reason", "at", "owner", "queue", "tags"}


def check_webhook(body: dict[str, Any]) -> None:
    assert set(body) == WEBHOOK_KEYS
    assert body["version"] == 1 and body["source"] == "awa-tui"
    assert body["count"] == body["firing"] + body["resolved"] == len(body["alerts"]) + body["truncated"]
    for alert in body["alerts"]:
        assert set(alert) == WEBHOOK_ALERT_KEYS
        assert alert["status"] in ("firing", "resolved") and alert["severity"] in ("warning", "critical")
        assert ISO.match(alert["at"]) and isinstance(alert["tags"], list)


def check_slack(body: dict[str, Any]) -> None:
    # Incoming webhooks: a JSON object whose `text` is the message (blocks/attachments optional).
    assert set(body) <= {"text", "blocks", "attachments", "mrkdwn", "thread_ts"} and isinstance(body["text"], str)
    assert body["text"] and not re.search(r"<(?![@#!])|(?<!&lt;)>", body["text"])


PD_SEVERITIES = {"critical", "error", "warning", "info"}


def check_pagerduty(body: dict[str, Any]) -> None:
    # Events API v2 (POST /v2/enqueue): routing_key (32 chars), event_action, dedup_key
    # (at most 255), and for a trigger a payload with summary (at most 1024), source and
    # severity; timestamp ISO 8601; component, group, class, custom_details optional.
    assert body["routing_key"] == ROUTING_KEY and len(body["routing_key"]) == 32
    assert body["event_action"] in ("trigger", "acknowledge", "resolve")
    assert 0 < len(body["dedup_key"]) <= 255
    if body["event_action"] == "trigger":
        payload = body["payload"]
        assert set(payload) <= {"summary", "source", "severity", "timestamp", "component", "group", "class",
                                "custom_details"}
        assert 0 < len(payload["summary"]) <= 1024 and payload["source"] and payload["severity"] in PD_SEVERITIES
        assert ISO.match(payload["timestamp"])
    else:
        assert set(body) == {"routing_key", "event_action", "dedup_key"}


def check_alertmanager(body: list[dict[str, Any]]) -> None:
    # API v2 postableAlerts: an array of {labels (required, string to string), annotations,
    # startsAt, endsAt (date-time), generatorURL}.
    assert isinstance(body, list) and body
    for alert in body:
        assert set(alert) <= {"labels", "annotations", "startsAt", "endsAt", "generatorURL"}
        assert alert["labels"]["alertname"] and all(isinstance(v, str) for v in alert["labels"].values())
        assert all(isinstance(v, str) for v in alert["annotations"].values())
        assert ISO.match(alert["startsAt"]) and ISO.match(alert["endsAt"]) and alert["startsAt"] < alert["endsAt"]


# --- each kind ---------------------------------------------------------------------------------

def test_s63_webhook_is_signed_json_of_the_documented_schema(
        client: Any, conn: psycopg.Connection[Any], receiver: Receiver, secrets: None) -> None:
    client.periodic("nightly", "0 2 * * *", "k", queue="reports", tags=["eu"])
    client.sync()
    client.actions.add_alert_sink("hook", "webhook", url=f"{receiver.url}/hook", key_env="AWA_TEST_HOOK_KEY")
    now = at("2025-01-01T00:10:00")
    transition(conn, [("nightly", "ok", "failing", "the last job failed")], now)
    done = Deliverer().round(conn, now)
    assert [(s.sink, s.alerts, s.messages, s.delivered) for s in done.sinks] == [("hook", 1, 1, True)]
    [request] = receiver.requests
    assert request.path == "/hook" and request.headers["content-type"] == "application/json"
    expected = "sha256=" + hmac.new(KEY.encode(), request.raw, hashlib.sha256).hexdigest()
    assert request.headers["x-awa-signature-256"] == expected
    body = request.json
    check_webhook(body)
    tid = conn.execute("SELECT id FROM awa.health_transitions").fetchone()["id"]
    oid = conn.execute("SELECT id FROM awa.alert_outbox").fetchone()["id"]
    assert body == {
        "version": 1, "source": "awa-tui", "sink": "hook", "group_key": f"awa/hook/{oid}-{oid}/1",
        "summary": "schedule nightly is failing: the last job failed", "count": 1, "firing": 1, "resolved": 0,
        "truncated": 0,
        "alerts": [{"dedupe_key": f"awa/nightly/{tid}", "scope": "schedule", "schedule": "nightly", "status": "firing",
                    "health": "failing", "previous_health": "ok", "severity": "critical",
                    "reason": "the last job failed", "at": "2025-01-01T00:10:00Z", "owner": None,
                    "queue": "reports", "tags": ["eu"]}]}
    assert request.headers["x-awa-group-key"] == body["group_key"]
    assert states(conn) == [("hook", "delivered", 1)]
    assert Deliverer().round(conn, now + timedelta(minutes=1)).sinks == ()  # nothing left to send
    assert len(receiver.requests) == 1


def test_s63_slack_gets_an_incoming_webhook_text_with_names_escaped(
        client: Any, conn: psycopg.Connection[Any], receiver: Receiver) -> None:
    client.actions.add_alert_sink("chat", "slack", url=f"{receiver.url}/services/T/B/X")
    now = at("2025-01-01T00:10:00")
    transition(conn, [("a<b>&c", "ok", "late", "the fire due at X was not enqueued within 60 s (max_lateness)")], now)
    Deliverer().round(conn, now)
    [body] = receiver.bodies()
    check_slack(body)
    assert body == {"text": "awa-tui: schedule a&lt;b&gt;&amp;c is late: the fire due at X was not enqueued "
                            "within 60 s (max_lateness)"}


def test_s63_pagerduty_pages_a_failing_schedule_and_resolves_it_when_it_recovers(
        client: Any, conn: psycopg.Connection[Any], receiver: Receiver, secrets: None) -> None:
    """Done when: a failing schedule pages the PagerDuty-shaped receiver and resolves it when
    it recovers, through the real health pass (one evaluation period each) and a round."""
    client.actions.add_alert_sink("pd", "pagerduty", url=f"{receiver.url}/v2/enqueue", key_env="AWA_TEST_PD_KEY")
    register(client, conn, "flaky", "* * * * *", at("2025-01-01T00:00:00"))
    job = client.evaluate(now=at("2025-01-01T00:01:00")).jobs[0].id
    finish(conn, job, "discarded", at("2025-01-01T00:01:05"))
    client.runtime.evaluate_health(now=at("2025-01-01T00:01:10"))
    Deliverer().round(conn, at("2025-01-01T00:01:11"))
    job = client.evaluate(now=at("2025-01-01T00:02:00")).jobs[0].id
    finish(conn, job, "completed", at("2025-01-01T00:02:05"))
    client.runtime.evaluate_health(now=at("2025-01-01T00:02:10"))
    Deliverer().round(conn, at("2025-01-01T00:02:11"))
    bodies = receiver.bodies()
    for body in bodies:
        check_pagerduty(body)
    assert [(b["event_action"], b["dedup_key"]) for b in bodies] == [
        ("trigger", "awa/flaky/failing"), ("resolve", "awa/flaky/failing")]
    assert bodies[0]["payload"]["summary"] == "schedule flaky is failing: the last job failed"
    assert (bodies[0]["payload"]["severity"], bodies[0]["payload"]["timestamp"]) == ("critical",
                                                                                     "2025-01-01T00:01:10Z")
    assert {r.path for r in receiver.requests} == {"/v2/enqueue"}


def test_s63_pagerduty_a_change_of_condition_resolves_one_and_triggers_the_other(
        client: Any, conn: psycopg.Connection[Any], receiver: Receiver, secrets: None) -> None:
    client.actions.add_alert_sink("pd", "pagerduty", url=f"{receiver.url}/v2/enqueue", key_env="AWA_TEST_PD_KEY")
    transition(conn, [("job", "failing", "missed", "no success")], at("2025-01-01T00:10:00"))
    Deliverer().round(conn, at("2025-01-01T00:10:00"))
    assert [(b["event_action"], b["dedup_key"]) for b in receiver.bodies()] == [
        ("resolve", "awa/job/failing"), ("trigger", "awa/job/missed")]


def test_s63_alertmanager_gets_postable_alerts_firing_then_ended(
        client: Any, conn: psycopg.Connection[Any], receiver: Receiver) -> None:
    client.actions.add_alert_sink("am", "alertmanager", url=receiver.url)
    transition(conn, [("job", "ok", "late", "slow")], at("2025-01-01T00:10:00"))
    Deliverer().round(conn, at("2025-01-01T00:10:00"))
    transition(conn, [("job", "late", "ok", None)], at("2025-01-01T00:12:00"))
    Deliverer().round(conn, at("2025-01-01T00:12:00"))
    assert [r.path for r in receiver.requests] == ["/api/v2/alerts", "/api/v2/alerts"]
    firing, resolved = receiver.bodies()
    check_alertmanager(firing)
    check_alertmanager(resolved)
    labels = {"alertname": "AwaScheduleLate", "schedule": "job", "severity": "warning", "source": "awa-tui"}
    assert [(a["labels"], a["startsAt"], a["endsAt"]) for a in firing] == [
        (labels, "2025-01-01T00:10:00Z", "2025-01-08T00:10:00Z")]
    assert [(a["labels"], a["endsAt"]) for a in resolved] == [(labels, "2025-01-01T00:12:00Z")]


def test_s63_notify_sends_one_payload_on_the_channel(client: Any, dsn: str, conn: psycopg.Connection[Any]) -> None:
    client.actions.add_alert_sink("bus", "notify", channel="awa_alerts")
    with psycopg.connect(dsn, autocommit=True) as listener:
        listener.execute("LISTEN awa_alerts")
        transition(conn, [("a", "ok", "late", None), ("b", "ok", "failing", None)], at("2025-01-01T00:10:00"))
        Deliverer().round(conn, at("2025-01-01T00:10:00"))
        [note] = list(listener.notifies(timeout=5, stop_after=1))
    body = json.loads(note.payload)
    assert (note.channel, body["count"], body["schedules"], body["summary"]) == (
        "awa_alerts", 2, ["a", "b"], "2 schedules changed health: failing 1, late 1")


# --- grouping: a fleet-wide outage is one message per sink -------------------------------------

def test_s63_a_10000_schedule_outage_is_one_message_per_sink(
        client: Any, dsn: str, conn: psycopg.Connection[Any], receiver: Receiver, secrets: None) -> None:
    actions = client.actions
    actions.add_alert_sink("hook", "webhook", url=f"{receiver.url}/hook", key_env="AWA_TEST_HOOK_KEY")
    actions.add_alert_sink("chat", "slack", url=f"{receiver.url}/slack")
    actions.add_alert_sink("pd", "pagerduty", url=f"{receiver.url}/pd", key_env="AWA_TEST_PD_KEY")
    actions.add_alert_sink("am", "alertmanager", url=f"{receiver.url}/am")
    actions.add_alert_sink("bus", "notify", channel="awa_alerts")
    now = at("2025-01-01T00:10:00")
    conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health, reason) "
                 "SELECT format('s%%s', lpad(i::text, 5, '0')), %s, 'ok', 'late', 'leader outage' "
                 "FROM generate_series(1, 10000) i", (now,))
    with psycopg.connect(dsn, autocommit=True) as listener:
        listener.execute("LISTEN awa_alerts")
        done = Deliverer().round(conn, now)
        notes = list(listener.notifies(timeout=2, stop_after=2))
    assert sorted((s.sink, s.alerts, s.messages, s.delivered) for s in done.sinks) == [
        ("am", 10000, 1, True), ("bus", 10000, 1, True), ("chat", 10000, 1, True), ("hook", 10000, 1, True),
        ("pd", 10000, 1, True)]
    by_path = Counter(r.path for r in receiver.requests)
    assert by_path == {"/hook": 1, "/slack": 1, "/pd": 1, "/am/api/v2/alerts": 1}
    bodies = {r.path: r.json for r in receiver.requests}
    check_webhook(bodies["/hook"])
    assert (bodies["/hook"]["count"], bodies["/hook"]["truncated"], bodies["/hook"]["summary"]) == (
        10000, 9900, "10,000 schedules changed health: late 10,000")
    check_slack(bodies["/slack"])
    assert bodies["/slack"]["text"].splitlines()[0] == "awa-tui: 10,000 schedules changed health: late 10,000"
    assert bodies["/slack"]["text"].splitlines()[-1] == "… and 9,990 more"
    check_pagerduty(bodies["/pd"])
    assert (bodies["/pd"]["dedup_key"], bodies["/pd"]["payload"]["custom_details"]["count"]) == ("awa/pd/group", 10000)
    check_alertmanager(bodies["/am/api/v2/alerts"])
    assert len(bodies["/am/api/v2/alerts"]) == 10000  # one POST; Alertmanager's own grouping applies
    assert [json.loads(n.payload)["count"] for n in notes] == [10000]
    # The grouped PagerDuty incident resolves once every schedule recovered.
    conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health) "
                 "SELECT format('s%%s', lpad(i::text, 5, '0')), %s, 'late', 'ok' FROM generate_series(1, 10000) i",
                 (now + timedelta(minutes=5),))
    receiver.requests.clear()
    Deliverer().round(conn, now + timedelta(minutes=5), sinks=["pd"])
    assert [(b["event_action"], b["dedup_key"]) for b in receiver.bodies()] == [("resolve", "awa/pd/group")]
    assert conn.execute("SELECT group_open FROM awa.alert_sinks WHERE name = 'pd'").fetchone()["group_open"] is False


# --- faults -----------------------------------------------------------------------------------

def test_s63_receiver_down_then_up_loses_nothing_and_doubles_nothing(
        client: Any, conn: psycopg.Connection[Any], secrets: None) -> None:
    port = closed_port()
    client.actions.add_alert_sink("hook", "webhook", url=f"http://127.0.0.1:{port}/hook", key_env="AWA_TEST_HOOK_KEY")
    t0 = at("2025-01-01T00:10:00")
    transition(conn, [("a", "ok", "failing", "x"), ("b", "ok", "late", "y")], t0)
    deliverer = Deliverer()
    down = deliverer.round(conn, t0)
    # The fault happened: refused, recorded, visible.
    assert [(s.sink, s.delivered, s.error) for s in down.sinks] == [
        ("hook", False, f"sink hook (http://127.0.0.1:{port}/…): cannot connect: Connection refused")]
    assert states(conn) == [("hook", "pending", 1), ("hook", "pending", 1)]
    failing = client.reads.alerts(state="failing")
    assert [(a.name, a.state, a.attempts, a.next_attempt_at, a.open) for a in failing] == [
        ("b", "failing", 1, t0 + timedelta(seconds=5), True), ("a", "failing", 1, t0 + timedelta(seconds=5), True)]
    assert [(b.sink, b.pending, b.failing) for b in client.reads.alert_backlog()] == [("hook", 2, 2)]
    # `check` names the sink: a warning at first, critical once it kept failing 10 minutes.
    line = (f"alert sink hook: 2 alert(s) not delivered since 2025-01-01T00:10:00+00:00 "
            f"(sink hook (http://127.0.0.1:{port}/…): cannot connect: Connection refused)")
    for minutes, warning in ((9, True), (10, False)):
        report = client.reads.check(now=t0 + timedelta(minutes=minutes))
        assert [(p.message, p.warning) for p in report.fleet if p.code == "alert_delivery"] == [(line, warning)]
    # Still down a minute: retried with a doubling wait (5 s, 10 s, 20 s, 40 s), each refused.
    for seconds, attempts in ((5, 2), (15, 3), (35, 4), (60, 4), (75, 5)):
        deliverer.round(conn, t0 + timedelta(seconds=seconds))
        assert states(conn) == [("hook", "pending", attempts)] * 2, seconds
    receiver = Receiver(port)
    try:
        assert deliverer.round(conn, t0 + timedelta(seconds=100)).sinks == ()  # its backoff (80 s) not over yet
        assert receiver.requests == []
        up = deliverer.round(conn, t0 + timedelta(seconds=155))
        assert [(s.sink, s.alerts, s.messages, s.delivered) for s in up.sinks] == [("hook", 2, 1, True)]
        deliverer.round(conn, t0 + timedelta(seconds=300))
        keys = Counter(a["dedupe_key"] for body in receiver.bodies() for a in body["alerts"])
        ids = [r["id"] for r in conn.execute("SELECT id FROM awa.health_transitions ORDER BY id").fetchall()]
        assert keys == {f"awa/a/{ids[0]}": 1, f"awa/b/{ids[1]}": 1}  # each once: nothing lost, nothing doubled
        assert states(conn) == [("hook", "delivered", 6)] * 2
        assert client.reads.alert_backlog() == []
    finally:
        receiver.close()


def test_s63_a_runtime_lost_between_send_and_mark_sends_again_with_the_same_dedupe_key(
        client: Any, conn: psycopg.Connection[Any], receiver: Receiver, secrets: None) -> None:
    client.actions.add_alert_sink("hook", "webhook", url=f"{receiver.url}/hook", key_env="AWA_TEST_HOOK_KEY")
    t0 = at("2025-01-01T00:10:00")
    transition(conn, [("a", "ok", "failing", "x")], t0)
    deliverer = Deliverer()
    alerts = claim(conn, "hook", t0)  # claimed and sent, then the runtime dies before marking
    deliverer.send(conn, get_sink(conn, "hook"), alerts)
    assert deliverer.round(conn, t0 + LEASE - timedelta(seconds=1)).sinks == ()  # leased: nobody sends it
    deliverer.round(conn, t0 + LEASE)
    keys = [a["dedupe_key"] for body in receiver.bodies() for a in body["alerts"]]
    assert len(keys) == 2 and len(set(keys)) == 1  # at least once: a repeat with the same key


def test_s63_a_sink_answering_500_is_retried_and_its_error_kept_without_its_url(
        client: Any, conn: psycopg.Connection[Any], receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWA_TEST_SLACK_URL", f"{receiver.url}/services/T0/B0/SECRETPATH")
    client.actions.add_alert_sink("chat", "slack", url_env="AWA_TEST_SLACK_URL")
    receiver.status = 500
    transition(conn, [("a", "ok", "failing", "x")], at("2025-01-01T00:10:00"))
    done = Deliverer().round(conn, at("2025-01-01T00:10:00"))
    assert [s.error for s in done.sinks] == [
        f"sink chat (http://127.0.0.1:{receiver.port}/…): answered HTTP 500 Internal Server Error"]
    [row] = client.reads.alerts()
    assert (row.state, row.attempts, row.last_error) == ("failing", 1, done.sinks[0].error)
    assert "SECRETPATH" not in json.dumps([str(v) for v in row.__dict__.values()])
    monkeypatch.delenv("AWA_TEST_SLACK_URL")
    later = Deliverer().round(conn, at("2025-01-01T00:10:05"))
    assert [s.error for s in later.sinks] == ["sink chat: URL: the environment variable AWA_TEST_SLACK_URL is not set"]


def test_s63_alerts_test_sends_one_message_and_says_why_it_failed(
        client: Any, conn: psycopg.Connection[Any], receiver: Receiver, secrets: None) -> None:
    client.actions.add_alert_sink("hook", "webhook", url=f"{receiver.url}/hook", key_env="AWA_TEST_HOOK_KEY")
    client.actions.add_alert_sink("pd", "pagerduty", url=f"{receiver.url}/pd", key_env="AWA_TEST_PD_KEY")
    done = client.actions.test_alert_sink("hook")
    assert (done.sink, done.alerts, done.messages, done.delivered) == ("hook", 1, 1, True)
    body = receiver.bodies()[0]
    check_webhook(body)
    assert body["alerts"][0]["schedule"] == "awa-tui-test"
    client.actions.test_alert_sink("pd")
    assert [(b["event_action"], b["dedup_key"]) for b in receiver.bodies()[1:]] == [
        ("trigger", "awa/awa-tui-test/failing"), ("resolve", "awa/awa-tui-test/failing")]
    assert conn.execute("SELECT count(*) AS n FROM awa.alert_outbox").fetchone()["n"] == 0
    receiver.status = 403
    with pytest.raises(DeliveryFailed) as refused:
        client.actions.test_alert_sink("hook")
    assert str(refused.value) == f"sink hook (http://127.0.0.1:{receiver.port}/…): answered HTTP 403 Forbidden"
    # Each test is an audit event: who paged which sink, and its answer (no URL, no key).
    events = conn.execute("SELECT action, target, after FROM awa.audit_log WHERE action = 'alert_test' "
                          "ORDER BY id").fetchall()
    assert [(e["target"], e["after"]) for e in events] == [
        ("sink:hook", {"delivered": True, "alerts": 1, "messages": 1}),
        ("sink:pd", {"delivered": True, "alerts": 2, "messages": 2}),
        ("sink:hook", {"delivered": False, "error": str(refused.value)})]


def test_s63_a_secret_file_is_read_at_delivery_with_the_dsn_files_checks(
        client: Any, conn: psycopg.Connection[Any], receiver: Receiver, tmp_path: Path) -> None:
    url_file, key_file = tmp_path / "url", tmp_path / "key"
    url_file.write_text(f"{receiver.url}/hook/SECRETPATH\n")
    key_file.write_text(KEY + "\n")
    url_file.chmod(0o644)
    key_file.chmod(0o600)
    client.actions.add_alert_sink("hook", "webhook", url_file=str(url_file), key_file=str(key_file))
    [sink] = client.reads.alert_sinks()
    assert (sink.target, sink.key_from) == (f"file:{url_file}", f"file:{key_file}")
    transition(conn, [("a", "ok", "failing", "x")], at("2025-01-01T00:10:00"))
    refused = Deliverer().round(conn, at("2025-01-01T00:10:00"))
    assert [s.error for s in refused.sinks] == [
        f"sink hook: URL {str(url_file)!r}: readable by every user of this host; make it private first "
        f"(chmod o-r {url_file})"]
    assert receiver.requests == []
    url_file.chmod(0o600)
    done = Deliverer().round(conn, at("2025-01-01T00:10:05"))
    assert [(s.delivered, s.error) for s in done.sinks] == [(True, None)]
    [request] = receiver.requests
    assert request.path == "/hook/SECRETPATH"
    assert request.headers["x-awa-signature-256"] == "sha256=" + hmac.new(KEY.encode(), request.raw,
                                                                          hashlib.sha256).hexdigest()


def test_s63_alerts_test_on_a_notify_sink(client: Any, dsn: str) -> None:
    client.actions.add_alert_sink("bus", "notify", channel="awa_alerts")
    with psycopg.connect(dsn, autocommit=True) as listener:
        listener.execute("LISTEN awa_alerts")
        client.actions.test_alert_sink("bus")
        [note] = list(listener.notifies(timeout=5, stop_after=1))
    assert json.loads(note.payload)["schedules"] == ["awa-tui-test"]
