"""S21: runtime snapshot rows and freshness in DB time."""

from __future__ import annotations

import os
import socket
from datetime import timedelta
from typing import Any

import pytest

from awa_tui import Client, __version__
from awa_tui.engine.ownership.manifest import PROTOCOL_VERSION


def _row(conn: Any, client: Client) -> dict[str, Any]:
    row = conn.execute(
        "SELECT * FROM awa.runtime_instances WHERE instance_id = %s", (client.identity.instance_id,)
    ).fetchone()
    assert row is not None
    return row


def test_snapshot_row_fields(client: Client, conn: Any) -> None:
    before = conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
    client.runtime.snapshot(is_leader=True)
    first = _row(conn, client)
    after = conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
    assert {k: first[k] for k in (
        "hostname", "pid", "version", "protocol_version", "snapshot_interval", "is_leader", "health", "stopped_at",
    )} == {
        "hostname": socket.gethostname(), "pid": os.getpid(), "version": __version__,
        "protocol_version": PROTOCOL_VERSION, "snapshot_interval": timedelta(seconds=10), "is_leader": True,
        "health": "healthy", "stopped_at": None,
    }
    assert before <= first["started_at"] == first["last_seen_at"] <= after
    client.runtime.snapshot(is_leader=False)
    second = _row(conn, client)
    assert second["started_at"] == first["started_at"]
    assert second["last_seen_at"] > first["last_seen_at"]
    assert second["is_leader"] is False
    client.runtime.snapshot(is_leader=False, stopped=True)
    final = _row(conn, client)
    assert (final["health"], final["is_leader"]) == ("stopped", False)
    assert final["stopped_at"] == final["last_seen_at"]


@pytest.mark.parametrize(
    ("interval_s", "age_s", "fresh"),
    [
        (10, 0, True), (10, 29, True), (10, 31, False),  # max(30 s, 3 x 10 s) = 30 s
        (1, 29, True), (1, 31, False),  # 30 s floor
        (20, 59, True), (20, 61, False),  # 3 x 20 s = 60 s
    ],
)
def test_freshness_is_max_30s_or_three_intervals_in_db_time(
    dsn: str, conn: Any, interval_s: int, age_s: int, fresh: bool
) -> None:
    client = Client(dsn, snapshot_interval=timedelta(seconds=interval_s))
    client.runtime.snapshot()
    conn.execute(
        "UPDATE awa.runtime_instances SET last_seen_at = now() - make_interval(secs => %s) WHERE instance_id = %s",
        (age_s, client.identity.instance_id),
    )
    rows = client.reads.list_runtimes()
    assert [(r.instance_id, r.fresh) for r in rows] == [(client.identity.instance_id, fresh)]
    client.close()


def test_a_stopped_runtime_is_not_fresh(client: Client) -> None:
    client.runtime.snapshot(stopped=True)
    assert [r.fresh for r in client.reads.list_runtimes()] == [False]


def test_read_only_client_writes_no_snapshot(dsn: str, conn: Any) -> None:
    observer = Client(dsn, read_only=True)
    observer.runtime.snapshot()
    assert conn.execute("SELECT count(*) AS n FROM awa.runtime_instances").fetchone() == {"n": 0}
    observer.close()


def test_rows_of_runtimes_gone_for_over_a_day_are_pruned_and_recent_ones_kept(dsn, conn, client):
    runtimes = {label: Client(dsn, operator="tester@test") for label in ("stopped-old", "silent-old", "stopped-new")}
    for runtime in runtimes.values():
        runtime.runtime.snapshot()
    ids = {label: runtime.identity.instance_id for label, runtime in runtimes.items()}
    conn.execute(
        "UPDATE awa.runtime_instances SET stopped_at = now() - interval '25 hours' WHERE instance_id = %s",
        (ids["stopped-old"],),
    )
    conn.execute(
        "UPDATE awa.runtime_instances SET last_seen_at = now() - interval '25 hours' WHERE instance_id = %s",
        (ids["silent-old"],),
    )
    conn.execute(
        "UPDATE awa.runtime_instances SET stopped_at = now() - interval '23 hours' WHERE instance_id = %s",
        (ids["stopped-new"],),
    )

    assert client.runtime.prune_runtimes() == 2
    left = {r["instance_id"] for r in conn.execute("SELECT instance_id FROM awa.runtime_instances").fetchall()}
    assert left == {ids["stopped-new"]}
    for runtime in runtimes.values():
        runtime.db.close_all()
