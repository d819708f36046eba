"""S50: the steady sync. After a runtime's first sync, a sync compares only the names the
database noted as changed (migration v012) since it last found the table in agreement; in
the steady state that is none, and it writes nothing at all. Whatever a full compare would
put back (a removed row, a hand edit), the next sync still puts back."""

from __future__ import annotations

from typing import Any

import psycopg
from engine_helpers import at, force, schedule_row
from psycopg.rows import dict_row

from awa_tui import Client
from awa_tui.engine.actions.overrides import OverrideRequest
from awa_tui.engine.schedules.columns import DEFINITION
from awa_tui.engine.sync.writer import SyncOutcome, SyncTracker, sync_schedules

DIGEST = "SELECT name, ctid::text AS ctid, xmin::text AS xmin, xmax::text AS xmax FROM awa.cron_jobs ORDER BY name"


def _digest(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Every row's version and lock marker: a written or locked row changes it."""
    return conn.execute(DIGEST).fetchall()


def _deploy(dsn: str, *names: str, **extra: Any) -> Client:
    client = Client(dsn, operator="deployer@test")
    for name in names:
        client.periodic(name, "0 * * * *", "test.job", args={"n": name}, **extra)
    return client


def _notes(conn: psycopg.Connection[Any]) -> list[str | None]:
    return [r["name"] for r in conn.execute("SELECT name FROM awa.cron_jobs_changes ORDER BY xid, name")]


def _last(client: Client) -> SyncOutcome:
    assert client.runtime.sync_tracker.last is not None
    return client.runtime.sync_tracker.last


def test_a_steady_sync_writes_nothing_and_compares_nothing(dsn: str, conn: psycopg.Connection[Any]) -> None:
    client = _deploy(dsn, "a", "b", "c")
    assert client.sync() == {"inserted": 3, "updated": 0}
    assert _last(client) == SyncOutcome("full", 3, 3, 0)
    before = _digest(conn)
    for _ in range(3):
        assert client.sync() == {"inserted": 0, "updated": 0}
        assert _last(client) == SyncOutcome("steady", 0, 0, 0)
        # No transaction id was even assigned: no row version, no row lock, no WAL record.
        assert client.runtime.sync_tracker.seen is not None and client.runtime.sync_tracker.seen.mine is None
    assert _digest(conn) == before
    assert _notes(conn) == []  # inserts are not noted
    client.close()


def test_a_removed_row_comes_back_at_the_next_sync(dsn: str, conn: psycopg.Connection[Any]) -> None:
    client = _deploy(dsn, "a", "b", "c")
    client.sync()
    expected = {k: v for k, v in schedule_row(conn, "b").items() if k in DEFINITION}
    client.actions.remove("b", operator="ops@host")
    assert _notes(conn) == ["b"]
    assert client.sync() == {"inserted": 1, "updated": 0}
    assert _last(client) == SyncOutcome("names", 1, 1, 0)
    assert {k: v for k, v in schedule_row(conn, "b").items() if k in DEFINITION} == expected
    assert client.sync() == {"inserted": 0, "updated": 0}
    assert _last(client) == SyncOutcome("steady", 0, 0, 0)
    client.close()


def test_a_hand_edited_definition_is_restored_and_audited_once(dsn: str, conn: psycopg.Connection[Any]) -> None:
    client = _deploy(dsn, "a", "b")
    client.sync()
    untouched = schedule_row(conn, "a")
    # As an operator with psql would (triggers fire), twice in one transaction.
    with conn.transaction():
        conn.execute("""UPDATE awa.cron_jobs SET args = '{"n": "hand"}', queue = 'q2' WHERE name = 'b'""")
        conn.execute("UPDATE awa.cron_jobs SET priority = 4 WHERE name = 'b'")
    assert client.sync() == {"inserted": 0, "updated": 1}
    assert _last(client) == SyncOutcome("names", 1, 0, 1)
    row = schedule_row(conn, "b")
    assert (row["args"], row["queue"], row["priority"]) == ({"n": "b"}, "default", 2)
    assert schedule_row(conn, "a") == untouched
    audit = [(e.action, e.operator, e.before, e.after) for e in client.reads.list_audit("b")]
    assert audit[0] == ("sync_definition", "awa-sync", {"args": {"n": "hand"}, "queue": "q2", "priority": 4},
                        {"args": {"n": "b"}, "queue": "default", "priority": 2})
    assert [a[0] for a in audit].count("sync_definition") == 1
    # Its own write is not news to it: the next sync is steady.
    assert client.sync() == {"inserted": 0, "updated": 0}
    assert _last(client) == SyncOutcome("steady", 0, 0, 0)
    client.close()


def test_a_change_of_a_name_it_does_not_register_costs_no_compare(dsn: str, conn: psycopg.Connection[Any]) -> None:
    mine = _deploy(dsn, "mine")
    mine.sync()
    theirs = _deploy(dsn, "theirs")
    theirs.sync()
    conn.execute("UPDATE awa.cron_jobs SET queue = 'elsewhere' WHERE name = 'theirs'")
    before = _digest(conn)
    assert mine.sync() == {"inserted": 0, "updated": 0}
    assert _last(mine) == SyncOutcome("steady", 0, 0, 0)
    assert _digest(conn) == before
    mine.close()
    theirs.close()


def test_an_owned_row_is_left_alone(dsn: str, conn: psycopg.Connection[Any]) -> None:
    client = _deploy(dsn, "owned", "plain")
    client.sync()
    client.actions.adopt("owned", "billing", operator="ops@host")
    conn.execute("UPDATE awa.cron_jobs SET queue = 'hand' WHERE name = 'plain'")
    adopted = schedule_row(conn, "owned")
    assert client.sync() == {"inserted": 0, "updated": 1}  # only the unowned row
    assert _last(client) == SyncOutcome("names", 2, 0, 1)
    assert schedule_row(conn, "owned") == adopted  # xmin included: not even locked
    assert schedule_row(conn, "plain")["queue"] == "default"
    client.close()


def test_an_overridden_row_stays_overridden(dsn: str, conn: psycopg.Connection[Any]) -> None:
    client = _deploy(dsn, "inv")
    client.sync()
    client.actions.override("inv", OverrideRequest(cron="*/15 * * * *", queue="urgent"), operator="alice@ops")
    overridden = schedule_row(conn, "inv")
    assert client.sync() == {"inserted": 0, "updated": 0}
    assert _last(client) == SyncOutcome("names", 1, 0, 0)  # compared on its code side: in agreement
    assert schedule_row(conn, "inv") == overridden
    assert (overridden["cron_expr"], overridden["queue"]) == ("*/15 * * * *", "urgent")
    assert overridden["overridden"] == {"cron_expr": "0 * * * *", "queue": "default"}
    client.close()


def test_a_change_committed_during_a_sync_is_caught_by_the_next(dsn: str, conn: psycopg.Connection[Any]) -> None:
    """Two real connections: one change is in flight while the probe runs (committed after
    the sync records its snapshot), another commits between the probe and the write."""
    client = _deploy(dsn, "a", "b", "c")
    client.sync()
    conn.execute("DELETE FROM awa.cron_jobs WHERE name = 'a'")  # so the next sync has a write to do
    with psycopg.connect(dsn, row_factory=dict_row) as other:
        other.execute("UPDATE awa.cron_jobs SET queue = 'in-flight' WHERE name = 'b'")  # left open

        def write(c: psycopg.Connection[Any], todo: Any) -> dict[str, int]:
            # Between this sync's probe and its record, another session commits a change.
            with psycopg.connect(dsn, autocommit=True) as third:
                third.execute("UPDATE awa.cron_jobs SET queue = 'between' WHERE name = 'c'")
            return sync_schedules(c, todo)

        tracker: SyncTracker = client.runtime.sync_tracker
        with client.db.connection() as c:
            assert tracker.sync(c, client._schedules, client._generation, write) == {"inserted": 1, "updated": 0}
        assert tracker.last == SyncOutcome("names", 1, 1, 0)
        other.commit()
    assert [schedule_row(conn, n)["queue"] for n in ("b", "c")] == ["in-flight", "between"]
    assert client.sync() == {"inserted": 0, "updated": 2}
    assert _last(client) == SyncOutcome("names", 2, 0, 2)
    assert [schedule_row(conn, n)["queue"] for n in ("a", "b", "c")] == ["default", "default", "default"]
    client.close()


def test_a_registration_after_a_sync_compares_everything(dsn: str, conn: psycopg.Connection[Any]) -> None:
    client = _deploy(dsn, "a")
    client.sync()
    client.periodic("late", "* * * * *", "test.job")
    assert client.sync() == {"inserted": 1, "updated": 0}
    assert _last(client) == SyncOutcome("full", 2, 1, 0)
    client.close()


def test_truncate_and_a_pruned_horizon_compare_everything(dsn: str, conn: psycopg.Connection[Any]) -> None:
    client = _deploy(dsn, "a", "b")
    client.sync()
    conn.execute("TRUNCATE awa.cron_jobs")
    assert client.sync() == {"inserted": 2, "updated": 0}
    assert _last(client) == SyncOutcome("full", 2, 2, 0)
    # Another runtime prunes a note this one has not seen yet: it can no longer trust the
    # notes, so it compares everything (and puts the hand edit back).
    conn.execute("UPDATE awa.cron_jobs SET queue = 'hand' WHERE name = 'b'")
    force(conn, "UPDATE awa.cron_jobs_changes SET at = now() - interval '2 days'")
    assert conn.execute("SELECT awa.prune_cron_jobs_changes('1 day')").fetchone() == {"prune_cron_jobs_changes": 2}
    assert _notes(conn) == []
    assert client.sync() == {"inserted": 0, "updated": 1}
    assert _last(client) == SyncOutcome("full", 2, 0, 1)
    assert schedule_row(conn, "b")["queue"] == "default"
    client.close()


def test_the_fire_path_and_pauses_note_nothing(dsn: str, conn: psycopg.Connection[Any]) -> None:
    client = _deploy(dsn, "a")
    client.periodic("tick", "* * * * *", "test.job")
    client.sync()
    force(conn, "UPDATE awa.cron_jobs SET created_at = %s, next_fire_at = NULL",  # past triggers: the hint too
          (at("2025-01-01T00:00:30"),))
    fired = client.evaluate(now=at("2025-01-01T00:01:00"))
    assert sorted(j.fire_time for j in fired.jobs) == ["2025-01-01T00:00:00Z", "2025-01-01T00:01:00Z"]
    client.actions.pause("a", operator="ops@host")
    client.actions.resume("a", operator="ops@host")
    assert _notes(conn) == []
    assert client.sync() == {"inserted": 0, "updated": 0}
    assert _last(client) == SyncOutcome("steady", 0, 0, 0)
    client.close()


def test_the_noted_columns_are_the_columns_sync_reads(conn: psycopg.Connection[Any]) -> None:
    """The trigger lists the name, every definition column, the override, the owner and the
    retirement, and nothing the fire path writes."""
    row = conn.execute(
        "SELECT array_agg(a.attname::text ORDER BY a.attname) AS cols FROM pg_trigger t "
        "JOIN pg_attribute a ON a.attrelid = t.tgrelid AND a.attnum = ANY(t.tgattr) "
        "WHERE t.tgname = 'cron_jobs_note_update'").fetchone()
    assert row == {"cols": sorted(["name", *DEFINITION, "overridden", "owner", "retired_at"])}
    assert not {"last_enqueued_at", "next_fire_at", "fires_count", "finished_at", "paused_at"} & set(row["cols"])


def test_an_authoritative_runtime_gets_a_removed_name_back_owned(dsn: str, conn: psycopg.Connection[Any]) -> None:
    client = Client(dsn, operator="deployer@test", owner="billing", authoritative=True)
    for name in ("a", "b"):
        client.periodic(name, "0 * * * *", "test.job")
    assert client.sync() == {"inserted": 2, "updated": 0}
    assert client.sync() == {"inserted": 0, "updated": 0}
    assert _last(client) == SyncOutcome("steady", 0, 0, 0)
    client.actions.remove("a", operator="ops@host")
    assert client.sync() == {"inserted": 1, "updated": 0}
    assert _last(client) == SyncOutcome("names", 1, 1, 0)
    assert schedule_row(conn, "a")["owner"] == "billing"
    client.close()
