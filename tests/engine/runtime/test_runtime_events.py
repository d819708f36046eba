"""A runtime's recent events in its snapshot row (v034), read back by any console: real
runtimes in this process, a real deposition (the leader's lock session terminated)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from helpers import wait_for

from awa_tui import Client
from awa_tui.engine.read.events import (
    EVENTS_KEPT,
    RecentEvents,
    RuntimeEvent,
    from_json,
    runtime_events,
    to_json,
)


def _runtime(dsn: str, label: str) -> Client:
    client = Client(dsn, operator=f"{label}@test", application_name=f"awa-tui {label}")
    client.periodic("tick", "* * * * * *", "test.tick")
    return client


def _db_now(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("SELECT clock_timestamp() AS t").fetchone()
    assert row is not None
    return row["t"]


def _kinds(conn: psycopg.Connection[Any], client: Client) -> list[tuple[str, str]]:
    found = runtime_events(conn, client.identity.instance_id)
    assert found is not None
    return [(e.kind, e.detail) for e in found.events]


def _term(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT term FROM awa.leader_lease WHERE singleton").fetchone()
    assert row is not None
    return int(row["term"])


def test_a_deposed_leader_shows_became_leader_then_lost_the_lead(dsn: str, conn: psycopg.Connection[Any]) -> None:
    first, second = _runtime(dsn, "first"), _runtime(dsn, "second")
    try:
        before = _db_now(conn)
        first.start(run_worker=False)
        wait_for(lambda: first.is_leader, timeout=5, what="the first runtime to lead")
        term = _term(conn)
        second.start(run_worker=False)
        killed_at = _db_now(conn)
        row = conn.execute("SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity "
                           "WHERE application_name = 'awa-tui first leader'").fetchone()
        assert row == {"killed": True}
        wait_for(lambda: second.is_leader and not first.is_leader, timeout=5, what="the follower to take over")
        # Whichever of its threads saw it first: the elector's renewal on the killed session,
        # or the evaluator's lease check before its next pass.
        lost_details = {f"term {term}: its lock connection failed: terminating connection due to administrator "
                        "command", f"term {term}: stepped down: its lease expired or was taken over"}
        wait_for(lambda: _kinds(conn, first)[0][0] == "lost the lead", timeout=15,
                 what="the deposition in the first's row")
        after = _db_now(conn)
        found = runtime_events(conn, first.identity.instance_id)
        assert found is not None
        lost = (found.events[0].kind, found.events[0].detail)
        assert lost[1] in lost_details
        assert [(e.kind, e.detail) for e in found.events] == [
            lost,
            ("became leader", f"term {term}, lease 5s"),
            ("started", ""),
        ]
        lost_at, became_at, started_at = (e.at for e in found.events)
        # Database times, in the order they happened, within what this test saw of the clock.
        assert before <= started_at <= became_at <= killed_at <= lost_at <= after
        assert found.refusal is None  # the control of the pooler test: a direct runtime refuses nothing
        rows = {r.instance_id: r for r in second.reads.list_runtimes()}
        assert rows[first.identity.instance_id].lead_refusal is None
        wait_for(lambda: _kinds(conn, second)[0][0] == "became leader", timeout=15, what="the second's row")
        assert _kinds(conn, second) == [("became leader", f"term {term + 1}, lease 5s"), ("started", "")]
    finally:
        first.close()
        second.close()
    # A clean stop: released (the second led), stopped; the first only stopped.
    assert _kinds(conn, second) == [("stopped", ""), ("released the lead", f"term {term + 1}: this runtime stopped"),
                                    ("became leader", f"term {term + 1}, lease 5s"), ("started", "")]
    assert _kinds(conn, first)[0] == ("stopped", "")


def test_a_forced_stop_and_a_row_without_events_read_their_start_and_stop(client: Client,
                                                                        conn: psycopg.Connection[Any]) -> None:
    """A row of a release before v034 (no events) or marked stopped by a forced stop: the
    start and stop its own columns record are the events."""
    client.runtime.snapshot()
    client.runtime.mark_stopped()
    row = conn.execute("SELECT started_at, stopped_at FROM awa.runtime_instances WHERE instance_id = %s",
                       (client.identity.instance_id,)).fetchone()
    found = runtime_events(conn, client.identity.instance_id)
    assert found is not None
    assert found.events == (RuntimeEvent(at=row["stopped_at"], kind="stopped"),
                            RuntimeEvent(at=row["started_at"], kind="started"))
    pasted = runtime_events(conn, f" {str(client.identity.instance_id).upper()} ", now=found.now)  # as pasted
    assert pasted == found


def test_an_unknown_or_malformed_id(conn: psycopg.Connection[Any]) -> None:
    assert runtime_events(conn, "6f1c2a9e-0000-4000-8000-00000000ffff") is None
    assert runtime_events(conn, "nope") is None


def test_events_are_pinned_to_db_time_once_and_bounded() -> None:
    ticks = iter([100.0, 103.5, 110.0, 200.0, 250.0])
    events = RecentEvents(kept=2, clock=lambda: next(ticks))
    known = datetime(2025, 3, 8, 11, 0, tzinfo=UTC)
    events.record("became leader", "term 3")  # mono 100
    events.record("pass timed out", "x", at=known)  # mono 103.5, its own DB time
    snap = datetime(2025, 3, 8, 12, 0, tzinfo=UTC)
    assert events.pinned(snap) == (RuntimeEvent(known, "pass timed out", "x"),
                                   RuntimeEvent(snap - timedelta(seconds=10), "became leader", "term 3"))
    # Pinned once: a later snapshot does not move them; the oldest goes past the bound.
    events.record("lost the lead")  # mono 200... and pinned at the same clock reading below
    later = events.pinned(snap + timedelta(minutes=5))
    assert [e.kind for e in later] == ["lost the lead", "pass timed out"]
    assert EVENTS_KEPT == 50


def test_an_event_placed_by_a_later_snapshot_never_goes_before_the_one_ahead_of_it() -> None:
    """`started`, placed by the snapshot right after it (1 ms), then `became leader` 2 ms
    later, placed by a snapshot whose DB time was read 50 ms before it placed the event:
    by the clocks alone it would read 47 ms before `started`; it reads at `started`'s time,
    and a stored row read back keeps them in the order they happened."""
    ticks = iter([100.000, 100.001, 100.003, 100.053])
    events = RecentEvents(clock=lambda: next(ticks))
    first_snapshot = datetime(2025, 3, 8, 12, 0, tzinfo=UTC)
    events.record("started")  # mono 100.000
    assert events.pinned(first_snapshot)[0].at == first_snapshot - timedelta(milliseconds=1)
    events.record("became leader", "term 1")  # mono 100.003
    placed = events.pinned(first_snapshot)  # its DB time read at mono 100.003, placed at 100.053
    assert [(e.kind, e.at) for e in placed] == [("became leader", first_snapshot - timedelta(milliseconds=1)),
                                                 ("started", first_snapshot - timedelta(milliseconds=1))]
    assert [e.kind for e in from_json(to_json(placed))] == ["became leader", "started"]


def test_stored_events_that_are_not_events_are_skipped() -> None:
    good = {"at": "2025-03-08T12:00:00+00:00", "kind": "became leader", "detail": "term 1"}
    assert from_json([good, {"at": "2025-03-08T12:00:00", "kind": "naive"}, {"kind": "no time"},
                      {"at": "x", "kind": "k"}, 7, {"at": "2025-03-08T12:00:01+00:00", "kind": ""}]) == (
        RuntimeEvent(datetime(2025, 3, 8, 12, tzinfo=UTC), "became leader", "term 1"),)
    assert from_json("nope") == ()
    assert to_json(from_json([good])) == [good]


def test_a_pass_that_timed_out_on_a_lock_is_an_event_naming_its_blocker(client: Client, conn: psycopg.Connection[Any],
                                                                        dsn: str) -> None:
    from awa_tui.engine.core.db import connect
    from awa_tui.engine.firing.evaluator import PassTimedOut

    client.periodic("tick", "* * * * * *", "test.tick")
    client.sync()
    locker = connect(dsn, application_name="psql")
    try:
        with locker.transaction():
            locker.execute("LOCK TABLE awa.cron_jobs IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(PassTimedOut) as raised:
                client.evaluate()
        holder = locker.info.backend_pid
    finally:
        locker.close()
    client.runtime.snapshot(is_leader=True)  # the snapshot the runtime writes anyway carries it
    found = runtime_events(conn, client.identity.instance_id)
    assert found is not None
    event = found.events[0]
    assert event.kind == "pass timed out"
    assert re.fullmatch(
        r"gave up: canceling statement due to lock timeout after \d+\.\d s; blocked by session "
        rf"{holder} \(user postgres, psql, idle in transaction\) holding table awa\.cron_jobs: "
        r"LOCK TABLE awa\.cron_jobs",
        event.detail), event.detail
    assert event.at == raised.value.now  # the pass's own DB time
    row = conn.execute("SELECT recent_passes -> 0 ->> 'at' AS at FROM awa.runtime_instances WHERE instance_id = %s",
                       (client.identity.instance_id,)).fetchone()
    assert datetime.fromisoformat(row["at"]) == event.at  # the same pass the passes table shows


def test_passes_timing_out_on_the_same_sessions_are_one_event_counted() -> None:
    """A lock held for a minute times out a pass every second: one event, counted, so the
    bound keeps the leadership events before it. Another blocker, another event."""
    ticks = iter([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    events = RecentEvents(kept=3, clock=lambda: next(ticks))
    t0 = datetime(2025, 3, 8, 12, 0, tzinfo=UTC)
    events.record("became leader", "term 3", at=t0)
    for i in range(1, 4):
        events.record("pass timed out", f"after 2.0 s; blocked by session 42 (pass {i})", at=t0 + timedelta(seconds=i),
                      same="session 42")
    events.record("pass timed out", "after 2.0 s; blocked by session 43", at=t0 + timedelta(seconds=5),
                  same="session 43")
    assert events.pinned(t0 + timedelta(seconds=9)) == (
        RuntimeEvent(t0 + timedelta(seconds=5), "pass timed out", "after 2.0 s; blocked by session 43"),
        RuntimeEvent(t0 + timedelta(seconds=3), "pass timed out",
                     "after 2.0 s; blocked by session 42 (pass 3) (3 in a row, the last at this time)"),
        RuntimeEvent(t0, "became leader", "term 3"),
    )
