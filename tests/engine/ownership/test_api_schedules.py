"""S64: schedules made at run time: in the app's own transaction, fired from their first
instant, refused in one typed line, audited by the database, left alone by code.

The fire instants are the test's own arithmetic (a 5-minute boundary counted by hand),
never the engine's cron code.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg
import pytest
from engine_helpers import force
from reconcile_helpers import declare, result_for

from awa_tui import Client, Schedule
from awa_tui.engine.core.errors import Conflict, DeclaredInCode, NameTaken, NotFound, ValidationError

FIVE = timedelta(minutes=5)


@pytest.fixture
def app(dsn: str) -> Any:
    """The app's own connection: not autocommit, tuple rows (psycopg's defaults), with a
    table of its own that its signups go to."""
    with psycopg.connect(dsn) as setup:
        setup.execute("CREATE TABLE signups (tenant text PRIMARY KEY)")
    with psycopg.connect(dsn) as c:
        yield c


def _row(conn: psycopg.Connection[Any], name: str) -> dict[str, Any] | None:
    return conn.execute("SELECT * FROM awa.cron_jobs WHERE name = %s", (name,)).fetchone()


def _signups(conn: psycopg.Connection[Any]) -> list[str]:
    return [r["tenant"] for r in conn.execute("SELECT tenant FROM signups ORDER BY tenant").fetchall()]


def _audit(conn: psycopg.Connection[Any], name: str) -> list[tuple[str, str]]:
    rows = conn.execute("SELECT action, operator FROM awa.audit_log WHERE target = %s ORDER BY id", (name,)).fetchall()
    return [(r["action"], r["operator"]) for r in rows]


def _first_five_minute_boundary(created: datetime) -> datetime:
    """By hand: the first multiple of 5 minutes at or after created_at minus the first-fire
    lookback of one minute (S13)."""
    start = created - timedelta(minutes=1)
    floor = start.replace(minute=start.minute - start.minute % 5, second=0, microsecond=0)
    return floor if floor >= start else floor + FIVE


def test_s64_a_schedule_created_in_a_transaction_that_rolls_back_never_exists_nor_fires(
        client: Client, conn: psycopg.Connection[Any], app: psycopg.Connection[Any]) -> None:
    app.execute("INSERT INTO signups VALUES ('acme')")
    made = client.create_schedule("report-acme", "*/5 * * * *", "report.build", {"tenant": "acme"},
                                  timezone="Europe/Paris", conn=app)
    assert made.name == "report-acme"
    assert _row(conn, "report-acme") is None  # not committed: nobody else sees it
    app.rollback()
    assert _row(conn, "report-acme") is None and _signups(conn) == []
    far = datetime.now(UTC) + timedelta(days=2)
    assert client.evaluate(now=far).fired == 0
    assert conn.execute("SELECT count(*) AS n FROM awa.jobs").fetchone()["n"] == 0
    assert _audit(conn, "report-acme") == []


def test_s64_a_committed_schedule_fires_at_its_first_instant(
        client: Client, conn: psycopg.Connection[Any], app: psycopg.Connection[Any]) -> None:
    app.execute("INSERT INTO signups VALUES ('acme')")
    client.create_schedule("report-acme", "*/5 * * * *", "report.build", {"tenant": "acme"}, conn=app)
    app.commit()
    row = _row(conn, "report-acme")
    assert row is not None and _signups(conn) == ["acme"]
    assert (row["origin"], row["owner"], row["args"]) == ("api", "app", {"tenant": "acme"})
    first = _first_five_minute_boundary(row["created_at"])
    assert row["next_fire_at"] == first  # the hint a sync writes (S52), written with the row
    assert client.evaluate(now=first - timedelta(seconds=1)).fired == 0
    fired = client.evaluate(now=first)
    assert [(j.name, j.fire_time) for j in fired.jobs] == [
        ("report-acme", first.strftime("%Y-%m-%dT%H:%M:%SZ"))]
    assert client.evaluate(now=first + FIVE).fired == 1  # and on: the next boundary


def test_s64_without_a_connection_it_commits_on_its_own_owned_by_the_clients_owner(dsn: str,
                                                                                 conn: psycopg.Connection[Any]) -> None:
    with Client(dsn, owner="tenants", operator="web@app") as client:
        client.create_schedule("t1", "0 8 * * 1", "report.build", timezone="Europe/Paris")
        client.create_schedule("t2", "0 8 * * 1", "report.build", owner="other")
    assert (_row(conn, "t1")["owner"], _row(conn, "t2")["owner"]) == ("tenants", "other")
    assert _audit(conn, "t1") == [("create", "web@app")]


@pytest.mark.parametrize(("call", "error", "first_words"), [
    (lambda c, app: c.create_schedule("taken", "* * * * *", "k", conn=app), NameTaken, "name: 'taken' already exists"),
    (lambda c, app: c.create_schedule("coded", "* * * * *", "k", conn=app), NameTaken,
     "name: 'coded' is taken by a schedule declared in code"),
    (lambda c, app: c.create_schedule("foreign", "* * * * *", "k", owner="app", conn=app), NameTaken,
     "name: 'foreign' is held by owner 'billing', not 'app'"),
    (lambda c, app: c.create_schedule("x", "61 * * * *", "k", conn=app), ValidationError, "cron_expr:"),
    (lambda c, app: c.create_schedule("x", "* * * * *", "k", timezone="Mars/Olympus", conn=app), ValidationError,
     "timezone:"),
    (lambda c, app: c.create_schedule("x", "* * * * *", "k", calendar="holidays", conn=app), ValidationError,
     "calendar: schedule 'x' names unknown calendar 'holidays'"),
    (lambda c, app: c.create_schedule("x", "* * * * *", "k", overlap="sometimes", conn=app), ValidationError,
     "overlap:"),
    (lambda c, app: c.update_schedule("coded", queue="q2", conn=app), DeclaredInCode,
     "name: 'coded' is declared in code and cannot be edited"),
    (lambda c, app: c.delete_schedule("coded", conn=app), DeclaredInCode,
     "name: 'coded' is declared in code and cannot be deleted"),
    (lambda c, app: c.update_schedule("taken", owner="billing", queue="q2", conn=app), NameTaken,
     "name: 'taken' is held by owner 'app', not 'billing'"),
    (lambda c, app: c.update_schedule("missing", queue="q2", conn=app), NotFound, "name: unknown schedule 'missing'"),
    (lambda c, app: c.update_schedule("taken", colour="red", conn=app), ValidationError, "colour: not a setting"),
    (lambda c, app: c.create_schedules([Schedule.build("new", "* * * * *", "k"), Schedule.build("taken", "* * * * *",
                                        "k")], conn=app), NameTaken, "name: 'taken' already exists"),
    (lambda c, app: c.create_schedules([Schedule.build("dup", "* * * * *", "k")] * 2, conn=app), NameTaken,
     "name: 'dup' is given twice"),
    (lambda c, app: c.delete_schedules(["taken", "coded"], conn=app), DeclaredInCode, "name: 'coded'"),
])
def test_s64_bad_input_is_one_typed_line_naming_the_field_and_the_callers_transaction_goes_on(
        client: Client, conn: psycopg.Connection[Any], app: psycopg.Connection[Any], call: Any, error: type,
        first_words: str) -> None:
    client.periodic("coded", "* * * * *", "k")
    client.sync()
    client.create_schedule("taken", "* * * * *", "k")
    client.create_schedule("foreign", "* * * * *", "k", owner="billing")
    before = conn.execute("SELECT name, cron_expr, queue, owner, origin FROM awa.cron_jobs ORDER BY name").fetchall()
    audits = conn.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone()["n"]
    app.execute("INSERT INTO signups VALUES ('before')")
    with pytest.raises(error) as caught:
        call(client, app)
    message = str(caught.value)
    assert message.startswith(first_words) and "\n" not in message
    app.execute("INSERT INTO signups VALUES ('after')")  # the app's transaction is still usable
    app.commit()
    assert _signups(conn) == ["after", "before"]
    assert conn.execute("SELECT name, cron_expr, queue, owner, origin FROM awa.cron_jobs ORDER BY name").fetchall() \
        == before
    assert conn.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone()["n"] == audits


def test_s64_the_apps_later_writes_are_not_labelled_as_the_schedule_apis(
        client: Client, conn: psycopg.Connection[Any], app: psycopg.Connection[Any]) -> None:
    app.execute("SELECT set_config('awa.label', 'web-app', true)")
    client.create_schedule("r", "* * * * *", "k", conn=app)
    label = app.execute("SELECT current_setting('awa.label') AS l, current_setting('awa.action', true) AS a").fetchone()
    assert label == ("web-app", "")  # unset: a custom setting, once set, reads as empty (as every reader takes it)
    app.commit()


def test_s64_edit_and_delete_are_audited_and_move_the_next_fire(
        client: Client, conn: psycopg.Connection[Any]) -> None:
    client.create_schedule("r", "*/5 * * * *", "report.build", timezone="UTC", tags=["a"],
                           exclude=[date(2030, 1, 1)], jitter=timedelta(seconds=2))
    force(conn, "UPDATE awa.cron_jobs SET created_at = '2026-01-01T00:00:00Z', next_fire_at = NULL WHERE name = 'r'")
    edited = client.update_schedule("r", cron_expr="30 9 * * *", queue="reports")
    # Only what was asked changed; the rest is as stored (tags, exclusions, jitter).
    assert (edited.cron_expr, edited.queue, edited.tags, edited.exclude_dates, edited.jitter_ms) == (
        "30 9 * * *", "reports", ("a",), (("2030-01-01", "2030-01-01"),), 2000)
    row = _row(conn, "r")
    assert (row["cron_expr"], row["queue"], row["next_fire_at"]) == ("30 9 * * *", "reports", None)
    fired = client.evaluate(now=datetime(2026, 1, 1, 9, 30, tzinfo=UTC))
    assert [j.fire_time for j in fired.jobs] == ["2026-01-01T09:30:00Z"]
    client.delete_schedule("r")
    assert _row(conn, "r") is None
    assert [a for a, _ in _audit(conn, "r")] == ["create", "redefine", "remove"]
    assert {o for _, o in _audit(conn, "r")} == {"tester@test"}
    redefined = conn.execute("SELECT before, after FROM awa.audit_log WHERE target = 'r' AND action = 'redefine'"
                             ).fetchone()
    assert (redefined["before"]["cron_expr"], redefined["after"]["cron_expr"]) == ("*/5 * * * *", "30 9 * * *")


def test_s64_a_dry_run_checks_everything_and_writes_nothing(client: Client, conn: psycopg.Connection[Any]) -> None:
    client.create_schedule("r", "*/5 * * * *", "k")
    with pytest.raises(NameTaken):
        client.create_schedule("r", "* * * * *", "k", dry_run=True)
    assert client.create_schedule("s", "* * * * *", "k", dry_run=True).cron_expr == "* * * * *"
    assert client.update_schedule("r", cron_expr="0 * * * *", dry_run=True).cron_expr == "0 * * * *"
    client.delete_schedule("r", dry_run=True)
    assert (_row(conn, "s"), _row(conn, "r")["cron_expr"]) == (None, "*/5 * * * *")
    assert [a for a, _ in _audit(conn, "r")] == ["create"]


def test_s64_code_sync_leaves_run_time_schedules_alone(dsn: str, client: Client,
                                                      conn: psycopg.Connection[Any]) -> None:
    client.create_schedule("tenant-1", "0 8 * * 1", "report.build", timezone="Europe/Paris")
    stored = _row(conn, "tenant-1")
    with Client(dsn, operator="deploy@ci") as code:
        code.periodic("tenant-1", "* * * * *", "other.kind")  # the same name, declared in code
        code.periodic("declared", "0 * * * *", "k")
        assert code.sync() == {"inserted": 1, "updated": 0}
        code.sync()
    assert _row(conn, "tenant-1") == stored
    assert _row(conn, "declared")["origin"] == "code"


def test_s64_an_owners_manifest_never_retires_nor_redefines_its_run_time_schedules(
        dsn: str, conn: psycopg.Connection[Any]) -> None:
    leader = Client(dsn, operator="tester@test")
    first = declare(dsn, "billing", ["invoice", "gone"])
    first.sync()
    first.close()
    leader.create_schedule("tenant-1", "0 8 * * *", "report.build", owner="billing")
    leader.create_schedule("tenant-2", "0 9 * * *", "report.build", owner="billing")
    now = conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
    deploy = declare(dsn, "billing", ["invoice"])  # the next deploy drops "gone"
    deploy.runtime.publish(now=now)
    result = result_for(leader.runtime.reconcile(now=now), "billing")
    assert (result["retired"], result["blockers"]) == (["gone"], [])  # retirement ran: only code's row went
    deploy.close()
    # A manifest that declares a name made at run time is refused for it, never applied to it.
    clash = declare(dsn, "billing", {"invoice": "0 * * * *", "tenant-1": "* * * * *"})
    clash.runtime.publish(now=now)
    result = result_for(leader.runtime.reconcile(now=now), "billing")
    assert (result["retired"], result["updated"]) == ([], [])
    assert [(b["name"], b["kind"]) for b in result["blockers"] if b["code"] == "conflict"] == [
        ("tenant-1", "made_at_run_time")]
    rows = conn.execute("SELECT name, owner, origin, cron_expr, retired_at IS NOT NULL AS retired "
                        "FROM awa.cron_jobs ORDER BY name").fetchall()
    assert [tuple(r.values()) for r in rows] == [
        ("gone", "billing", "code", "0 * * * *", True),
        ("invoice", "billing", "code", "0 * * * *", False),
        ("tenant-1", "billing", "api", "0 8 * * *", False),
        ("tenant-2", "billing", "api", "0 9 * * *", False),
    ]
    clash.close()
    leader.close()


def test_s64_an_owners_retire_and_restore_apply_to_its_run_time_schedules(
        client: Client, conn: psycopg.Connection[Any]) -> None:
    client.create_schedules([Schedule.build(f"t{i}", "0 8 * * *", "k") for i in range(3)], owner="tenants")
    assert client.actions.retire_owner("tenants").names == ["t0", "t1", "t2"]
    with pytest.raises(Conflict, match="name: 't1' is retired"):
        client.delete_schedule("t1")
    assert client.actions.restore_owner("tenants").names == ["t0", "t1", "t2"]
    assert client.delete_schedules(["t0", "t1"], owner="tenants") == 2
    assert [r["name"] for r in conn.execute("SELECT name FROM awa.cron_jobs").fetchall()] == ["t2"]


def test_s64_ten_thousand_in_one_call_and_updated_and_deleted_in_one_call(
        client: Client, conn: psycopg.Connection[Any], app: psycopg.Connection[Any]) -> None:
    fleet = [Schedule.build(f"tenant-{i:05d}", "0 8 * * 1", "report.build", {"tenant": i}, timezone="Europe/Paris")
             for i in range(10_000)]
    assert client.create_schedules(fleet, owner="tenants", conn=app) == 10_000
    app.commit()
    counts = conn.execute("SELECT count(*) FILTER (WHERE origin = 'api' AND owner = 'tenants') AS made, "
                          "count(next_fire_at) AS hinted FROM awa.cron_jobs").fetchone()
    assert counts == {"made": 10_000, "hinted": 10_000}
    assert conn.execute("SELECT count(*) AS n FROM awa.audit_log WHERE action = 'create'").fetchone()["n"] == 10_000
    moved = [Schedule.build(s.name, "0 9 * * 1", "report.build", s.args, timezone="Europe/Paris") for s in fleet[:5000]]
    assert client.update_schedules(moved, owner="tenants") == 5000
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs WHERE cron_expr = '0 9 * * 1'").fetchone()["n"] == 5000
    assert client.delete_schedules([s.name for s in fleet[2000:]]) == 8000
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone()["n"] == 2000


def test_s64_a_create_of_many_chunks_is_all_or_none_and_gives_the_callers_settings_back(
        client: Client, conn: psycopg.Connection[Any], app: psycopg.Connection[Any],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of three (the real size is 25,000): the chunks are sent pipelined, a name taken
    in the last one refuses the whole call, and the work_mem a bulk create raises for its
    own statements is the caller's again afterwards."""
    from awa_tui.engine.ownership import api_schedules

    monkeypatch.setattr(api_schedules, "CHUNK", 3)
    client.create_schedule("t-09", "* * * * *", "k", owner="billing")
    before = conn.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone()["n"]
    app.execute("SET LOCAL work_mem = '5MB'")
    app.execute("INSERT INTO signups VALUES ('acme')")
    fleet = [Schedule.build(f"t-{i:02d}", "0 8 * * 1", "report.build") for i in range(10)]  # t-09 in the 4th chunk
    with pytest.raises(NameTaken) as caught:
        client.create_schedules(fleet, owner="tenants", conn=app)
    assert str(caught.value) == "name: 't-09' is held by owner 'billing', not 'tenants'"
    assert app.execute("SELECT current_setting('work_mem')").fetchone() == ("5MB",)
    app.commit()
    assert _signups(conn) == ["acme"]
    assert conn.execute("SELECT count(*) FILTER (WHERE owner = 'tenants') AS n FROM awa.cron_jobs").fetchone()["n"] == 0
    assert conn.execute("SELECT count(*) AS n FROM awa.audit_log").fetchone()["n"] == before

    app.execute("SET LOCAL work_mem = '5MB'")
    assert client.create_schedules(fleet[:9], owner="tenants", conn=app) == 9
    assert app.execute("SELECT current_setting('work_mem')").fetchone() == ("5MB",)
    app.commit()
    made = conn.execute("SELECT name, next_fire_at IS NOT NULL AS hinted FROM awa.cron_jobs WHERE owner = 'tenants' "
                        "ORDER BY name").fetchall()
    assert [(r["name"], r["hinted"]) for r in made] == [(f"t-{i:02d}", True) for i in range(9)]
    assert conn.execute("SELECT count(*) AS n FROM awa.audit_log WHERE action = 'create' AND target LIKE 't-0_' "
                        "AND target <> 't-09'").fetchone()["n"] == 9
