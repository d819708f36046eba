"""A runtime's last evaluator passes ride on its snapshot row (issue 12, the runtimes
page's "last passes"): when, how long, how many were due, fired, skipped with an error.
Expected counts are worked out by hand from the registered schedules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from engine_helpers import at, force
from psycopg.types.json import Jsonb

from awa_tui.engine.client import Client
from awa_tui.engine.read.models import PassSummary
from awa_tui.engine.read.passes import PASSES_KEPT, from_json


def test_snapshot_carries_the_last_passes_newest_first(client: Client, conn: psycopg.Connection[Any],
                                                       register: Any) -> None:
    # Every minute, last fired at 00:00: at 00:03 three minutes are missed; coalesce fires once.
    register("minutely", "* * * * *", last="2025-01-01T00:00:00")
    # Daily at noon, last fired today at noon: not due at 00:03 nor 00:04.
    register("noon", "0 12 * * *", last="2024-12-31T12:00:00")
    # 00:03: both examined (minutely due; noon has no next fire stored yet, so it is looked at
    # to store one), one job; 00:03:30: both next fires are stored and later, nothing examined.
    client.evaluate(now=at("2025-01-01T00:03:00"))
    client.evaluate(now=at("2025-01-01T00:03:30"))
    client.runtime.snapshot(is_leader=True, now=at("2025-01-01T00:03:31"))

    [row] = client.reads.list_runtimes(now=at("2025-01-01T00:03:31"))
    assert [(p.at, p.due, p.fired, p.errors) for p in row.passes] == [
        (at("2025-01-01T00:03:30"), 0, 0, 0),
        (at("2025-01-01T00:03:00"), 2, 1, 0),
    ]
    assert all(p.duration_ms >= 0 for p in row.passes)
    # What the row holds is exactly that list (the oracle: the column, read directly).
    stored = conn.execute("SELECT recent_passes FROM awa.runtime_instances").fetchone()["recent_passes"]
    assert [(p["at"], p["due"], p["fired"], p["errors"]) for p in stored] == [
        ("2025-01-01T00:03:30+00:00", 0, 0, 0), ("2025-01-01T00:03:00+00:00", 2, 1, 0)]


def test_only_the_last_passes_are_kept(client: Client, register: Any) -> None:
    register("minutely", "* * * * *", last="2025-01-01T00:00:00")
    start = at("2025-01-01T00:01:00")
    for minute in range(PASSES_KEPT + 3):
        client.evaluate(now=start + timedelta(minutes=minute))
    client.runtime.snapshot(now=start + timedelta(minutes=PASSES_KEPT + 3))
    [row] = client.reads.list_runtimes(now=start + timedelta(minutes=PASSES_KEPT + 3))
    assert PASSES_KEPT == 10
    # 13 passes, one fire each (00:01 .. 00:13); the last 10, newest first: 00:13 .. 00:04.
    assert [p.at for p in row.passes] == [start + timedelta(minutes=m) for m in range(12, 2, -1)]
    assert {(p.due, p.fired) for p in row.passes} == {(1, 1)}


def test_a_hand_edited_passes_value_never_breaks_the_runtimes_page(client: Client,
                                                                   conn: psycopg.Connection[Any]) -> None:
    client.runtime.snapshot(now=at("2025-01-01T00:00:00"))
    good = {"at": "2025-01-01T00:00:00+00:00", "duration_ms": 2.5, "due": 3, "fired": 2, "errors": 1}
    bad = ["text", {"at": "yesterday"}, {**good, "due": -1}, {**good, "at": "2025-01-01T00:00:00"},
           {**good, "fired": True}, {**good, "duration_ms": "slow"}]
    force(conn, "UPDATE awa.runtime_instances SET recent_passes = %s", (Jsonb([*bad, good]),))
    [row] = client.reads.list_runtimes(now=at("2025-01-01T00:00:01"))
    assert row.passes == (PassSummary(at=datetime(2025, 1, 1, tzinfo=UTC), duration_ms=2.5, due=3, fired=2,
                                      errors=1),)
    assert from_json({"not": "a list"}) == ()


def test_a_timed_out_pass_and_its_blockers_round_trip_and_bad_blockers_are_left_out() -> None:
    from awa_tui.engine.read.models import Blocker
    from awa_tui.engine.read.passes import to_json

    blocker = Blocker(pid=4242, user="alice", application="psql", state="idle in transaction",
                      kind="LOCK TABLE awa.jobs", waited_for="table awa.jobs")
    timed_out = PassSummary(at=datetime(2025, 1, 1, tzinfo=UTC), duration_ms=2001.5, due=0, fired=0, errors=0,
                            timed_out=True, blockers=(blocker,))
    healthy = PassSummary(at=datetime(2025, 1, 1, 0, 0, 1, tzinfo=UTC), duration_ms=1.0, due=1, fired=1, errors=0)
    stored = to_json((healthy, timed_out))
    assert "timed_out" not in stored[0] and "blockers" not in stored[0]  # a healthy entry stays as small
    assert stored[1]["blockers"] == [{"pid": 4242, "user": "alice", "application": "psql",
                                      "state": "idle in transaction", "kind": "LOCK TABLE awa.jobs",
                                      "waited_for": "table awa.jobs"}]
    assert from_json(stored) == (healthy, timed_out)
    # Hand-edited: a blocker without a pid, one with a number for a kind, one not a dict.
    stored[1]["blockers"] += [{"application": "x", "state": "", "kind": "", "waited_for": ""},
                              {"pid": 1, "application": "x", "state": "", "kind": 5, "waited_for": ""}, "junk"]
    stored[1]["timed_out"] = True
    assert from_json(stored) == (healthy, timed_out)


def test_an_entry_written_before_keeps_its_blocker_but_never_its_statement_text() -> None:
    """Snapshots written by an older runtime carry the blocker's SQL as "query": it is
    read without it (no user, no kind), never shown."""
    from awa_tui.engine.read.models import Blocker

    old = [{"at": "2025-01-01T00:00:00+00:00", "duration_ms": 2001.5, "due": 0, "fired": 0, "errors": 0,
            "timed_out": True, "blockers": [{"pid": 7, "application": "psql", "state": "idle in transaction",
                                             "query": "ALTER ROLE ro1 PASSWORD 'Hunter2-S3cret'",
                                             "waited_for": "table awa.jobs"}]}]
    [entry] = from_json(old)
    assert entry.blockers == (Blocker(pid=7, user="", application="psql", state="idle in transaction", kind="",
                                      waited_for="table awa.jobs"),)


def test_the_pass_timeouts_are_checked_against_the_lease(dsn: str) -> None:
    import pytest

    from awa_tui.engine.core.errors import ValidationError

    client = Client(dsn, leader_lease=timedelta(seconds=1))
    assert (client.lock_timeout, client.statement_timeout) == (timedelta(milliseconds=500), timedelta(seconds=30))
    client.close()
    with pytest.raises(ValidationError, match=r"^lock_timeout: must be between 0.1 s and the leader lease \(5 s\), "
                                              r"got 6 s$"):
        Client(dsn, lock_timeout=timedelta(seconds=6))
    with pytest.raises(ValidationError, match=r"^lock_timeout: must be between 0.1 s"):
        Client(dsn, lock_timeout=timedelta(milliseconds=50))
    with pytest.raises(ValidationError, match=r"^statement_timeout: must be between the lock timeout \(2 s\) and "
                                              r"600 s, got 1 s$"):
        Client(dsn, statement_timeout=timedelta(seconds=1))
    with pytest.raises(ValidationError, match=r"^statement_timeout: expected a timedelta, got 30$"):
        Client(dsn, statement_timeout=30)  # type: ignore[arg-type]


def test_cli_run_refuses_bad_pass_timeouts_in_one_line(dsn: str) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("AWA_DATABASE_URL", "DATABASE_URL")}
    for args, message in (
        (("--lock-timeout", "6"), "--lock-timeout: must be between 0.1 s and --leader-lease (5 s), got 6 s"),
        (("--lock-timeout", "nan"), "--lock-timeout: must be a positive number of seconds, got nan"),
        (("--statement-timeout", "1"),
         "--statement-timeout: must be between the lock timeout (2 s) and 600 s, got 1 s"),
        (("--leader-lease", "10", "--lock-timeout", "8", "--statement-timeout", "-1"),
         "--statement-timeout: must be a positive number of seconds, got -1"),
    ):
        result = subprocess.run([sys.executable, "-m", "awa_tui", "run", "--demo", "--dsn", dsn, *args],
                                capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
        assert (result.returncode, result.stderr) == (1, f"error: {message}\n")
