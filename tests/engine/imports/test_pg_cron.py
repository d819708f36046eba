"""pg_cron's jobs carried over (S68): the forms translated or refused, the plan read from a
real pg_cron (Debian's postgresql-15-cron, started by the `pg_cron` fixture), the schedules
made, the SQL job kind, and the switch-over against the real pg_cron worker."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import psycopg.sql
import pytest
from helpers import wait_for
from psycopg.rows import dict_row

from awa_tui import Client
from awa_tui.engine.core.db import ConnectionSource
from awa_tui.engine.core.errors import AwaError, ValidationError
from awa_tui.engine.imports import pg_cron as imp
from awa_tui.engine.jobs.sql import SQL_KIND
from awa_tui.engine.ledger.why import describe


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# --- the forms ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("written", "expected"), [
    ("0 0 $ * *", "0 0 L * *"),
    ("30 23 $ 2 *", "30 23 L 2 *"),
    ("30 seconds", "*/30 * * * * *"),
    ("1 second", "* * * * * *"),
    ("*/5  *  * * *", "*/5 * * * *"),
    ("@daily", "@daily"),
])
def test_pg_cron_forms_translate_to_awa_expressions(written: str, expected: str) -> None:
    assert imp.translate(written) == expected


@pytest.mark.parametrize(("written", "why"), [
    ("7 seconds", "every 7 seconds does not divide a minute: awa's seconds field starts again at each minute"),
    ("60 seconds", "every 60 seconds: pg_cron takes 1 to 59 seconds"),
    ("@reboot", "@reboot runs at server start: awa has no start-up fires"),
    ("0 * * * * *", "pg_cron reads five fields, this has 6"),
    ("0 $ * * *", "$ (the last day) belongs in the day-of-month field"),
])
def test_forms_that_cannot_be_carried_over_are_refused_in_one_line(written: str, why: str) -> None:
    with pytest.raises(ValidationError) as caught:
        imp.translate(written)
    assert str(caught.value) == why


# --- the switch window (the source server's clock, injected) ---------------------------------------


def test_the_switch_instant_is_the_next_one_inside_the_window() -> None:
    window = imp.switch_window("* * * * *", "UTC", _at("2026-01-01T10:00:30"))
    assert window == imp.Window(_at("2026-01-01T10:01:00"))


def test_too_close_to_the_next_instant_waits_until_it_is_past() -> None:
    window = imp.switch_window("* * * * *", "UTC", _at("2026-01-01T10:00:56"))
    assert window == imp.Window(_at("2026-01-01T10:01:00"), _at("2026-01-01T10:01:05"))
    # Exactly the margin before it is still in the window.
    assert imp.switch_window("* * * * *", "UTC", _at("2026-01-01T10:00:55")).wait_until is None


def test_too_soon_after_pg_crons_previous_instant_waits_for_its_run_to_start() -> None:
    window = imp.switch_window("* * * * *", "UTC", _at("2026-01-01T10:00:02"))
    assert window == imp.Window(_at("2026-01-01T10:01:00"), _at("2026-01-01T10:00:05"))


def test_instants_too_close_to_switch_over_are_refused_in_one_line() -> None:
    with pytest.raises(ValidationError) as caught:
        imp.switch_window("*/10 * * * * *", "UTC", _at("2026-01-01T10:00:03"))
    assert str(caught.value) == ("instants 10 s apart are too close to switch over with 5 s on each side: "
                                 "deactivate the job in pg_cron, then resume the schedule")
    # One gap wide enough is enough: 3 s after :00 is too close, but 57 s follow :03.
    assert imp.switch_window("0,3 * * * * *", "UTC", _at("2026-01-01T10:00:01")) == imp.Window(
        _at("2026-01-01T10:00:03"), _at("2026-01-01T10:00:05"))
    assert imp.switch_window("0,3 * * * * *", "UTC", _at("2026-01-01T10:00:08")) == imp.Window(
        _at("2026-01-01T10:01:00"))


# --- against the real pg_cron ----------------------------------------------------------------------


def _source(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True, row_factory=dict_row)  # type: ignore[arg-type]


def _seed(source: str) -> dict[str, int]:
    """Jobs of every kind the plan meets; their ids by name."""
    with _source(source) as conn:
        conn.execute("DROP ROLE IF EXISTS reporter")
        conn.execute("CREATE ROLE reporter LOGIN")
        ids = {
            "nightly": conn.execute("SELECT cron.schedule('nightly', '30 2 * * *', 'VACUUM') AS id").fetchone(),
            "unnamed": conn.execute("SELECT cron.schedule('*/5 * * * *', 'SELECT 1') AS id").fetchone(),
            "boot": conn.execute("SELECT cron.schedule('boot', '@reboot', 'SELECT 2') AS id").fetchone(),
        }
        out = {k: v["id"] for k, v in ids.items() if v}
        conn.execute("SELECT cron.alter_job(%s, active := false, username := 'reporter')", (out["nightly"],))
        # Forms of a newer pg_cron (1.5+), written as it stores them: its own schedule()
        # refuses them here (1.4), so the rows are inserted as a newer one would hold them.
        for name, schedule in (("month-end", "0 0 $ * *"), ("often", "30 seconds"), ("odd", "7 seconds")):
            row = conn.execute("INSERT INTO cron.job (jobname, schedule, command, active) VALUES (%s, %s, %s, false)"
                               " RETURNING jobid", (name, schedule, "SELECT 3")).fetchone()
            assert row is not None
            out[name] = row["jobid"]
        # pg_cron runs a job on its nodename: another host, or a socket directory of its own.
        for name, node in (("remote", "db2.internal"), ("socket", "/var/run/postgresql")):
            row = conn.execute("INSERT INTO cron.job (jobname, schedule, command, nodename, active) VALUES "
                               "(%s, '0 1 * * *', 'SELECT 4', %s, false) RETURNING jobid", (name, node)).fetchone()
            assert row is not None
            out[name] = row["jobid"]
    return out


def test_the_plan_reads_cron_job_and_says_why_a_job_cannot_be_carried_over(pg_cron: tuple[str, str]) -> None:
    source, awa = pg_cron
    ids = _seed(source)
    try:
        plan = imp.read_plan(source, ConnectionSource(awa, "test"), "pg_cron")
    finally:
        with _source(source) as conn:
            conn.execute("DELETE FROM cron.job")
            conn.execute("DROP ROLE reporter")
    db = source.rsplit("dbname=", 1)[1]
    got = [(j.jobid, j.name, j.cron_expr, j.timezone, j.database, j.username, j.active, j.action, j.refusal)
           for j in plan.jobs]
    assert got == [
        (ids["nightly"], "nightly", "30 2 * * *", "UTC", db, "reporter", False, "create", None),
        (ids["unnamed"], f"pg_cron-{ids['unnamed']}", "*/5 * * * *", "UTC", db, "postgres", True, "create", None),
        (ids["boot"], "boot", None, "UTC", db, "postgres", True, "refused",
         "schedule '@reboot': @reboot runs at server start: awa has no start-up fires"),
        (ids["month-end"], "month-end", "0 0 L * *", "UTC", db, "postgres", False, "create", None),
        (ids["often"], "often", "*/30 * * * * *", "UTC", db, "postgres", False, "create", None),
        (ids["odd"], "odd", None, "UTC", db, "postgres", False, "refused",
         "schedule '7 seconds': every 7 seconds does not divide a minute: awa's seconds field starts again "
         "at each minute"),
        (ids["remote"], "remote", None, "UTC", db, "postgres", False, "refused",
         "runs on node 'db2.internal': an imported job runs on its runtime's own server"),
        (ids["socket"], "socket", "0 1 * * *", "UTC", db, "postgres", False, "create", None),
    ]
    assert plan.source.endswith(f"/{db}") and plan.timezone == "UTC"


def test_an_awa_database_on_another_server_refuses_every_job(pg_cron: tuple[str, str], dsn: str) -> None:
    """The SQL jobs run on their runtime's own server: pg_cron's jobs cannot be imported into
    an awa database elsewhere (`dsn`: the suite's own server, not pg_cron's)."""
    source, _ = pg_cron
    with _source(source) as conn:
        conn.execute("SELECT cron.schedule('report', '0 6 * * 1', 'SELECT 1')")
    plan = imp.read_plan(source, ConnectionSource(dsn, "test"), "pg_cron")
    assert [(j.name, j.refusal) for j in plan.jobs] == [("report", imp.OTHER_SERVER)]
    assert imp.OTHER_SERVER == ("pg_cron runs on another server than this awa database: an imported job runs on its "
                                "runtime's own server; import into an awa database on pg_cron's server")


def _names(awa: str) -> list[dict[str, Any]]:
    with _source(awa) as conn:
        return conn.execute("SELECT name, owner, origin, kind, args, paused_at IS NOT NULL AS paused, pause_reason,"
                            " max_attempts, overlap, start_at FROM awa.cron_jobs ORDER BY name").fetchall()


def test_a_refusal_writes_nothing_unless_the_rest_are_asked_for(pg_cron: tuple[str, str]) -> None:
    source, awa = pg_cron
    with _source(source) as conn:
        conn.execute("SELECT cron.schedule('report', '0 6 * * 1', 'SELECT 1')")
        conn.execute("SELECT cron.schedule('boot', '@reboot', 'SELECT 2')")
    db = ConnectionSource(awa, "test")
    plan = imp.read_plan(source, db, "pg_cron")
    with pytest.raises(ValidationError) as caught:
        imp.apply(plan, db, "tester@test", 60, source_dsn=source)
    assert str(caught.value) == ("1 of 2 pg_cron jobs cannot be carried over (the plan says why); nothing was "
                                 "written: pass --skip-refused to import the rest")
    assert _names(awa) == []
    result = imp.apply(plan, db, "tester@test", 60, source_dsn=source, skip_refused=True)
    assert (result.created, result.paused, result.skipped) == (("report",), ("report",), ("boot",))
    row = _names(awa)[0]
    assert {k: row[k] for k in ("name", "owner", "origin", "kind", "args", "paused", "pause_reason", "max_attempts",
                                "overlap", "start_at")} == {
        "name": "report", "owner": "pg_cron", "origin": "api", "kind": SQL_KIND,
        "args": {"command": "SELECT 1", "database": source.rsplit("dbname=", 1)[1], "role": "postgres"},
        "paused": True, "pause_reason": imp.PAUSE_REASON, "max_attempts": 1, "overlap": "buffer_one",
        "start_at": None}
    # pg_cron still has both jobs, untouched, active.
    with _source(source) as conn:
        assert conn.execute("SELECT jobname, active FROM cron.job ORDER BY jobname").fetchall() == [
            {"jobname": "boot", "active": True}, {"jobname": "report", "active": True}]
    # A second import finds it made by the same owner: nothing is made twice.
    again = imp.read_plan(source, db, "pg_cron")
    assert [(j.name, j.action) for j in again.jobs] == [("report", "exists"), ("boot", "refused")]
    # Another owner's name is a refusal naming who holds it.
    other = imp.read_plan(source, db, "someone")
    assert other.jobs[0].refusal == "name 'report' is taken in awa by owner 'pg_cron'"


def test_finished_runs_come_along_once_as_finished_jobs_of_the_schedule(pg_cron: tuple[str, str]) -> None:
    source, awa = pg_cron
    db = ConnectionSource(awa, "test")
    with _source(source) as conn:
        row = conn.execute("SELECT cron.schedule('report', '*/15 * * * *', 'SELECT 1') AS id").fetchone()
        assert row is not None
        jobid = row["id"]
        # What pg_cron's worker writes per run (cron.job_run_details), as data: two finished
        # runs, one still going (left behind), one of another job.
        for other, status, message, start, end in (
                (jobid, "succeeded", "SELECT 1", "2026-01-01T10:00:00.012", "2026-01-01T10:00:00.050"),
                (jobid, "failed", 'ERROR:  relation "x" does not exist', "2026-01-01T10:15:01",
                 "2026-01-01T10:15:02"),
                (jobid, "running", None, "2026-01-01T10:30:00", None),
                (jobid + 1000, "succeeded", "SELECT 1", "2026-01-01T10:00:00", "2026-01-01T10:00:01")):
            conn.execute("INSERT INTO cron.job_run_details (jobid, database, username, command, status, return_message,"
                         " start_time, end_time) VALUES (%s, 'x', 'postgres', 'SELECT 1', %s, %s, %s, %s)",
                         (other, status, message, _at(start), _at(end) if end else None))
    result = imp.apply(imp.read_plan(source, db), db, "tester@test", 60, source_dsn=source, history=True)
    again = imp.apply(imp.read_plan(source, db), db, "tester@test", 60, source_dsn=source, history=True)
    with _source(awa) as conn:
        jobs = conn.execute("SELECT state, run_at, created_at, finalized_at, metadata ->> 'cron_name' AS name,"
                            " metadata ->> 'cron_fire_time' AS fire, errors -> 0 ->> 'error' AS error"
                            " FROM awa.jobs ORDER BY id").fetchall()
    with Client(awa, operator="tester@test") as client:  # `cron why NAME --at` names the run pg_cron made
        failed = client.reads.why("report", at=_at("2026-01-01T10:15:00")).text
        missing = client.reads.why("report", at=_at("2026-01-01T10:30:00")).text
    assert failed.startswith("report: 2026-01-01T10:15:00Z ran in pg_cron before the import (job 2, failed: "
                             'ERROR:  relation "x" does not exist); the schedule was created ')
    with Client(awa, operator="tester@test") as client:  # `cron history` lists them before its own instants
        ran = client.reads.ledger("report", until=_at("2026-01-02T00:00:00"))
        last = client.reads.ledger("report", until=_at("2026-01-02T00:00:00"), limit=1)
        since = client.reads.ledger("report", since=_at("2026-01-01T10:10:00"), until=_at("2026-01-02T00:00:00"))
        strip = client.reads.outcome_strip("report")
    assert [(v.instant, v.verdict, v.job_id, v.result, v.reason) for v in ran] == [
        (_at("2026-01-01T10:00:00"), "imported", 1, "ok", "pg_cron"),
        (_at("2026-01-01T10:15:00"), "imported", 2, "failed", "pg_cron")]
    assert [describe(v) for v in ran] == [
        "2026-01-01T10:00:00Z: ran in pg_cron before the import (job 1, completed).",
        '2026-01-01T10:15:00Z: ran in pg_cron before the import (job 2, failed: ERROR:  relation "x" does not exist).']
    assert [v.job_id for v in last] == [v.job_id for v in since] == [2]
    assert [v for v in strip if v.verdict == "imported"] == []  # the strip shows its own instants only
    assert missing.startswith("report: not due at 2026-01-01T10:30:00Z: the schedule did not exist yet: ")
    assert (result.history, again.history) == (2, 0)
    assert jobs == [
        {"state": "completed", "run_at": _at("2026-01-01T10:00:00"), "created_at": _at("2026-01-01T10:00:00.012"),
         "finalized_at": _at("2026-01-01T10:00:00.050"), "name": "report", "fire": "2026-01-01T10:00:00Z",
         "error": None},
        {"state": "discarded", "run_at": _at("2026-01-01T10:15:00"), "created_at": _at("2026-01-01T10:15:01"),
         "finalized_at": _at("2026-01-01T10:15:02"), "name": "report", "fire": "2026-01-01T10:15:00Z",
         "error": 'ERROR:  relation "x" does not exist'},
    ]
    with _source(source) as conn:
        conn.execute("DELETE FROM cron.job_run_details")


def test_the_sql_kind_runs_as_the_recorded_role_and_its_timeout_is_the_jobs_error(pg_cron: tuple[str, str]) -> None:
    source, awa = pg_cron
    db = source.rsplit("dbname=", 1)[1]
    with _source(source) as conn:
        conn.execute("DROP ROLE IF EXISTS clerk")
        conn.execute("CREATE ROLE clerk")
        conn.execute("CREATE TABLE IF NOT EXISTS ran (who text, at_db text)")
        conn.execute("TRUNCATE ran")
        conn.execute("GRANT INSERT ON ran TO clerk")
    client = Client(awa, operator="tester@test")
    try:
        client.enable_sql_jobs(timedelta(milliseconds=300))
        quoted = client.enqueue(SQL_KIND, {"command": "INSERT INTO ran VALUES (current_user, current_database()); "
                                           "INSERT INTO ran VALUES (session_user, 'second statement')",
                                           "database": db, "role": "clerk"}, max_attempts=1)
        slow = client.enqueue(SQL_KIND, {"command": "SELECT pg_sleep(5)", "database": db, "role": "clerk"},
                              max_attempts=1)
        denied = client.enqueue(SQL_KIND, {"command": "CREATE TABLE clerk_made (x int)", "database": db,
                                           "role": "clerk"}, max_attempts=1)
        outcomes = dict((job.id, state) for job, state in client.work_once())
        wait_for(lambda: outcomes.update((job.id, state) for job, state in client.work_once()) or len(outcomes) >= 3,
                 30, what="the three SQL jobs to finish")
        with _source(awa) as conn:
            jobs = {r["id"]: r for r in conn.execute("SELECT id, state, errors FROM awa.jobs WHERE id = ANY(%s)",
                                                     ([quoted, slow, denied],)).fetchall()}
    finally:
        client.close()
        with _source(source) as conn:
            rows = conn.execute("SELECT who, at_db FROM ran ORDER BY at_db").fetchall()
            conn.execute("DROP TABLE ran")
            conn.execute("DROP OWNED BY clerk")
            conn.execute("DROP ROLE clerk")
    assert rows == [{"who": "clerk", "at_db": db}, {"who": "postgres", "at_db": "second statement"}]
    assert jobs[quoted]["state"] == "completed"
    assert jobs[slow]["state"] == "discarded"
    assert "canceling statement due to statement timeout" in jobs[slow]["errors"][-1]["error"]
    assert jobs[denied]["state"] == "discarded"
    assert "permission denied for schema public" in jobs[denied]["errors"][-1]["error"]


TICK = "INSERT INTO ticks SELECT %s, date_trunc('minute', now()), current_setting('application_name')"


def test_the_switch_over_against_the_real_pg_cron_worker_runs_every_instant_once(pg_cron: tuple[str, str]) -> None:
    """Two pg_cron jobs every minute count their runs in a table of their own; `tock` was
    imported before (a paused schedule), `tick` not. Both are switched over while pg_cron's
    worker runs them, and a leading runtime with SQL jobs runs the awa side. For each, every
    minute from pg_cron's first run to its switch instant T has exactly one row: pg_cron's
    before T, awa's at T (the oracle: minutes counted by the test, not by the code).
    Negative control: a third job, `naive`, switched the obvious way (a running schedule made
    and the pg_cron job deactivated, no switch instant): the same oracle sees its doubled
    instant, pg_cron's last minute run again by awa's first fire."""
    source, awa = pg_cron
    with _source(source) as conn:
        conn.execute("DROP TABLE IF EXISTS ticks")
        conn.execute("CREATE TABLE ticks (job text NOT NULL, minute timestamptz NOT NULL, app text NOT NULL)")
        for name in ("tick", "tock", "naive"):
            conn.execute("SELECT cron.schedule(%s, '* * * * *', format(%s, quote_literal(%s)))", (name, TICK, name))
    db = ConnectionSource(awa, "test")
    before = imp.apply(imp.read_plan(source, db), db, "tester@test", 60, source_dsn=source)
    assert before.paused == ("tick", "tock", "naive")
    with _source(awa) as conn:  # only tock was imported before
        conn.execute("DELETE FROM awa.cron_jobs WHERE name IN ('tick', 'naive')")

    def ticks(job: str) -> list[dict[str, Any]]:
        with _source(source) as conn:
            return conn.execute("SELECT minute, app FROM ticks WHERE job = %s ORDER BY minute, app", (job,)).fetchall()

    def source_now() -> datetime:
        with _source(source) as conn:
            row = conn.execute("SELECT clock_timestamp() AS now").fetchone()
        assert row is not None
        return row["now"]  # type: ignore[no-any-return]

    first = {job: wait_for(lambda job=job: ticks(job), 75, interval=0.2,  # type: ignore[misc]
                           what=f"pg_cron's worker to run {job} once")[0]["minute"]
             for job in ("tick", "tock", "naive")}
    client = Client(awa, operator="tester@test")
    try:
        client.enable_sql_jobs()
        client.start(lead=True, migrate=False)
        plan = imp.read_plan(source, db)
        assert [(j.name, j.action) for j in plan.jobs] == [("tick", "create"), ("tock", "exists"),
                                                           ("naive", "create")]
        naive = plan.jobs[2]
        client.create_schedule("naive", "* * * * *", SQL_KIND, {"command": naive.command, "database": naive.database,
                                                               "role": naive.username}, owner="naive")
        with _source(source) as conn:
            conn.execute("SELECT cron.alter_job(%s, active := false)", (naive.jobid,))
        plan = imp.ImportPlan(plan.source, plan.timezone, plan.owner, plan.jobs[:2])
        result = imp.apply(plan, db, "tester@test", 60, source_dsn=source, unschedule=True, history=True)
        at = {s.name: s.at for s in result.switched}
        for job in ("tick", "tock"):
            wait_for(lambda job=job: any(r["minute"] == at[job] for r in ticks(job)), 90,  # type: ignore[misc]
                     interval=0.2, what=f"awa to run {job} at {at[job]}")
        # pg_cron's worker starts a minute's runs within milliseconds of it: 5 s past T, a
        # run of T by pg_cron would be there.
        last = max(at.values())
        wait_for(lambda: source_now() >= last + timedelta(seconds=5), 30, interval=0.2, what="5 s past the switch")
        rows = {job: ticks(job) for job in ("tick", "tock", "naive")}
    finally:
        client.close()
    with _source(source) as conn:
        jobs = conn.execute("SELECT jobname, active FROM cron.job ORDER BY jobname").fetchall()
    for job in ("tick", "tock"):
        minutes = int((at[job] - first[job]).total_seconds() // 60)
        expected = [(first[job] + timedelta(minutes=k), "pg_cron") for k in range(minutes)]
        assert [(r["minute"], r["app"]) for r in rows[job]] == [*expected, (at[job], "awa-tui sql job")]
    assert (result.created, result.paused) == (("tick",), ())
    # pg_cron's runs before the switch came along (--history) as finished jobs, one per minute it ran.
    with _source(awa) as conn:
        carried = conn.execute("SELECT metadata ->> 'cron_name' AS name, run_at, state FROM awa.jobs"
                               " WHERE metadata ->> 'imported_from' = 'pg_cron' ORDER BY 1, 2").fetchall()
    assert carried == [{"name": job, "run_at": minute, "state": "completed"} for job in ("tick", "tock")
                       for minute, app in [(r["minute"], r["app"]) for r in rows[job]] if app == "pg_cron"]
    assert result.history == len(carried)
    assert jobs == [{"jobname": job, "active": False} for job in ("naive", "tick", "tock")]
    with _source(awa) as conn:
        made = conn.execute("SELECT name, start_at, paused_at, owner FROM awa.cron_jobs ORDER BY name").fetchall()
    assert made[1:] == [{"name": job, "start_at": at[job], "paused_at": None, "owner": "pg_cron"}
                        for job in ("tick", "tock")]
    # The control: pg_cron's last minute of `naive` ran twice, once on each side.
    apps: dict[datetime, list[str]] = {}
    for r in rows["naive"]:
        apps.setdefault(r["minute"], []).append(r["app"])
    doubled = {minute: names for minute, names in apps.items() if len(names) > 1}
    assert list(doubled.values()) == [["awa-tui sql job", "pg_cron"]]


@pytest.mark.parametrize("may_deactivate", [False, True])
def test_a_switch_pg_cron_refuses_leaves_the_job_with_pg_cron_and_no_schedule(
        pg_cron: tuple[str, str], may_deactivate: bool) -> None:
    """The pg_cron job cannot be deactivated (its role may not call cron.alter_job): the
    schedule made for it is deleted again and pg_cron keeps running the job, refused in one
    line naming pg_cron's database. Control: with the right, the same switch goes through."""
    source, awa = pg_cron
    db_name = source.rsplit("dbname=", 1)[1]
    with _source(source) as conn:
        conn.execute("DROP ROLE IF EXISTS viewer")
        conn.execute("CREATE ROLE viewer LOGIN")
        conn.execute("GRANT USAGE ON SCHEMA cron TO viewer")  # pg_cron's own advice for its users
        conn.execute("SELECT cron.schedule_in_database('yearly', '0 0 1 1 *', 'SELECT 1', %s, 'viewer')", (db_name,))
        # pg_cron revokes alter_job from PUBLIC and leaves the grant to the admin: stated here
        # either way, so the outcome never depends on which test ran before on this server.
        conn.execute("REVOKE EXECUTE ON FUNCTION cron.alter_job(bigint, text, text, text, text, boolean) FROM PUBLIC")
        if may_deactivate:
            conn.execute("GRANT EXECUTE ON FUNCTION cron.alter_job(bigint, text, text, text, text, boolean) TO viewer")
    as_viewer = f"{source} user=viewer"
    db = ConnectionSource(awa, "test")
    try:
        plan = imp.read_plan(as_viewer, db)
        assert [(j.name, j.action) for j in plan.jobs] == [("yearly", "create")]
        if may_deactivate:
            result = imp.apply(plan, db, "tester@test", 60, source_dsn=as_viewer, unschedule=True)
            assert [s.name for s in result.switched] == ["yearly"]
        else:
            with pytest.raises(AwaError) as caught:
                imp.apply(plan, db, "tester@test", 60, source_dsn=as_viewer, unschedule=True)
            assert str(caught.value) == "pg_cron database: permission denied for function alter_job"
    finally:
        with _source(source) as conn:
            active = conn.execute("SELECT active FROM cron.job WHERE jobname = 'yearly'").fetchone()
            conn.execute("DELETE FROM cron.job")
            conn.execute("DROP OWNED BY viewer")
            conn.execute("DROP ROLE viewer")
    assert active == {"active": not may_deactivate}
    assert [r["name"] for r in _names(awa)] == (["yearly"] if may_deactivate else [])


def test_a_role_name_is_quoted_as_an_identifier_never_run_as_sql(pg_cron: tuple[str, str]) -> None:
    """A recorded user whose name reads as SQL is one role name: the job runs as that role."""
    source, awa = pg_cron
    db = source.rsplit("dbname=", 1)[1]
    odd = 'x"; RESET ROLE; --'
    with _source(source) as conn:
        conn.execute("DROP TABLE IF EXISTS odd_ran")
        conn.execute("CREATE TABLE odd_ran (who text)")
        conn.execute(psycopg.sql.SQL("DROP ROLE IF EXISTS {}").format(psycopg.sql.Identifier(odd)))
        conn.execute(psycopg.sql.SQL("CREATE ROLE {}").format(psycopg.sql.Identifier(odd)))
        conn.execute(psycopg.sql.SQL("GRANT INSERT ON odd_ran TO {}").format(psycopg.sql.Identifier(odd)))
    try:
        with Client(awa, operator="tester@test") as client:
            client.enable_sql_jobs()
            job_id = client.enqueue(SQL_KIND, {"command": "INSERT INTO odd_ran VALUES (current_user)",
                                               "database": db, "role": odd}, max_attempts=1)
            wait_for(lambda: client.work_once() or _state(awa, job_id) in ("completed", "discarded"), 30,
                     what="the SQL job to finish")
            assert _state(awa, job_id) == "completed"
        with _source(source) as conn:
            assert conn.execute("SELECT who FROM odd_ran").fetchall() == [{"who": odd}]
    finally:
        with _source(source) as conn:
            conn.execute("DROP TABLE odd_ran")
            conn.execute(psycopg.sql.SQL("DROP ROLE {}").format(psycopg.sql.Identifier(odd)))


def _state(awa: str, job_id: int) -> str:
    with _source(awa) as conn:
        row = conn.execute("SELECT state FROM awa.jobs WHERE id = %s", (job_id,)).fetchone()
    assert row is not None
    return str(row["state"])
