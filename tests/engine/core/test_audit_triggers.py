"""S20: the database writes the audit trail itself. Hand-written SQL is audited, not
refused; `at` and the session columns are the database's; the fire path and a steady sync
never enter an audit trigger."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from audit_helpers import audit_rows
from helpers import wait_for
from psycopg.rows import dict_row

from awa_tui import Client
from awa_tui.engine.firing import evaluator

AUDIT_FUNCTIONS = ("cron_jobs_audit", "queue_meta_audit", "owners_audit", "audit_log_stamp")


def _hand(dsn: str, application_name: str, **options: str) -> psycopg.Connection[Any]:
    """A psql-like session of its own (its own pid and application_name)."""
    flags = " ".join(f"-c {k}={v}" for k, v in options.items())
    return psycopg.connect(dsn, autocommit=True, row_factory=dict_row,  # type: ignore[arg-type]
                           application_name=application_name, options=flags)


def _instant(text: str) -> datetime:
    # ISO-8601 from the database (trailing zeros of the fraction dropped): compared as instants.
    return datetime.fromisoformat(text)


def test_a_hand_written_pause_leaves_exactly_one_correct_row(client: Client, conn: Any, dsn: str) -> None:
    client.periodic("nightly", "0 2 * * *", "test.job")
    client.sync()
    assert audit_rows(conn) == []  # a first registration is not an action
    with _hand(dsn, "psql-by-hand") as hand:
        session = hand.execute(
            "SELECT session_user::text AS u, pg_backend_pid() AS pid, inet_client_addr() AS addr").fetchone()
        changed = hand.execute(
            "UPDATE awa.cron_jobs SET paused_at = now(), paused_by = 'x' WHERE name = 'nightly' "
            "RETURNING paused_at").fetchone()
    [row] = audit_rows(conn)
    assert (row["action"], row["target"], row["operator"]) == ("pause", "nightly", session["u"])
    assert (row["db_user"], row["backend_pid"], row["application_name"]) == (session["u"], session["pid"],
                                                                             "psql-by-hand")
    # That session's own address: NULL over a Unix socket, 127.0.0.1 over TCP.
    assert row["client_addr"] == session["addr"]
    assert row["at"] == changed["paused_at"]  # DB time of that very transaction
    assert row["before"] == {"owner": None, "retired_at": None, "retired_by": None, "paused_at": None,
                             "paused_by": None, "last_enqueued_at": None, "paused_until": None, "pause_reason": None}
    assert _instant(row["after"].pop("paused_at")) == changed["paused_at"]
    assert row["after"] == {"owner": None, "retired_at": None, "retired_by": None, "paused_by": "x",
                            "last_enqueued_at": None, "paused_until": None, "pause_reason": None}
    assert row["detail"] == {}


def test_an_operator_retiring_by_hand_still_leaves_a_row(client: Client, conn: Any, dsn: str) -> None:
    client.periodic("legacy", "0 2 * * *", "test.job")
    client.sync()
    with _hand(dsn, "sneaky") as hand, hand.transaction():
        hand.execute("SELECT awa.begin_action('not-me', 'resume')")  # a name that does not fit is ignored
        retired = hand.execute("UPDATE awa.cron_jobs SET retired_at = now(), retired_by = 'not-me' "
                               "WHERE name = 'legacy' RETURNING retired_at").fetchone()
        user = hand.execute("SELECT session_user::text AS u").fetchone()["u"]
    [row] = audit_rows(conn)
    assert (row["action"], row["target"], row["operator"], row["db_user"]) == ("retire", "legacy", "not-me", user)
    assert (row["before"]["retired_at"], _instant(row["after"]["retired_at"]), row["after"]["retired_by"]) == (
        None, retired["retired_at"], "not-me")
    assert row["application_name"] == "sneaky"


def test_a_declared_action_name_is_kept_only_when_it_describes_the_change(client: Client, conn: Any) -> None:
    client.periodic("a", "0 2 * * *", "test.job")
    client.sync()
    with conn.transaction():
        conn.execute("SELECT awa.begin_action('ops', 'retire_owner')")
        conn.execute("UPDATE awa.cron_jobs SET retired_at = now(), retired_by = 'ops' WHERE name = 'a'")
    with conn.transaction():
        conn.execute("SELECT awa.begin_action('ops', 'restore')")
        conn.execute("UPDATE awa.cron_jobs SET retired_at = NULL, retired_by = NULL, paused_at = now() "
                     "WHERE name = 'a'")
    assert [r["action"] for r in audit_rows(conn)] == ["retire_owner", "pause+restore"]


def test_a_backdated_at_and_forged_session_columns_are_overridden(conn: Any) -> None:
    start = conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
    conn.execute(
        "INSERT INTO awa.audit_log (at, operator, action, target, db_user, backend_pid, application_name) "
        "VALUES ('2001-01-01T00:00:00Z', 'owner', 'note', 'x', 'mallory', 1, 'forged')")
    end = conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
    [row] = audit_rows(conn)
    assert start <= row["at"] <= end
    session = conn.execute("SELECT session_user::text AS u, pg_backend_pid() AS pid").fetchone()
    assert (row["db_user"], row["backend_pid"]) == (session["u"], session["pid"])
    assert row["application_name"] != "forged"


def test_a_hand_delete_is_audited_as_remove_with_the_whole_row(client: Client, conn: Any) -> None:
    client.periodic("gone", "*/5 * * * *", "test.job", queue="q", args={"a": 1})
    client.sync()
    conn.execute("DELETE FROM awa.cron_jobs WHERE name = 'gone'")
    [row] = audit_rows(conn)
    assert (row["action"], row["target"], row["after"]) == ("remove", "gone", None)
    assert {k: row["before"][k] for k in ("name", "cron_expr", "queue", "args")} == {
        "name": "gone", "cron_expr": "*/5 * * * *", "queue": "q", "args": {"a": 1}}


def test_hand_queue_pause_and_owner_bookkeeping_edits_are_audited(client: Client, conn: Any) -> None:
    conn.execute("INSERT INTO awa.queue_meta (queue) VALUES ('mail')")  # unpaused: nothing to say
    conn.execute("UPDATE awa.queue_meta SET paused = true, paused_at = now(), paused_by = 'x' WHERE queue = 'mail'")
    conn.execute("DELETE FROM awa.queue_meta WHERE queue = 'mail'")  # which resumes it
    conn.execute("INSERT INTO awa.owners (owner) VALUES ('billing')")
    conn.execute("UPDATE awa.owners SET agreement_hash = 'h', agreement_since = '2000-01-01T00:00:00Z', "
                 "agreement_seen_at = now() WHERE owner = 'billing'")
    rows = audit_rows(conn)
    assert [(r["action"], r["target"]) for r in rows] == [
        ("queue_pause", "queue:mail"), ("queue_resume", "queue:mail"), ("owner_edit", "owner:billing")]
    assert (rows[0]["before"]["paused"], rows[0]["after"]["paused"], rows[1]["after"]) == (False, True, None)
    assert (rows[2]["before"]["agreement_since"], rows[2]["after"]["agreement_since"]) == (
        None, "2000-01-01T00:00:00+00:00")


def test_our_actions_write_one_row_each_with_their_label_and_session(dsn: str, conn: Any) -> None:
    with Client(dsn, operator="alice@ops", application_name="awa-tui console") as client:
        client.periodic("a", "* * * * *", "test.job", queue="work")
        client.sync()
        client.actions.pause("a")
        client.actions.queue_pause("work")
        client.actions.trigger("a")
        client.actions.retire("a")
    user = conn.execute("SELECT session_user::text AS u").fetchone()["u"]
    rows = audit_rows(conn)
    assert [(r["operator"], r["action"], r["target"], r["db_user"], r["application_name"]) for r in rows] == [
        ("alice@ops", "pause", "a", user, "awa-tui console"),
        ("alice@ops", "queue_pause", "queue:work", user, "awa-tui console"),
        ("alice@ops", "trigger", "a", user, "awa-tui console"),
        ("alice@ops", "retire", "a", user, "awa-tui console"),
    ]
    assert all(r["backend_pid"] is not None for r in rows)


def test_record_event_accepts_only_row_less_actions_after_the_gate(conn: Any) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="pause is not an event"), conn.transaction():
        conn.execute("SELECT awa.begin_action('ops', 'pause')")
        conn.execute("SELECT awa.record_event('pause', 'x', NULL, NULL, '{}')")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="begin_action"):
        conn.execute("SELECT awa.record_event('trigger', 'x', NULL, NULL, '{}')")
    assert audit_rows(conn) == []


def test_sync_is_silent_when_steady_and_audits_a_real_redefinition_as_awa_sync(dsn: str, conn: Any) -> None:
    with Client(dsn) as first:
        first.periodic("report", "0 6 * * *", "test.job")
        assert first.sync() == {"inserted": 1, "updated": 0}
        for _ in range(3):
            assert first.sync() == {"inserted": 0, "updated": 0}
    assert audit_rows(conn) == []
    with Client(dsn) as redeployed:
        redeployed.periodic("report", "30 7 * * *", "test.job", queue="reports")
        assert redeployed.sync() == {"inserted": 0, "updated": 1}
        assert redeployed.sync() == {"inserted": 0, "updated": 0}
    [row] = audit_rows(conn)
    assert (row["operator"], row["action"], row["target"]) == ("awa-sync", "sync_definition", "report")
    assert (row["before"], row["after"]) == (
        {"cron_expr": "0 6 * * *", "queue": "default"}, {"cron_expr": "30 7 * * *", "queue": "reports"})


def _function_calls(conn: Any) -> dict[str, int]:
    conn.execute("SELECT pg_stat_clear_snapshot()")
    rows = conn.execute("SELECT funcname, calls FROM pg_stat_user_functions WHERE schemaname = 'awa' "
                        "AND funcname = ANY(%s)", (list(AUDIT_FUNCTIONS),)).fetchall()
    return {r["funcname"]: r["calls"] for r in rows}


def _closed(conn: Any, session: psycopg.Connection[Any]) -> None:
    """Close a session and wait until its backend is gone (its statistics are flushed by then)."""
    pid = session.info.backend_pid
    session.close()
    wait_for(lambda: conn.execute("SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = %s) AS gone",
                                  (pid,)).fetchone()["gone"], what="the session's backend to exit")


def test_the_fire_path_never_enters_an_audit_trigger(client: Client, conn: Any, dsn: str) -> None:
    for i in range(1000):
        client.periodic(f"s{i:04d}", "* * * * *", "test.job")
    client.sync()
    now = datetime(2025, 1, 1, 0, 0, 30, tzinfo=UTC)
    conn.execute("UPDATE awa.cron_jobs SET created_at = %s", (now - timedelta(minutes=1),))
    before = _function_calls(conn)
    # Function-call statistics of the firing session (track_functions is per session).
    firing = _hand(dsn, "fire-probe", track_functions="pl")
    first = evaluator.evaluate(firing, now)            # hints written, and one fire each
    second = evaluator.evaluate(firing, now + timedelta(minutes=1))
    _closed(conn, firing)
    assert (first.fired, second.fired) == (1000, 1000)
    assert conn.execute("SELECT count(*) AS n FROM awa.jobs").fetchone()["n"] == 2000
    assert audit_rows(conn) == []
    # The control: the same measurement does see one audited change.
    pausing = _hand(dsn, "pause-probe", track_functions="pl")
    pausing.execute("UPDATE awa.cron_jobs SET paused_at = now(), paused_by = 'probe' WHERE name = 's0000'")
    _closed(conn, pausing)
    after = _function_calls(conn)
    delta = {f: after.get(f, 0) - before.get(f, 0) for f in AUDIT_FUNCTIONS}
    assert delta == {"cron_jobs_audit": 1, "queue_meta_audit": 0, "owners_audit": 0, "audit_log_stamp": 1}
    assert [r["action"] for r in audit_rows(conn)] == ["pause"]


def test_a_hand_redefinition_is_audited_with_just_the_changed_columns(client: Client, conn: Any) -> None:
    client.periodic("report", "0 6 * * *", "test.job")
    client.sync()
    conn.execute("UPDATE awa.cron_jobs SET cron_expr = '0 7 * * *', updated_at = now() WHERE name = 'report'")
    user = conn.execute("SELECT session_user::text AS u").fetchone()["u"]
    [row] = audit_rows(conn)
    assert (row["operator"], row["action"], row["before"], row["after"]) == (
        user, "redefine", {"cron_expr": "0 6 * * *"}, {"cron_expr": "0 7 * * *"})


def test_reconciliation_is_audited_as_awa_reconciler_and_its_bookkeeping_is_not(dsn: str, conn: Any) -> None:
    t0 = conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
    with Client(dsn, owner="billing", authoritative=True, retire_grace=timedelta(0)) as first:
        first.periodic("invoice", "0 * * * *", "test.job")
        first.periodic("dunning", "0 * * * *", "test.job")
        first.sync()
    with Client(dsn, owner="billing", authoritative=True, retire_grace=timedelta(0)) as second, \
            Client(dsn) as leader:
        second.periodic("invoice", "*/15 * * * *", "test.job")
        second.runtime.publish(now=t0)
        [result] = leader.runtime.reconcile(now=t0)
        assert (result["updated"], result["retired"], result["certified"]) == (["invoice"], ["dunning"], True)
        leader.runtime.reconcile(now=t0 + timedelta(seconds=5))  # evidence extended: nothing to say
    rows = audit_rows(conn)
    assert [(r["operator"], r["action"], r["target"]) for r in rows] == [
        ("awa-reconciler", "sync_definition", "invoice"), ("awa-reconciler", "auto_retire", "dunning")]
    sync, retire = rows
    assert (sync["before"], sync["after"]) == ({"cron_expr": "0 * * * *"}, {"cron_expr": "*/15 * * * *"})
    assert sync["detail"] == retire["detail"] == {"owner": "billing", "manifest_hash": result["manifest_hash"]}
    assert (retire["before"]["retired_at"], retire["after"]["retired_by"]) == (None, "awa-reconciler")


# Every column of a schedule whose change by hand is an operator's action: the audit name
# it must be recorded under, and a new value for a schedule registered with the defaults
# (no owner, not paused or retired). Written here, by hand, from what an operator does.
AUDITED_COLUMNS: dict[str, tuple[str, str]] = {
    "paused_at": ("pause", "now()"),
    "paused_by": ("pause_edit", "'someone@by-hand'"),
    "retired_at": ("retire", "now()"),
    "retired_by": ("retire_edit", "'someone@by-hand'"),
    "owner": ("adopt", "'billing'"),
    "cron_expr": ("redefine", "'0 3 * * *'"),
    "timezone": ("redefine", "'Europe/Paris'"),
    "kind": ("redefine", "'other.job'"),
    "queue": ("redefine", "'elsewhere'"),
    "args": ("redefine", "'{\"a\": 1}'"),
    "priority": ("redefine", "4"),
    "max_attempts": ("redefine", "5"),
    "tags": ("redefine", "'{by-hand}'"),
    "metadata": ("redefine", "'{\"m\": 1}'"),
    "missed_fire_policy": ("redefine", "'catch_up'"),
    "max_lateness": ("redefine", "60"),
    "expect_success_within": ("redefine", "600"),
    "max_consecutive_failures": ("redefine", "3"),
    "pause_after_failures": ("redefine", "4"),
    "cron_written": ("redefine", "'at three'"),
    "jitter_ms": ("redefine", "1500"),
    "overridden": ("redefine", "'{\"cron_expr\": \"0 2 * * *\"}'"),
    "overlap": ("redefine", "'skip'"),
    "start_at": ("redefine", "'2030-01-01 00:00:00+00'"),
    "end_at": ("redefine", "'2031-01-01 00:00:00+00'"),
    "max_fires": ("redefine", "10"),
    "exclude_dates": ("redefine", "'[\"2030-12-25\"]'"),
    "exclude_calendars": ("redefine", "'[\"holidays\"]'"),
    "origin": ("redefine", "'api'"),  # S64: what code may not touch hangs on it
    "catchup_window": ("redefine", "3600"),  # S66
}
# A pause's end and reason (S65): they exist only while paused (set on an active schedule,
# they are cleared with the row's write), so they are checked on a paused one below.
PAUSE_COLUMNS: dict[str, str] = {"paused_until": "now() + interval '1 hour'", "pause_reason": "'db migration'"}
# Columns the fire path, the hints and the row's own bookkeeping write: never an action.
UNAUDITED_COLUMNS: dict[str, str] = {
    "last_enqueued_at": "now()",
    "next_fire_at": "now() + interval '1 day'",
    "fires_count": "fires_count + 1",
    "finished_at": "now()",
    "created_at": "now() - interval '1 day'",
    "updated_at": "now() + interval '1 hour'",
}


def test_every_audited_column_changed_alone_by_hand_leaves_one_row_and_no_other_column_does(
    client: Client, conn: Any, dsn: str
) -> None:
    """S20, column by column: each UPDATE sets one column only (a trigger that stopped
    watching it would not run at all), on a schedule of its own."""
    columns = [r["column_name"] for r in conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'awa' AND table_name = 'cron_jobs'"
    ).fetchall()]
    # Every column is one or the other (name is the key, not a value an UPDATE edits here).
    assert sorted(columns) == sorted([*AUDITED_COLUMNS, *UNAUDITED_COLUMNS, *PAUSE_COLUMNS, "name"])
    for column in [*AUDITED_COLUMNS, *UNAUDITED_COLUMNS]:
        client.periodic(f"by-hand-{column}", "0 2 * * *", "test.job")
    client.sync()
    assert audit_rows(conn) == []
    with _hand(dsn, "psql-by-hand") as hand:
        for column, (action, value) in AUDITED_COLUMNS.items():
            name = f"by-hand-{column}"
            before = hand.execute(f"SELECT to_jsonb(c) -> '{column}' AS v FROM awa.cron_jobs c WHERE name = %s",
                                  (name,)).fetchone()["v"]
            with hand.transaction():  # as an operator at psql (the fence asks it of owner and retirement)
                hand.execute("SELECT awa.begin_action('someone@by-hand', 'by-hand')")
                changed = hand.execute(f"UPDATE awa.cron_jobs SET {column} = {value} WHERE name = %s "
                                       f"RETURNING to_jsonb(cron_jobs) -> '{column}' AS v", (name,)).fetchall()
            assert len(changed) == 1 and changed[0]["v"] != before, column
            rows = [r for r in audit_rows(conn) if r["target"] == name]
            assert [(r["action"], r["operator"]) for r in rows] == [(action, "someone@by-hand")], column
            assert rows[0]["before"][column] != rows[0]["after"][column], column
            if action == "redefine":  # a definition change records that column alone
                assert (list(rows[0]["before"]), list(rows[0]["after"])) == ([column], [column])
        recorded = len(audit_rows(conn))
        assert recorded == len(AUDITED_COLUMNS)
        for column, value in UNAUDITED_COLUMNS.items():
            name = f"by-hand-{column}"
            with hand.transaction():
                hand.execute("SELECT awa.begin_action('someone@by-hand', 'by-hand')")
                changed = hand.execute(f"UPDATE awa.cron_jobs SET {column} = {value} WHERE name = %s "
                                       "RETURNING name", (name,)).fetchall()
            assert changed == [{"name": name}], column  # the change was made...
            assert len(audit_rows(conn)) == recorded, column  # ...and recorded nowhere


def test_a_paused_schedules_end_or_reason_changed_by_hand_leaves_one_pause_edit_row(
    client: Client, conn: Any, dsn: str
) -> None:
    for column in PAUSE_COLUMNS:
        client.periodic(f"paused-{column}", "0 2 * * *", "test.job")
    client.sync()
    with _hand(dsn, "psql-by-hand") as hand:
        hand.execute("UPDATE awa.cron_jobs SET paused_at = now(), paused_by = 'ops' WHERE name LIKE 'paused-%'")
        paused = len(audit_rows(conn))
        for column, value in PAUSE_COLUMNS.items():
            name = f"paused-{column}"
            changed = hand.execute(f"UPDATE awa.cron_jobs SET {column} = {value} WHERE name = %s "
                                   f"RETURNING to_jsonb(cron_jobs) -> '{column}' AS v", (name,)).fetchall()
            assert len(changed) == 1 and changed[0]["v"] is not None, column
            rows = [r for r in audit_rows(conn)[paused:] if r["target"] == name]
            assert [r["action"] for r in rows] == ["pause_edit"], column
            assert (rows[0]["before"][column], rows[0]["after"][column] is not None) == (None, True), column
