"""S71: silences of an owner's schedules and of the schedules a filter selects, with an
end and a reason, audited: waiting alerts are silenced at once, later ones when the
deliverer claims them (nothing sent to the real receiver); bad input is one line and
nothing is stored."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from engine_helpers import at, force
from health_helpers import register
from http_receiver import Receiver

from awa_tui.engine.alerts.deliver import Deliverer
from awa_tui.engine.core.errors import AwaError, NotFound, ValidationError

NOW = at("2025-01-01T00:10:00")


def states(conn: psycopg.Connection[Any]) -> list[tuple[str, str, str]]:
    rows = conn.execute(
        "SELECT o.name, o.to_health, d.state FROM awa.alert_deliveries d "
        "JOIN awa.alert_outbox o ON o.id = d.outbox_id ORDER BY o.id").fetchall()
    return [(r["name"], r["to_health"], r["state"]) for r in rows]


def fail(conn: psycopg.Connection[Any], *names: str, when: Any = NOW) -> None:
    for name in names:
        conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health) "
                     "VALUES (%s, %s, 'ok', 'failing')", (name, when))


@pytest.fixture
def fleet_of_three(client: Any, conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    """billing-a (owner billing, tag nightly), billing-b (owner billing), ops-c (owner ops,
    tag nightly); a webhook sink to a real receiver."""
    for name in ("billing-a", "billing-b", "ops-c"):
        register(client, conn, name, "* * * * *", at("2025-01-01T00:00:00"))
    force(conn, "UPDATE awa.cron_jobs SET owner = split_part(name, '-', 1)")
    force(conn, "UPDATE awa.cron_jobs SET tags = '{nightly}' WHERE name IN ('billing-a', 'ops-c')")
    monkeypatch.setenv("AWA_TEST_HOOK_KEY", "k")
    receiver = Receiver()
    client.actions.add_alert_sink("hook", "webhook", url=f"{receiver.url}/hook", key_env="AWA_TEST_HOOK_KEY")
    yield receiver
    receiver.close()


def test_s71_an_owner_silence_covers_its_schedules_waiting_and_later_and_is_audited(
        client: Any, conn: psycopg.Connection[Any], fleet_of_three: Receiver) -> None:
    fail(conn, "billing-a", "ops-c")
    done = client.actions.silence_alerts(None, timedelta(hours=1), "billing deploy", owner="billing",
                                         operator="alice", now=NOW)
    assert (done.name, done.owner, done.filter, done.until, done.silenced, done.target) == (
        None, "billing", None, at("2025-01-01T01:10:00"), 1, "owner billing")
    fail(conn, "billing-b", when=at("2025-01-01T00:20:00"))  # during the silence
    round_ = Deliverer().round(conn, at("2025-01-01T00:20:01"))
    assert [(s.sink, s.alerts, s.delivered) for s in round_.sinks] == [("hook", 1, True)]
    assert [a["schedule"] for b in fleet_of_three.bodies() for a in b["alerts"]] == ["ops-c"]
    assert states(conn) == [("billing-a", "failing", "silenced"), ("ops-c", "failing", "delivered"),
                            ("billing-b", "failing", "silenced")]
    audit = conn.execute("SELECT target, operator, after FROM awa.audit_log WHERE action = 'alert_silence'").fetchall()
    assert [(r["target"], r["operator"], r["after"]["owner"], r["after"]["reason"]) for r in audit] == [
        ("owner:billing", "alice", "billing", "billing deploy")]
    assert [(s.owner, s.reason) for s in client.reads.silences(now=NOW)] == [("billing", "billing deploy")]


def test_s71_a_filter_silence_covers_what_the_filter_selects_when_delivered(
        client: Any, conn: psycopg.Connection[Any], fleet_of_three: Receiver) -> None:
    done = client.actions.silence_alerts(None, timedelta(hours=1), "nightly noise", filter="tag:nightly",
                                         operator="bob", now=NOW)
    assert (done.filter, done.silenced) == ("tag:nightly", 0)
    fail(conn, "billing-a", "billing-b", "ops-c", when=at("2025-01-01T00:30:00"))
    Deliverer().round(conn, at("2025-01-01T00:30:01"))
    assert [a["schedule"] for b in fleet_of_three.bodies() for a in b["alerts"]] == ["billing-b"]
    assert states(conn) == [("billing-a", "failing", "silenced"), ("billing-b", "failing", "delivered"),
                            ("ops-c", "failing", "silenced")]
    # After its end a schedule it selected is alerted again.
    fail(conn, "ops-c", when=at("2025-01-01T01:10:00"))
    Deliverer().round(conn, at("2025-01-01T01:10:01"))
    assert [a["schedule"] for b in fleet_of_three.bodies() for a in b["alerts"]] == ["billing-b", "ops-c"]
    audit = conn.execute("SELECT target FROM awa.audit_log WHERE action = 'alert_silence'").fetchall()
    assert [r["target"] for r in audit] == ["filter:tag:nightly"]


@pytest.mark.parametrize(("kwargs", "until", "error", "message"), [
    ({"owner": "nobody"}, timedelta(hours=1), NotFound, "unknown owner 'nobody'"),
    ({"filter": "tag:"}, timedelta(hours=1), ValidationError, None),
    ({"filter": "   "}, timedelta(hours=1), ValidationError,
     "filter: an empty filter would silence every schedule; give terms"),
    ({"owner": "billing"}, timedelta(seconds=-1), ValidationError,
     "until: 2025-01-01T00:09:59+00:00 is not in the future (now 2025-01-01T00:10:00+00:00)"),
    ({"owner": "billing", "filter": "tag:nightly"}, timedelta(hours=1), ValidationError,
     "silence: name one schedule, or --owner, or --filter (exactly one)"),
])
def test_s71_a_bad_owner_or_filter_silence_is_one_line_and_stores_nothing(
        client: Any, conn: psycopg.Connection[Any], fleet_of_three: Receiver, kwargs: dict[str, str],
        until: timedelta, error: type[AwaError], message: str | None) -> None:
    from awa_tui.filters import parse

    if message is None:  # the filter grammar's own words for it
        with pytest.raises(ValidationError) as expected:
            parse(kwargs["filter"], "schedules")
        message = str(expected.value)
    with pytest.raises(error) as refused:
        client.actions.silence_alerts(None, until, "x", now=NOW, **kwargs)
    assert str(refused.value) == message and "\n" not in message
    assert conn.execute("SELECT count(*) AS n FROM awa.alert_silences").fetchone()["n"] == 0
    assert conn.execute("SELECT count(*) AS n FROM awa.audit_log WHERE action = 'alert_silence'").fetchone()["n"] == 0
