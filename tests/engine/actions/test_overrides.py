"""Issue 16: operator overrides. Code stays the source of truth: sync never clobbers an
override, reset returns to the code definition, the fire path and the hint use the
effective definition, and every change is audited with before/after."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest
from engine_helpers import at, fire_times, force, schedule_row

from awa_tui import Client
from awa_tui.engine.actions.overrides import OverrideRequest
from awa_tui.engine.core.errors import Conflict, ValidationError


def _deploy(dsn: str, cron: str = "0 * * * *", **extra: Any) -> Client:
    client = Client(dsn, operator="deployer@test")
    client.periodic("billing.invoices", cron, "k", args={"v": 1}, **extra)
    client.sync()
    return client


def _definition(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    row = schedule_row(conn, "billing.invoices")
    return {k: row[k] for k in ("cron_expr", "cron_written", "timezone", "args", "queue", "priority", "overridden")}


CODE = {"cron_expr": "0 * * * *", "cron_written": None, "timezone": "UTC", "args": {"v": 1}, "queue": "default",
        "priority": 2, "overridden": None}


def test_override_survives_sync_and_restart_and_reset_restores_code(dsn: str, conn: Any) -> None:
    first = _deploy(dsn)
    after = first.actions.override("billing.invoices", OverrideRequest(
        cron="*/15 * * * *", timezone="Europe/Paris", args={"v": 9}, queue="urgent", priority=1), operator="alice@ops")
    assert (after.cron_expr, after.queue, after.priority) == ("*/15 * * * *", "urgent", 1)
    overridden = {"cron_expr": "*/15 * * * *", "cron_written": None, "timezone": "Europe/Paris", "args": {"v": 9},
                  "queue": "urgent", "priority": 1,
                  "overridden": {"cron_expr": "0 * * * *", "timezone": "UTC", "args": {"v": 1},
                                 "queue": "default", "priority": 2}}
    assert _definition(conn) == overridden
    assert first.sync() == {"inserted": 0, "updated": 0}  # same code: nothing to write
    first.close()
    # A restart with the same code, then a deploy that changes the code's queue and kind.
    assert _deploy(dsn).sync() == {"inserted": 0, "updated": 0}
    assert _definition(conn) == overridden
    changed = Client(dsn, operator="deployer@test")
    changed.periodic("billing.invoices", "0 * * * *", "k2", args={"v": 1}, queue="bulk")
    assert changed.sync() == {"inserted": 0, "updated": 1}
    row = schedule_row(conn, "billing.invoices")
    assert row["kind"] == "k2"  # not overridden: code wins
    assert _definition(conn) == {**overridden, "overridden": {**overridden["overridden"], "queue": "bulk"}}
    reset = changed.actions.reset_override("billing.invoices", operator="alice@ops")
    assert (reset.cron_expr, reset.queue, reset.overridden) == ("0 * * * *", "bulk", None)
    assert _definition(conn) == {**CODE, "queue": "bulk"}
    assert changed.sync() == {"inserted": 0, "updated": 0}
    changed.close()
    audit = [(e.action, e.operator, e.before, e.after) for e in changed.reads.list_audit("billing.invoices")][::-1]
    assert [a[:2] for a in audit] == [("override", "alice@ops"), ("sync_definition", "awa-sync"),
                                     ("override_reset", "alice@ops")]
    assert audit[0][2] == {"cron_expr": "0 * * * *", "timezone": "UTC", "args": {"v": 1}, "queue": "default",
                           "priority": 2, "overridden": None}
    assert audit[0][3] == {k: overridden[k] for k in audit[0][2]}
    assert audit[2][2]["queue"] == "urgent" and audit[2][3]["queue"] == "bulk"


def test_the_fire_path_and_the_hint_use_the_effective_definition(dsn: str, conn: Any) -> None:
    client = _deploy(dsn)
    force(conn, "UPDATE awa.cron_jobs SET created_at = %s, next_fire_at = NULL", (at("2025-01-01T00:05:00"),))
    assert client.evaluate(now=at("2025-01-01T00:30:00")).jobs == []
    assert schedule_row(conn, "billing.invoices")["next_fire_at"] == at("2025-01-01T01:00:00")
    client.actions.override("billing.invoices", OverrideRequest(cron="*/15 * * * *", queue="urgent"),
                            operator="alice@ops")
    assert schedule_row(conn, "billing.invoices")["next_fire_at"] is None  # recomputed from the override
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:45:00")).jobs] == ["2025-01-01T00:45:00Z"]
    assert schedule_row(conn, "billing.invoices")["next_fire_at"] == at("2025-01-01T01:00:00")
    job = conn.execute("SELECT queue FROM awa.jobs").fetchone()
    assert job == {"queue": "urgent"}
    assert [f.utc for f in client.reads.next_fires("billing.invoices", 2, after=at("2025-01-01T01:00:00"))] == [
        at("2025-01-01T01:15:00"), at("2025-01-01T01:30:00")]
    client.actions.reset_override("billing.invoices", operator="alice@ops")
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T01:14:00")).jobs] == ["2025-01-01T01:00:00Z"]
    assert client.evaluate(now=at("2025-01-01T01:59:59")).jobs == []  # hourly again: no 01:15, 01:30...
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T02:00:00")).jobs] == ["2025-01-01T02:00:00Z"]
    assert fire_times(conn, "billing.invoices") == [
        "2025-01-01T00:45:00Z", "2025-01-01T01:00:00Z", "2025-01-01T02:00:00Z"]
    client.close()


def test_override_with_h_stores_the_resolved_and_the_written(dsn: str, conn: Any) -> None:
    client = _deploy(dsn)
    client.actions.override("billing.invoices", OverrideRequest(cron="H/15 * * * *"), operator="alice@ops")
    definition = _definition(conn)
    assert (definition["cron_expr"], definition["cron_written"]) == ("9,24,39,54 * * * *", "H/15 * * * *")
    assert definition["overridden"] == {"cron_expr": "0 * * * *", "cron_written": None}
    client.actions.reset_override("billing.invoices", operator="alice@ops")
    assert _definition(conn) == CODE
    client.close()


def test_setting_a_value_back_to_the_code_ends_that_override(dsn: str, conn: Any) -> None:
    client = _deploy(dsn)
    client.actions.override("billing.invoices", OverrideRequest(queue="urgent", priority=4), operator="alice@ops")
    client.actions.override("billing.invoices", OverrideRequest(queue="default"), operator="alice@ops")
    assert _definition(conn) == {**CODE, "priority": 4, "overridden": {"priority": 2}}
    client.actions.override("billing.invoices", OverrideRequest(priority=2), operator="alice@ops")
    assert _definition(conn) == CODE
    client.close()


@pytest.mark.parametrize(("request_", "message"), [
    (OverrideRequest(cron="61 * * * *"), "cron_expr: invalid expression '61 * * * *': 61 is out of range"),
    (OverrideRequest(cron="H(5-1) * * * *"), "cron_expr: empty or out-of-range H range 'H(5-1)' in the minute field"),
    (OverrideRequest(timezone="Mars/Base"), "timezone: unknown time zone 'Mars/Base'"),
    (OverrideRequest(priority=9), "priority: must be an integer 1..4, got 9"),
    (OverrideRequest(queue=""), "queue: must be 1..200 characters, got '' (0 characters)"),
    (OverrideRequest(args=[1]), "args: must be a JSON object (dict), got [1]"),  # type: ignore[arg-type]
    (OverrideRequest(), "override: nothing to change; give a cron expression, time zone, args, queue or priority"),
    (OverrideRequest(cron="* * * * *"),
     "jitter: 0:02:00 must be shorter than the shortest period 0:01:00 of '* * * * *'"),
])
def test_an_override_that_would_not_validate_writes_nothing(
    dsn: str, conn: Any, request_: OverrideRequest, message: str
) -> None:
    client = _deploy(dsn, jitter=timedelta(minutes=2))
    before = schedule_row(conn, "billing.invoices")
    with pytest.raises(ValidationError) as info:
        client.actions.override("billing.invoices", request_, operator="alice@ops")
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    assert schedule_row(conn, "billing.invoices") == before
    assert client.reads.list_audit("billing.invoices") == []
    client.close()


def test_reset_of_a_row_not_overridden_and_override_of_a_retired_row_conflict(dsn: str, conn: Any) -> None:
    client = _deploy(dsn)
    with pytest.raises(Conflict, match=r"^schedule 'billing.invoices' is not overridden$"):
        client.actions.reset_override("billing.invoices", operator="alice@ops")
    with pytest.raises(Conflict, match="already has these values"):
        client.actions.override("billing.invoices", OverrideRequest(queue="default"), operator="alice@ops")
    force(conn, "UPDATE awa.cron_jobs SET retired_at = now(), retired_by = 'x'")
    with pytest.raises(Conflict, match="is retired; restore it before overriding it"):
        client.actions.override("billing.invoices", OverrideRequest(queue="urgent"), operator="alice@ops")
    client.close()
