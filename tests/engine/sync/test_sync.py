"""S5 additive sync and S6 removal."""

from __future__ import annotations

from typing import Any

import psycopg
from engine_helpers import at, force, schedule_row
from psycopg.rows import dict_row

from awa_tui import Client
from awa_tui.engine.sync.writer import sync_schedules

# Columns sync must never write, with distinctive values set by hand.
KEPT = {
    "created_at": at("2024-01-01T00:00:00"),
    "last_enqueued_at": at("2024-06-01T12:00:00"),
    "paused_at": at("2024-06-02T00:00:00"),
    "paused_by": "ops@host",
}


def _pin_state(conn: psycopg.Connection[Any], name: str) -> None:
    force(
        conn,
        "UPDATE awa.cron_jobs SET created_at = %(created_at)s, last_enqueued_at = %(last_enqueued_at)s, "
        "paused_at = %(paused_at)s, paused_by = %(paused_by)s, updated_at = '2024-01-01T00:00:00Z' "
        "WHERE name = %(name)s",
        {**KEPT, "name": name},
    )


def _deploy(dsn: str, *definitions: tuple[str, str, dict[str, Any]]) -> Client:
    """A fresh process registering `definitions` (name, cron, extra kwargs)."""
    client = Client(dsn, operator="deployer@test")
    for name, cron_expr, extra in definitions:
        client.periodic(name, cron_expr, "test.job", **extra)
    return client


def test_steady_state_sync_writes_no_rows(dsn: str, conn: psycopg.Connection[Any]) -> None:
    client = _deploy(dsn, ("a", "* * * * *", {}), ("b", "0 * * * *", {"args": {"x": 1}, "tags": ["t"]}))
    assert client.sync() == {"inserted": 2, "updated": 0}
    before = {n: schedule_row(conn, n) for n in ("a", "b")}
    assert client.sync() == {"inserted": 0, "updated": 0}
    again = _deploy(dsn, ("b", "0 * * * *", {"args": {"x": 1}, "tags": ["t"]}), ("a", "* * * * *", {}))
    assert again.sync() == {"inserted": 0, "updated": 0}
    after = {n: schedule_row(conn, n) for n in ("a", "b")}
    assert after == before  # xmin included: not even a no-op row version was written
    client.close()
    again.close()


def test_definition_change_bumps_updated_at_only(dsn: str, conn: psycopg.Connection[Any]) -> None:
    first = _deploy(dsn, ("job", "* * * * *", {"args": {"v": 1}}))
    first.sync()
    _pin_state(conn, "job")
    before = schedule_row(conn, "job")
    changed = _deploy(dsn, ("job", "*/5 * * * *", {
        "args": {"v": 2}, "timezone": "Europe/Paris", "queue": "q2", "priority": 3, "max_attempts": 7,
        "tags": ["new"], "metadata": {"m": True}, "missed_fire_policy": "catch_up",
    }))
    assert changed.sync() == {"inserted": 0, "updated": 1}
    after = schedule_row(conn, "job")
    assert {k: after[k] for k in KEPT} == KEPT
    assert after["updated_at"] > before["updated_at"]
    assert {k: after[k] for k in changed.schedules[0].definition()} == changed.schedules[0].definition()
    first.close()
    changed.close()


def test_sync_never_deletes_and_redeploy_keeps_the_pause(
    dsn: str, client: Client, conn: psycopg.Connection[Any]
) -> None:
    other = _deploy(dsn, ("theirs", "0 0 * * *", {}), ("shared", "* * * * *", {}))
    other.sync()
    client.actions.pause("shared", operator="ops@host")
    paused = schedule_row(conn, "shared")
    mine = _deploy(dsn, ("mine", "0 * * * *", {}), ("shared", "* * * * *", {"args": {"redeployed": True}}))
    assert mine.sync() == {"inserted": 1, "updated": 1}
    names = [r["name"] for r in conn.execute("SELECT name FROM awa.cron_jobs ORDER BY name")]
    assert names == ["mine", "shared", "theirs"]
    after = schedule_row(conn, "shared")
    assert (after["paused_at"], after["paused_by"]) == (paused["paused_at"], "ops@host")
    assert after["args"] == {"redeployed": True}
    other.close()
    mine.close()


def test_owned_and_retired_rows_are_not_changed(dsn: str, conn: psycopg.Connection[Any]) -> None:
    first = _deploy(dsn, ("owned", "* * * * *", {}), ("retired", "* * * * *", {}), ("plain", "* * * * *", {}))
    first.sync()
    force(conn, "UPDATE awa.cron_jobs SET owner = 'billing' WHERE name = 'owned'")
    force(
        conn,
        "UPDATE awa.cron_jobs SET retired_at = '2025-01-01T00:00:00Z', retired_by = 'ops' WHERE name = 'retired'",
    )
    before = {n: schedule_row(conn, n) for n in ("owned", "retired")}
    redeploy = _deploy(
        dsn,
        ("owned", "0 0 * * *", {"args": {"new": 1}}),
        ("retired", "0 0 * * *", {"queue": "elsewhere"}),
        ("plain", "0 0 * * *", {}),
    )
    assert redeploy.sync() == {"inserted": 0, "updated": 1}  # only the unowned, live row
    assert {n: schedule_row(conn, n) for n in ("owned", "retired")} == before
    assert schedule_row(conn, "plain")["cron_expr"] == "0 0 * * *"
    first.close()
    redeploy.close()


def test_removed_schedule_comes_back_at_the_next_sync(client: Client, conn: psycopg.Connection[Any]) -> None:
    client.periodic("comeback", "* * * * *", "test.job")
    client.sync()
    force(conn, "UPDATE awa.cron_jobs SET last_enqueued_at = '2025-01-01T00:00:00Z' WHERE name = 'comeback'")
    removed = client.actions.remove("comeback", operator="ops@host")
    assert removed.name == "comeback"
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone() == {"n": 0}
    assert client.sync() == {"inserted": 1, "updated": 0}
    row = schedule_row(conn, "comeback")
    assert (row["cron_expr"], row["last_enqueued_at"], row["paused_at"]) == ("* * * * *", None, None)


def test_steady_state_sync_locks_no_rows(
    client: Client, dsn: str, conn: psycopg.Connection[Any], register: Any
) -> None:
    """A sync in flight (here: left uncommitted) must not make the leader skip a fire."""
    register("tick", "* * * * *", last="2025-01-01T00:00:00")
    with psycopg.connect(dsn, row_factory=dict_row) as other:  # a transaction left open
        assert sync_schedules(other, client.schedules) == {"inserted": 0, "updated": 0}
        result = client.evaluate(now=at("2025-01-01T00:01:00"))
        assert ([j.fire_time for j in result.jobs], result.lost_races) == (["2025-01-01T00:01:00Z"], 0)
        other.rollback()
