"""S63: every health transition that starts or ends an alert becomes an outbox row, with
one delivery per sink its routing takes, in the transaction that recorded it; silences
and sinks are audited; bad input is one line and nothing is stored. Real Postgres, exact
instants (the leader's health pass is called with `now`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest
from engine_helpers import at, force
from health_helpers import register

from awa_tui.engine.core.errors import AwaError, Conflict, NotFound, ValidationError


def outbox(conn: psycopg.Connection[Any]) -> list[tuple[str, str | None, str]]:
    rows = conn.execute("SELECT name, from_health, to_health FROM awa.alert_outbox ORDER BY id").fetchall()
    return [(r["name"], r["from_health"], r["to_health"]) for r in rows]


def deliveries(conn: psycopg.Connection[Any]) -> list[tuple[str, str, str, str]]:
    rows = conn.execute(
        "SELECT o.name, o.to_health, d.sink, d.state FROM awa.alert_deliveries d "
        "JOIN awa.alert_outbox o ON o.id = d.outbox_id ORDER BY o.id, d.sink").fetchall()
    return [(r["name"], r["to_health"], r["sink"], r["state"]) for r in rows]


def late_then_ok(client: Any, conn: psycopg.Connection[Any], name: str = "minutely", **kwargs: Any) -> None:
    """`name` turns late at 00:02:01 and recovers at 00:02:06 (as in test_health_rules)."""
    register(client, conn, name, "* * * * *", at("2025-01-01T00:00:00"), max_lateness=60, **kwargs)
    client.evaluate(now=at("2025-01-01T00:00:30"))
    client.runtime.evaluate_health(now=at("2025-01-01T00:02:01"))
    client.evaluate(now=at("2025-01-01T00:02:05"))
    client.runtime.evaluate_health(now=at("2025-01-01T00:02:06"))


def test_s63_a_transition_and_its_recovery_become_outbox_rows_with_a_delivery_per_sink(
        client: Any, conn: psycopg.Connection[Any]) -> None:
    client.actions.add_alert_sink("hooks", "webhook", url="https://hooks.example/in/T0k3n", key_env="HOOK_KEY")
    client.actions.add_alert_sink("bus", "notify", channel="awa_alerts")
    late_then_ok(client, conn)
    assert outbox(conn) == [("minutely", "ok", "late"), ("minutely", "late", "ok")]
    assert deliveries(conn) == [("minutely", "late", "bus", "pending"), ("minutely", "late", "hooks", "pending"),
                                ("minutely", "ok", "bus", "pending"), ("minutely", "ok", "hooks", "pending")]
    # Each outbox row names the transition it came from.
    rows = conn.execute("SELECT o.transition_id = t.id AS same, t.at FROM awa.alert_outbox o "
                        "JOIN awa.health_transitions t ON t.id = o.transition_id ORDER BY o.id").fetchall()
    assert [(r["same"], r["at"]) for r in rows] == [(True, at("2025-01-01T00:02:01")),
                                                    (True, at("2025-01-01T00:02:06"))]


def test_s63_transitions_that_start_or_end_no_alert_make_no_outbox_row(
        client: Any, conn: psycopg.Connection[Any]) -> None:
    client.actions.add_alert_sink("bus", "notify", channel="awa_alerts")
    register(client, conn, "quiet", "* * * * *", at("2025-01-01T00:00:00"))
    client.actions.pause("quiet")
    client.runtime.evaluate_health(now=at("2025-01-01T00:00:10"))
    client.actions.resume("quiet")
    client.runtime.evaluate_health(now=at("2025-01-01T00:00:20"))
    changes = conn.execute("SELECT from_health, to_health FROM awa.health_transitions ORDER BY id").fetchall()
    assert [(r["from_health"], r["to_health"]) for r in changes] == [("ok", "paused"), ("paused", "ok")]
    assert outbox(conn) == []


def test_s63_the_outbox_row_is_written_in_the_transitions_transaction(conn: psycopg.Connection[Any]) -> None:
    with pytest.raises(psycopg.errors.DivisionByZero), conn.transaction():
        conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health) "
                     "VALUES ('a', now(), 'ok', 'failing')")
        assert outbox(conn) == [("a", "ok", "failing")]  # inside: already there
        conn.execute("SELECT 1 / 0")
    assert outbox(conn) == []  # rolled back together
    conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health) "
                 "SELECT 's' || i, now(), 'ok', 'late' FROM generate_series(1, 3) i")
    assert outbox(conn) == [("s1", "ok", "late"), ("s2", "ok", "late"), ("s3", "ok", "late")]


def test_s63_routing_by_owner_queue_tag_and_severity(client: Any, conn: psycopg.Connection[Any]) -> None:
    client.periodic("billing-run", "* * * * *", "k", queue="billing", tags=["finance"])
    client.periodic("etl", "* * * * *", "k", queue="etl")
    client.sync()
    force(conn, "UPDATE awa.cron_jobs SET owner = 'payments' WHERE name = 'billing-run'")
    actions = client.actions
    actions.add_alert_sink("everyone", "notify", channel="all_alerts")
    actions.add_alert_sink("payments", "notify", channel="payments", route="owner=payments")
    actions.add_alert_sink("etl-queue", "notify", channel="etl", route="queue=etl")
    actions.add_alert_sink("finance", "notify", channel="finance", route="tag=finance")
    actions.add_alert_sink("pager", "notify", channel="pager", route="severity=critical")
    actions.add_alert_sink("warn", "notify", channel="warn", route="severity=warning")
    conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health) VALUES "
                 "('billing-run', now(), 'ok', 'late'), ('etl', now(), 'ok', 'failing'), "
                 "('etl', now(), 'failing', 'ok')")
    got = sorted((name, health, sink) for name, health, sink, _ in deliveries(conn))
    assert got == sorted([
        ("billing-run", "late", "everyone"), ("billing-run", "late", "payments"), ("billing-run", "late", "finance"),
        ("billing-run", "late", "warn"),
        ("etl", "failing", "everyone"), ("etl", "failing", "etl-queue"), ("etl", "failing", "pager"),
        ("etl", "failing", "warn"),
        # The recovery goes where the alert went (its severity is the one it ends).
        ("etl", "ok", "everyone"), ("etl", "ok", "etl-queue"), ("etl", "ok", "pager"), ("etl", "ok", "warn"),
    ])


def test_s63_sinks_are_audited_and_their_secrets_never_shown(client: Any, conn: psycopg.Connection[Any]) -> None:
    secret_url = "https://user:pa55@hooks.slack.com/services/T000/B000/XXXXSECRET?token=abc"
    added = client.actions.add_alert_sink("team", "slack", url=secret_url, operator="ops@test")
    assert (added.target, added.route, added.key_from) == ("https://hooks.slack.com/…", "all", None)
    client.actions.add_alert_sink("pd", "pagerduty", key_file="/etc/awa/pd.key", route="severity=critical",
                                  operator="ops@test")
    listed = [(s.name, s.kind, s.route, s.target, s.key_from) for s in client.reads.alert_sinks()]
    assert listed == [("pd", "pagerduty", "severity critical", "https://events.pagerduty.com/…",
                       "file:/etc/awa/pd.key"),
                      ("team", "slack", "all", "https://hooks.slack.com/…", None)]
    removed = client.actions.remove_alert_sink("team", operator="ops@test")
    assert removed.target == "https://hooks.slack.com/…"
    audit = conn.execute("SELECT action, target, operator, before::text AS b, after::text AS a FROM awa.audit_log "
                         "WHERE target LIKE 'alert-sink:%' ORDER BY id").fetchall()
    assert [(r["action"], r["target"], r["operator"]) for r in audit] == [
        ("alert_sink_add", "alert-sink:team", "ops@test"), ("alert_sink_add", "alert-sink:pd", "ops@test"),
        ("alert_sink_remove", "alert-sink:team", "ops@test")]
    assert all("SECRET" not in (r["b"] or "") + (r["a"] or "") and "pa55" not in (r["b"] or "") + (r["a"] or "")
               for r in audit)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"kind": "webhook", "url": "ftp://example.com/x", "key_env": "K"}, "url: must be an http:// or https:// URL"),
    ({"kind": "webhook", "url": "https:///nohost", "key_env": "K"}, "url: the URL has no host"),
    ({"kind": "webhook", "url": "https://example.com/x"},
     "key: a webhook sink needs the HMAC-SHA256 signing key (--key-env or --key-file)"),
    ({"kind": "slack"}, "url: a slack sink needs a URL (--url, --url-env or --url-file)"),
    ({"kind": "slack", "url": "https://example.com/x", "url_env": "U"},
     "url: give the URL, its environment variable or its file: one of them"),
    ({"kind": "pagerduty"}, "key: a pagerduty sink needs the routing (integration) key (--key-env or --key-file)"),
    ({"kind": "notify", "channel": "Bad-Channel"},
     "channel: a notify sink needs a channel of lower-case letters, digits and '_' (at most 63), got 'Bad-Channel'"),
    ({"kind": "sms", "url": "https://example.com"}, "kind: one of webhook, slack, pagerduty, alertmanager, notify, "
                                                     "got 'sms'"),
    ({"kind": "notify", "channel": "c", "route": "owner=nobody"}, "route: no schedule has owner 'nobody'"),
    ({"kind": "notify", "channel": "c", "route": "team=x"},
     "route: 'all' or one of owner=, queue=, tag=, severity= with a value, got 'team=x'"),
    ({"kind": "notify", "channel": "c", "route": "severity=info"},
     "route: severity is warning or critical, got 'info'"),
    ({"kind": "slack", "url_file": "relative/path"}, "url: an absolute path is required, got 'relative/path'"),
])
def test_s63_a_bad_sink_is_refused_in_one_line_and_nothing_is_stored(
        client: Any, conn: psycopg.Connection[Any], kwargs: dict[str, Any], message: str) -> None:
    kind = kwargs.pop("kind")
    with pytest.raises(ValidationError) as refused:
        client.actions.add_alert_sink("s", kind, **kwargs)
    assert str(refused.value) == message
    assert conn.execute("SELECT count(*) AS n FROM awa.alert_sinks").fetchone()["n"] == 0
    assert conn.execute("SELECT count(*) AS n FROM awa.audit_log WHERE target LIKE 'alert-sink:%'"
                        ).fetchone()["n"] == 0


def test_s63_a_sink_name_is_taken_once(client: Any) -> None:
    client.actions.add_alert_sink("bus", "notify", channel="a")
    with pytest.raises(Conflict, match=r"^sink bus already exists"):
        client.actions.add_alert_sink("bus", "notify", channel="b")
    with pytest.raises(NotFound, match=r"^unknown sink 'nope'$"):
        client.actions.remove_alert_sink("nope")


def test_s63_a_silence_marks_waiting_and_new_alerts_silenced_and_is_audited(
        client: Any, conn: psycopg.Connection[Any]) -> None:
    client.actions.add_alert_sink("bus", "notify", channel="awa_alerts")
    register(client, conn, "noisy", "* * * * *", at("2025-01-01T00:00:00"))
    register(client, conn, "other", "* * * * *", at("2025-01-01T00:00:00"))
    now = at("2025-01-01T00:10:00")
    conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health) VALUES "
                 "('noisy', %(t)s, 'ok', 'failing'), ('other', %(t)s, 'ok', 'failing')", {"t": now})
    done = client.actions.silence_alerts("noisy", timedelta(hours=2), "db migration", operator="alice", now=now)
    assert (done.name, done.starts_at, done.until, done.reason, done.created_by, done.silenced) == (
        "noisy", now, at("2025-01-01T02:10:00"), "db migration", "alice", 1)
    conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health) VALUES "
                 "('noisy', %(a)s, 'failing', 'ok'), ('noisy', %(b)s, 'ok', 'late')",
                 {"a": at("2025-01-01T01:00:00"), "b": at("2025-01-01T02:10:00")})
    assert deliveries(conn) == [("noisy", "failing", "bus", "silenced"), ("other", "failing", "bus", "pending"),
                                ("noisy", "ok", "bus", "silenced"),
                                ("noisy", "late", "bus", "pending")]  # at its end: no longer silenced
    audit = conn.execute("SELECT action, target, operator, after FROM awa.audit_log "
                         "WHERE action = 'alert_silence'").fetchall()
    assert [(r["action"], r["target"], r["operator"], r["after"]["reason"]) for r in audit] == [
        ("alert_silence", "noisy", "alice", "db migration")]
    assert [s.name for s in client.reads.silences(now=now)] == ["noisy"]
    assert client.reads.silences(now=at("2025-01-01T02:10:00")) == []


@pytest.mark.parametrize(("name", "until", "reason", "error", "message"), [
    ("noisy", timedelta(seconds=-1), "x", ValidationError,
     "until: 2025-01-01T00:09:59+00:00 is not in the future (now 2025-01-01T00:10:00+00:00)"),
    ("noisy", timedelta(days=400), "x", ValidationError, "until: at most a year ahead"),
    ("noisy", timedelta(hours=1), "  ", ValidationError, "reason: a silence needs a reason"),
    ("nobody", timedelta(hours=1), "x", NotFound, "unknown schedule 'nobody'"),
])
def test_s63_a_bad_silence_is_refused_in_one_line_and_nothing_is_stored(
        client: Any, conn: psycopg.Connection[Any], name: str, until: timedelta, reason: str,
        error: type[AwaError], message: str) -> None:
    register(client, conn, "noisy", "* * * * *", at("2025-01-01T00:00:00"))
    with pytest.raises(error) as refused:
        client.actions.silence_alerts(name, until, reason, now=at("2025-01-01T00:10:00"))
    assert str(refused.value) == message
    assert conn.execute("SELECT count(*) AS n FROM awa.alert_silences").fetchone()["n"] == 0
    assert conn.execute("SELECT count(*) AS n FROM awa.audit_log WHERE action = 'alert_silence'").fetchone()["n"] == 0


def test_s63_v023_undone_and_applied_again(dsn: str, conn: psycopg.Connection[Any]) -> None:
    from awa_tui.engine.migrations import migrate, migrate_down

    tables = ("SELECT array_agg(relname::text ORDER BY relname) AS t FROM pg_class "
              "WHERE relnamespace = 'awa'::regnamespace AND relname LIKE 'alert\\_%%' AND relkind = 'r'")
    assert conn.execute(tables).fetchone()["t"] == ["alert_deliverer", "alert_deliveries", "alert_outbox",
                                                    "alert_silences", "alert_sinks"]
    assert 23 in migrate_down(dsn, 22)
    assert conn.execute(tables).fetchone()["t"] is None
    conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health) VALUES ('a', now(), 'ok', "
                 "'late')")  # the trigger went with the outbox
    assert 23 in migrate(dsn)
    conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health) VALUES ('b', now(), 'ok', "
                 "'late')")
    assert outbox(conn) == [("b", "ok", "late")]


def test_s63_delivered_alerts_are_pruned_after_30_days_and_waiting_ones_kept(
        client: Any, conn: psycopg.Connection[Any]) -> None:
    from awa_tui.engine.alerts import outbox as box

    client.actions.add_alert_sink("bus", "notify", channel="awa_alerts")
    client.actions.add_alert_sink("down", "slack", url="http://127.0.0.1:1/x")
    conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health) VALUES "
                 "('a', '2025-01-01T00:00:00Z', 'ok', 'late')")
    now = at("2025-01-01T00:00:00")
    box.mark_delivered(conn, "bus", [r["id"] for r in conn.execute("SELECT id FROM awa.alert_outbox")], now)
    assert box.prune(conn, now + timedelta(days=31)) == 0  # the down sink still waits
    conn.execute("DELETE FROM awa.alert_sinks WHERE name = 'down'")
    assert box.prune(conn, now + timedelta(days=30)) == 0  # not older than 30 days yet
    assert box.prune(conn, now + timedelta(days=30, seconds=1)) == 1
    assert outbox(conn) == []
