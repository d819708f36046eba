"""S63 through the real executable: `alerts sinks add|list|remove`, `alerts test`,
`alerts list`, `alerts silence`; secrets never printed, bad input one line with nothing
stored, silences audited."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from cli_helpers import awa, cli_env, one_line_error, table
from http_receiver import Receiver

from awa_tui import Client
from awa_tui.engine.alerts.deliver import Deliverer

SECRET = "T000/B000/XXXXSECRETXXXX"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def test_s63_sinks_add_list_test_and_remove_never_show_a_secret(
        dsn: str, conn: psycopg.Connection[Any], receiver: Receiver) -> None:
    env = cli_env(AWA_TEST_HOOK_KEY="k3y")
    added = awa("alerts", "sinks", "add", "hook", "--kind", "webhook", "--url", f"{receiver.url}/{SECRET}",
                "--key-env", "AWA_TEST_HOOK_KEY", "--dsn", dsn, "--operator", "ops@test", env=env)
    assert (added.returncode, added.stderr) == (0, "")
    assert added.stdout == f"added webhook sink hook: all, to http://127.0.0.1:{receiver.port}/…\n"
    bus = awa("alerts", "sinks", "add", "bus", "--kind", "notify", "--channel", "awa_alerts", "--route",
              "severity=critical", "--dsn", dsn, env=env)
    assert bus.stdout == "added notify sink bus: severity critical, to channel awa_alerts\n"
    listed = awa("alerts", "sinks", "list", "--dsn", dsn, env=env)
    assert listed.returncode == 0 and SECRET not in listed.stdout
    assert [(r["NAME"], r["KIND"], r["ROUTE"], r["SENDS TO"], r["KEY FROM"]) for r in table(listed.stdout)] == [
        ("bus", "notify", "severity critical", "channel awa_alerts", "-"),
        ("hook", "webhook", "all", f"http://127.0.0.1:{receiver.port}/…", "env:AWA_TEST_HOOK_KEY")]
    as_json = awa("alerts", "sinks", "list", "--dsn", dsn, "--json", env=env)
    assert SECRET not in as_json.stdout and '"target"' in as_json.stdout
    sent = awa("alerts", "test", "hook", "--dsn", dsn, env=env)
    assert (sent.returncode, sent.stdout) == (0, "sent a test alert to sink hook (1 message(s))\n")
    assert [r.path for r in receiver.requests] == [f"/{SECRET}"]
    receiver.status = 404
    refused = awa("alerts", "test", "hook", "--dsn", dsn, env=env)
    assert one_line_error(refused) == (f"error: sink hook (http://127.0.0.1:{receiver.port}/…): answered HTTP 404 "
                                       "Not Found")
    removed = awa("alerts", "sinks", "remove", "hook", "--dsn", dsn, "--operator", "ops@test", env=env)
    assert removed.stdout == "removed webhook sink hook\n"
    assert [r["name"] for r in conn.execute("SELECT name FROM awa.alert_sinks")] == ["bus"]


@pytest.mark.parametrize(("args", "message"), [
    (["--kind", "slack", "--url", "ftp://hooks.example/x"], "error: url: must be an http:// or https:// URL"),
    (["--kind", "notify", "--channel", "c", "--route", "owner=ghost"], "error: route: no schedule has owner 'ghost'"),
    (["--kind", "pagerduty"],
     "error: key: a pagerduty sink needs the routing (integration) key (--key-env or --key-file)"),
])
def test_s63_a_bad_sink_is_one_line_and_nothing_is_stored(dsn: str, conn: psycopg.Connection[Any], args: list[str],
                                                           message: str) -> None:
    assert one_line_error(awa("alerts", "sinks", "add", "s", *args, "--dsn", dsn)) == message
    assert conn.execute("SELECT count(*) AS n FROM awa.alert_sinks").fetchone()["n"] == 0


def test_s63_alerts_list_and_silence(dsn: str, conn: psycopg.Connection[Any]) -> None:
    with Client(dsn) as client:
        client.periodic("nightly", "0 2 * * *", "k")
        client.sync()
        client.actions.add_alert_sink("bus", "notify", channel="awa_alerts")
    conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health, reason) VALUES "
                 "('nightly', '2025-01-01T00:10:00Z', 'ok', 'failing', 'the last job failed')")
    listed = awa("alerts", "list", "--dsn", dsn)
    assert [(r["NAME"], r["WAS"], r["NOW"], r["FIRING"], r["SINK"], r["STATE"]) for r in table(listed.stdout)] == [
        ("nightly", "ok", "failing", "yes", "bus", "pending")]
    silenced = awa("alerts", "silence", "nightly", "--until", "2h", "--reason", "db migration", "--dsn", dsn,
                   "--operator", "alice")
    assert silenced.returncode == 0, silenced.stderr
    assert silenced.stdout.startswith("silenced nightly until ")
    assert silenced.stdout.endswith(": db migration (1 waiting alert(s) silenced)\n")
    assert [r["STATE"] for r in table(awa("alerts", "list", "--dsn", dsn).stdout)] == ["silenced"]
    in_force = table(awa("alerts", "silences", "--dsn", dsn).stdout)
    assert [(r["NAME"], r["REASON"], r["CREATED BY"]) for r in in_force] == [("nightly", "db migration", "alice")]
    assert awa("alerts", "list", "--state", "pending", "--dsn", dsn).stdout.startswith("0 alert deliveries")
    audit = conn.execute("SELECT operator, target, after ->> 'reason' AS reason FROM awa.audit_log "
                         "WHERE action = 'alert_silence'").fetchall()
    assert [(r["operator"], r["target"], r["reason"]) for r in audit] == [("alice", "nightly", "db migration")]
    past = awa("alerts", "silence", "nightly", "--until", "2020-01-01T00:00:00Z", "--reason", "x", "--dsn", dsn)
    assert one_line_error(past).startswith("error: until: 2020-01-01T00:00:00+00:00 is not in the future (now ")
    assert one_line_error(awa("alerts", "list", "--state", "lost", "--dsn", dsn)) == (
        "error: state: one of pending, failing, delivered, silenced, open, unrouted, got 'lost'")
    assert conn.execute("SELECT count(*) AS n FROM awa.alert_silences").fetchone()["n"] == 1


def test_s63_alerts_list_json_keeps_stable_keys(dsn: str, conn: psycopg.Connection[Any], receiver: Receiver) -> None:
    with Client(dsn) as client:
        client.actions.add_alert_sink("chat", "slack", url=f"{receiver.url}/x")
    # Recent: a delivered alert older than the outbox's retention (30 days) is pruned.
    conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health) VALUES "
                 "('gone', now(), 'ok', 'late')")
    Deliverer().round(conn)
    [row] = json.loads(awa("alerts", "list", "--json", "--dsn", dsn).stdout)
    assert set(row) == {"id", "name", "at", "from_health", "to_health", "reason", "sink", "state", "open", "attempts",
                        "last_error", "next_attempt_at", "delivered_at", "fleet", "owner"}
    assert (row["name"], row["state"], row["attempts"], row["open"]) == ("gone", "delivered", 1, True)


def test_s71_alerts_silence_by_owner_and_by_filter(dsn: str, conn: psycopg.Connection[Any]) -> None:
    with Client(dsn, owner="billing", authoritative=True) as client:
        client.periodic("invoices", "0 2 * * *", "k", tags=["nightly"])
        client.sync()
    by_owner = awa("alerts", "silence", "--owner", "billing", "--until", "2h", "--reason", "deploy", "--dsn", dsn,
                   "--operator", "alice")
    assert by_owner.returncode == 0, by_owner.stderr
    assert by_owner.stdout.startswith("silenced owner billing until ") and by_owner.stdout.endswith(": deploy\n")
    by_filter = awa("alerts", "silence", "--filter", "tag:nightly", "--until", "1h", "--reason", "noise", "--dsn",
                    dsn, "--operator", "bob")
    assert by_filter.stdout.startswith("silenced filter tag:nightly until ")
    in_force = table(awa("alerts", "silences", "--dsn", dsn).stdout)
    assert sorted((r["OWNER"], r["FILTER"], r["REASON"], r["CREATED BY"]) for r in in_force) == [
        ("-", "tag:nightly", "noise", "bob"), ("billing", "-", "deploy", "alice")]
    assert one_line_error(awa("alerts", "silence", "--owner", "nobody", "--until", "2h", "--reason", "x",
                              "--dsn", dsn)) == "error: unknown owner 'nobody'"
    assert one_line_error(awa("alerts", "silence", "--filter", "tag:", "--until", "2h", "--reason", "x",
                              "--dsn", dsn)).startswith("error: filter: ")
    assert one_line_error(awa("alerts", "silence", "--owner", "billing", "--until", "2020-01-01T00:00:00Z",
                              "--reason", "x", "--dsn", dsn)).startswith(
        "error: until: 2020-01-01T00:00:00+00:00 is not in the future (now ")
    assert one_line_error(awa("alerts", "silence", "invoices", "--owner", "billing", "--until", "2h", "--reason",
                              "x", "--dsn", dsn)) == (
        "error: alerts silence: name one schedule, or --owner, or --filter (exactly one)")
    assert conn.execute("SELECT count(*) AS n FROM awa.alert_silences").fetchone()["n"] == 2


def test_s70_alerts_list_shows_a_fleet_alert_in_operator_words(dsn: str, conn: psycopg.Connection[Any]) -> None:
    conn.execute("INSERT INTO awa.fleet_transitions (at, from_state, to_state, reason) "
                 "VALUES ('2025-01-01T00:10:00Z', 'ok', 'no_leader', 'no runtime holds the leader lock')")
    listed = table(awa("alerts", "list", "--dsn", dsn).stdout)
    assert [(r["NAME"], r["WAS"], r["NOW"], r["FIRING"], r["STATE"], r["REASON"]) for r in listed] == [
        ("(fleet)", "ok", "no_leader", "yes", "unrouted", "no runtime holds the leader lock")]
    [row] = json.loads(awa("alerts", "list", "--json", "--dsn", dsn).stdout)
    assert (row["fleet"], row["name"], row["open"]) == (True, "fleet", True)
    assert awa("alerts", "list", "--schedule", "fleet", "--dsn", dsn).stdout.startswith("0 alert deliveries")
