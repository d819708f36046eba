"""Audit search: by operator, action, target and time span, newest first, paged by id."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from cli_helpers import awa, awa_json, one_line_error

from awa_tui import Client
from awa_tui.engine.core.errors import ValidationError


@pytest.fixture
def trail(client: Client, conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    for name in ("alpha", "beta"):
        client.periodic(name, "0 * * * *", "test.job")
    client.sync()
    client.actions.pause("alpha", operator="ops-ann")
    client.actions.pause("beta", operator="ops-bob")
    client.actions.resume("alpha", operator="ops-ann")
    client.actions.trigger("beta", operator="ops-ann")
    return conn.execute(
        "SELECT id, at, operator, action, target FROM awa.audit_log WHERE operator LIKE 'ops-%' ORDER BY id"
    ).fetchall()


def test_filters(client: Client, trail: list[dict[str, Any]]) -> None:
    assert [r["action"] for r in trail] == ["pause", "pause", "resume", "trigger"]
    by_ann = client.reads.search_audit(operator="ops-ann")
    assert [(e.action, e.target) for e in by_ann.entries] == [("trigger", "beta"), ("resume", "alpha"),
                                                              ("pause", "alpha")]
    assert [e.target for e in client.reads.search_audit(action="pause").entries] == ["beta", "alpha"]
    assert [e.action for e in client.reads.search_audit(target="beta", operator="ops-ann").entries] == ["trigger"]
    span = client.reads.search_audit(since=trail[1]["at"], until=trail[2]["at"], operator=None)
    assert [e.id for e in span.entries if e.operator.startswith("ops-")] == [
        r["id"] for r in reversed(trail) if trail[1]["at"] <= r["at"] <= trail[2]["at"]]


def test_paging(client: Client, trail: list[dict[str, Any]]) -> None:
    first = client.reads.search_audit(operator="ops-ann", limit=2)
    assert [e.id for e in first.entries] == [trail[3]["id"], trail[2]["id"]]
    assert first.next_before_id == trail[2]["id"]
    second = client.reads.search_audit(operator="ops-ann", limit=2, before_id=first.next_before_id)
    assert ([e.id for e in second.entries], second.next_before_id) == ([trail[0]["id"]], None)


def test_reversed_range_is_refused(client: Client) -> None:
    from datetime import UTC, datetime

    with pytest.raises(ValidationError, match=r"^range: since 2025-01-02T00:00:00\+00:00 is after until"):
        client.reads.search_audit(since=datetime(2025, 1, 2, tzinfo=UTC), until=datetime(2025, 1, 1, tzinfo=UTC))


def test_cli(dsn: str, trail: list[dict[str, Any]]) -> None:
    rows = awa_json("audit", "--operator", "ops-ann", "--action", "pause", "--since", "1h", "--dsn", dsn)
    assert [(r["id"], r["target"]) for r in rows] == [(trail[0]["id"], "alpha")]
    assert awa_json("audit", "--operator", "ops-ann", "--until", "2000-01-01T00:00:00Z", "--dsn", dsn) == []
    text = awa("audit", "--operator", "ops-ann", "--limit", "1", "--dsn", dsn).stdout
    assert text.rstrip().endswith(f"older entries: --before-id {trail[3]['id']}")
    assert one_line_error(awa("audit", "--since", "2025-01-02T00:00:00Z", "--until", "2025-01-01T00:00:00Z",
                              "--dsn", dsn)) == (
        "error: --since 2025-01-02T00:00:00+00:00 is after --until 2025-01-01T00:00:00+00:00: the range is reversed")
    assert one_line_error(awa("audit", "--since", "last week", "--dsn", dsn)) == (
        "error: --since: expected a duration (90s, 2h, 14d), today, yesterday or an ISO-8601 instant, got 'last week'")


def test_cli_day_words(dsn: str, conn: psycopg.Connection[Any]) -> None:
    """--since yesterday --until today: yesterday's entries in UTC, at the database's clock
    (entries written at instants relative to its midnight, so any time of day holds)."""
    midnight = "(date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')"
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")  # stored as written (fixed `at`)
        for target, offset in (("two-days-ago", "-25 hours"), ("yesterday-start", "-24 hours"),
                               ("yesterday-late", "-1 minute"), ("today-start", "0 hours")):
            conn.execute(f"INSERT INTO awa.audit_log (at, operator, action, target) "
                         f"VALUES ({midnight} + interval '{offset}', 'ops-day', 'pause', %s)", (target,))
    rows = awa_json("audit", "--operator", "ops-day", "--since", "yesterday", "--until", "today", "--dsn", dsn)
    assert [r["target"] for r in rows] == ["today-start", "yesterday-late", "yesterday-start"]
    rows = awa_json("audit", "--operator", "ops-day", "--since", "today", "--dsn", dsn)
    assert [r["target"] for r in rows] == ["today-start"]
    rows = awa_json("audit", "--operator", "ops-day", "--until", "yesterday", "--dsn", dsn)
    assert [r["target"] for r in rows] == ["yesterday-start", "two-days-ago"]
