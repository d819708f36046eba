"""The `awa-tui` CLI on an upstream Awa (awa-pg 0.6.9) database, through the real executable:
upstream mode is automatic, its actions are honoured by upstream's own leader and worker
(observed in upstream's tables), and every other command refuses in one line.

Expected instants are worked out by hand in the comments, never by awa-tui's cron code.
"""

from __future__ import annotations

import json
from calendar import monthrange
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg
from awa_pg_env import UpstreamProcess
from helpers import wait_for
from psycopg.conninfo import conninfo_to_dict
from reliability.cli_tree import Leaf, Outcome, assert_one_line_error, leaves, run_cli
from upstream_oracles import every_second, fired_after, insert_schedule, jobs

from awa_tui.engine.core.db import describe_dsn

OPERATOR = "alice@ops"
NOT_AUDITED = ("warning: not audited: this database has no awa-tui audit trail; "
               "run `awa-tui db init-audit` to record operator actions")
# Text of a raw database error that must never reach the user.
RAW_SQL = ("SELECT", "INSERT", "UPDATE ", "relation ", "column ", "syntax error", "database error", "LINE 1")


def awa(*args: str) -> Outcome:
    return run_cli(list(args), {"COLUMNS": "200", "NO_COLOR": "1"})


def awa_json(*args: str, stderr: str = "") -> Any:
    """Run with --json: it must succeed with exactly `stderr` on stderr, and parse."""
    out = awa(*args, "--json")
    assert out.code == 0, out.describe()
    assert out.stderr == stderr, out.describe()
    return json.loads(out.stdout)


def _awa_relations(conn: psycopg.Connection[Any]) -> list[str]:
    return [r["relname"] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'awa' ORDER BY c.relname").fetchall()]


def _db_now(conn: psycopg.Connection[Any]) -> datetime:
    return conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]  # type: ignore[index]


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


# --- reads ---------------------------------------------------------------------------------------


def test_cron_list_and_next_show_upstreams_schedules_with_right_next_fires(
    start_upstream: Callable[..., UpstreamProcess], upstream_dsn: str, upstream_conn: Any
) -> None:
    start_upstream([
        {"name": "new-year", "cron": "0 0 1 1 *", "args_class": "UpYear", "queue": "q1"},
        {"name": "ny-new-year-9am", "cron": "0 9 1 1 *", "args_class": "UpNyYear", "queue": "q1",
         "timezone": "America/New_York"},
        {"name": "berlin-0230", "cron": "30 2 * * *", "args_class": "UpNight", "queue": "q1",
         "timezone": "Europe/Berlin"},
        {"name": "last-day-of-month", "cron": "0 0 L * *", "args_class": "UpLast", "queue": "q1"},
    ], [("q1", 2)])
    wait_for(lambda: len(awa_json("cron", "list", "--dsn", upstream_dsn)) == 4, timeout=30,
             what="upstream's leader to sync the 4 schedules")
    before = _db_now(upstream_conn)
    rows = {r["name"]: r for r in awa_json("cron", "list", "--dsn", upstream_dsn)}
    after = _db_now(upstream_conn)
    assert before.year == after.year and (before.month, before.day) != (1, 1)  # no new year in between
    year = before.year + 1
    assert list(rows) == ["berlin-0230", "last-day-of-month", "new-year", "ny-new-year-9am"]
    # Midnight UTC on 1 January of next year.
    assert rows["new-year"]["next_fire_at"] == datetime(year, 1, 1, tzinfo=UTC).isoformat()
    # 09:00 in New York on 1 January is EST (UTC-5): 14:00 UTC.
    assert rows["ny-new-year-9am"]["next_fire_at"] == datetime(year, 1, 1, 14, tzinfo=UTC).isoformat()
    # croner's L reads healthy (S55): midnight UTC on the last day of this month, or of the next
    # when today is the last day (its midnight is past).
    assert before.date() == after.date()
    month_end = date(before.year, before.month, monthrange(before.year, before.month)[1])
    if before.date() == month_end:
        following = month_end + timedelta(days=1)
        month_end = date(following.year, following.month, monthrange(following.year, following.month)[1])
    assert (rows["last-day-of-month"]["next_fire_at"], rows["last-day-of-month"]["problem"]) == (
        datetime(month_end.year, month_end.month, month_end.day, tzinfo=UTC).isoformat(), None)
    assert {(r["kind"], r["queue"], r["timezone"], r["state"], r["queue_paused"], r["paused_by"])
            for r in rows.values()} == {
        ("up_year", "q1", "UTC", "active", False, None), ("up_ny_year", "q1", "America/New_York", "active", False,
                                                         None),
        ("up_night", "q1", "Europe/Berlin", "active", False, None), ("up_last", "q1", "UTC", "active", False, None),
    }
    assert [r["name"] for r in awa_json("cron", "list", "--filter", "NEW-YEAR", "--dsn", upstream_dsn)] == [
        "new-year", "ny-new-year-9am"]
    text = awa("cron", "list", "--dsn", upstream_dsn)
    assert (text.code, text.stderr) == (0, "")
    assert f"{year}-01-01 14:00:00+0000" in text.stdout and "active" in text.stdout

    # 28 March 2027 is Berlin's spring-forward (02:00 CET -> 03:00 CEST at 01:00 UTC): 02:30 does
    # not exist and fires at the end of the gap, 01:00 UTC; then 02:30 CEST = 00:30 UTC.
    fires = awa_json("cron", "next", "berlin-0230", "-n", "3", "--after", "2027-03-27T12:00:00Z",
                     "--dsn", upstream_dsn)
    assert fires == [
        {"utc": "2027-03-28T01:00:00+00:00", "local": "2027-03-28T03:00:00+02:00", "timezone": "Europe/Berlin",
         "dst": "gap", "excluded": None},
        {"utc": "2027-03-29T00:30:00+00:00", "local": "2027-03-29T02:30:00+02:00", "timezone": "Europe/Berlin",
         "dst": None, "excluded": None},
        {"utc": "2027-03-30T00:30:00+00:00", "local": "2027-03-30T02:30:00+02:00", "timezone": "Europe/Berlin",
         "dst": None, "excluded": None},
    ]
    assert awa_json("cron", "next", "new-year", "-n", "2", "--dsn", upstream_dsn) == [
        {"utc": datetime(y, 1, 1, tzinfo=UTC).isoformat(), "local": datetime(y, 1, 1, tzinfo=UTC).isoformat(),
         "timezone": "UTC", "dst": None, "excluded": None} for y in (year, year + 1)]
    # 31 March and 30 April 2027, midnight UTC.
    assert awa_json("cron", "next", "last-day-of-month", "-n", "2", "--after", "2027-03-27T12:00:00Z",
                    "--dsn", upstream_dsn) == [
        {"utc": f"2027-0{m}-{d}T00:00:00+00:00", "local": f"2027-0{m}-{d}T00:00:00+00:00", "timezone": "UTC",
         "dst": None, "excluded": None} for m, d in ((3, 31), (4, 30))]


def test_runtime_list_and_queue_list_read_upstreams_runtime(
    start_upstream: Callable[..., UpstreamProcess], upstream_dsn: str, upstream_conn: Any
) -> None:
    proc = start_upstream([every_second("tick", "UpTick")], [("q1", 2)])
    wait_for(lambda: sum(j["state"] == "completed" for j in jobs(upstream_conn, "tick")) >= 2, timeout=30,
             what="two fires completed by upstream's worker")
    wait_for(lambda: awa_json("runtime", "list", "--dsn", upstream_dsn), timeout=20,
             what="upstream's runtime snapshot")
    proc.stop()  # from here on, nothing changes under the reads

    runtimes = awa_json("runtime", "list", "--dsn", upstream_dsn)
    oracle_rt = upstream_conn.execute("SELECT healthy, shutting_down FROM awa.runtime_instances").fetchone()
    health = "healthy" if oracle_rt["healthy"] else "unhealthy"  # a stopped runtime reports itself unhealthy
    assert [(r["pid"], r["is_leader"], r["queues"], r["snapshot_interval"], r["health"], r["shutting_down"])
            for r in runtimes] == [(proc.proc.pid, True, ["q1"], 10.0, health, oracle_rt["shutting_down"])]
    text = awa("runtime", "list", "--dsn", upstream_dsn)
    assert (text.code, text.stderr) == (0, "") and str(proc.proc.pid) in text.stdout

    # Each CLI read is compared with the oracle read just after it, until they agree: with
    # upstream's two storage engines, its awa.jobs view was seen to omit a row on one read.
    def queues_vs_oracle() -> tuple[list[Any], list[Any]] | None:
        queues = awa_json("queue", "list", "--dsn", upstream_dsn)
        counts = upstream_conn.execute(
            "SELECT count(*) FILTER (WHERE state = 'completed') AS completed, "
            "count(*) FILTER (WHERE state = 'available') AS available FROM awa.jobs WHERE queue = 'q1'"
        ).fetchone()
        got = [(q["queue"], q["paused"], q["paused_by"], q["schedules"], q["completed"], q["available"], q["running"])
               for q in queues]
        want = [("q1", False, None, 1, counts["completed"], counts["available"], 0)]
        return (got, want) if got == want else None

    got, want = wait_for(queues_vs_oracle, timeout=10, what="queue list to agree with awa.jobs")
    assert got == want and want[0][4] >= 2

    def fires_vs_oracle() -> tuple[dict[str, Any], list[Any], list[Any]] | None:
        shown = awa_json("cron", "show", "tick", "--dsn", upstream_dsn)
        oracle = upstream_conn.execute(
            "SELECT id, state::text AS state, (metadata ->> 'cron_fire_time')::timestamptz AS fire_time "
            "FROM awa.jobs WHERE metadata ->> 'cron_name' = 'tick' ORDER BY id DESC LIMIT 10").fetchall()
        got = [(f["id"], f["state"], f["fire_time"], f["manual"]) for f in shown["recent_fires"]]
        want = [(j["id"], j["state"], _iso(j["fire_time"]), False) for j in oracle]
        return (shown, got, want) if got == want else None

    shown, got, want = wait_for(fires_vs_oracle, timeout=10, what="cron show's recent fires to agree with awa.jobs")
    assert got == want and len(want) >= 2
    assert (shown["name"], shown["cron_expr"], shown["kind"], shown["state"]) == ("tick", "* * * * * *", "up_tick",
                                                                                 "active")


# --- actions upstream's leader and worker honour --------------------------------------------------


def test_cli_pause_stops_upstreams_leader_and_resume_restarts_it(
    start_upstream: Callable[..., UpstreamProcess], upstream_dsn: str, upstream_conn: Any
) -> None:
    start_upstream([every_second("tick-a", "UpTickA"), every_second("tick-b", "UpTickB")], [("q1", 2)])
    wait_for(lambda: len(jobs(upstream_conn, "tick-a")) >= 2, timeout=30, what="upstream to fire tick-a")

    paused = awa("cron", "pause", "tick-a", "--operator", OPERATOR, "--dsn", upstream_dsn)
    assert (paused.code, paused.stdout, paused.stderr) == (0, "paused tick-a\n", NOT_AUDITED + "\n")
    row = upstream_conn.execute("SELECT paused_at, paused_by FROM awa.cron_jobs WHERE name = 'tick-a'").fetchone()
    assert row["paused_by"] == OPERATOR
    # paused_at is the pause transaction's start; it committed within the next second.
    settled = row["paused_at"] + timedelta(seconds=1)
    violations: list[dict[str, Any]] = []

    def control_fired_three_more() -> bool:
        violations.extend(fired_after(upstream_conn, "tick-a", settled))
        return len(fired_after(upstream_conn, "tick-b", settled)) >= 3

    wait_for(control_fired_three_more, timeout=30, what="three fires of the control schedule after the pause")
    assert violations == []
    listed = {r["name"]: r for r in awa_json("cron", "list", "--dsn", upstream_dsn)}
    assert (listed["tick-a"]["state"], listed["tick-a"]["paused_by"], listed["tick-a"]["paused_at"]) == (
        "paused", OPERATOR, _iso(row["paused_at"]))
    assert listed["tick-b"]["state"] == "active"
    text = awa("cron", "list", "--dsn", upstream_dsn)
    assert f"PAUSED by {OPERATOR}" in text.stdout
    assert awa("cron", "pause", "tick-a", "--dsn", upstream_dsn).stderr == (
        f"error: schedule 'tick-a' is already paused (by '{OPERATOR}')\n")

    resumed = awa_json("cron", "resume", "tick-a", "--operator", OPERATOR, "--dsn", upstream_dsn,
                       stderr=NOT_AUDITED + "\n")
    assert (resumed["name"], resumed["state"], resumed["paused_at"], resumed["paused_by"], resumed["audited"]) == (
        "tick-a", "active", None, None, False)
    resumed_at = _db_now(upstream_conn)
    wait_for(lambda: len(fired_after(upstream_conn, "tick-a", resumed_at)) >= 2, timeout=30,
             what="upstream to fire tick-a again after the CLI resume")


def test_cli_trigger_makes_a_job_upstreams_worker_completes(
    start_upstream: Callable[..., UpstreamProcess], upstream_dsn: str, upstream_conn: Any
) -> None:
    # Once a year at midnight on 1 January: upstream's leader has nothing to fire today.
    start_upstream([{"name": "yearly", "cron": "0 0 1 1 *", "args_class": "UpRare", "queue": "q1"}], [("q1", 2)])
    wait_for(lambda: awa_json("cron", "list", "--dsn", upstream_dsn), timeout=30,
             what="upstream's leader to sync the schedule")

    # q1 paused first, so the triggered job waits where cron show can see it: upstream keeps
    # finished jobs in ring partitions its maintenance truncates, so a completed job may
    # already be gone from its awa.jobs view by the time it is read.
    awa_json("queue", "pause", "q1", "--operator", OPERATOR, "--dsn", upstream_dsn, stderr=NOT_AUDITED + "\n")
    job = awa_json("cron", "trigger", "yearly", "--operator", OPERATOR, "--dsn", upstream_dsn,
                   stderr=NOT_AUDITED + "\n")
    # The console's TriggeredJob (the one backend of upstream mode) with the name and the audit.
    assert set(job) == {"id", "kind", "queue", "state", "metadata", "created_at", "name", "audited", "audit_id"}
    assert (job["name"], job["kind"], job["queue"], job["state"], job["metadata"], job["audited"],
            job["audit_id"]) == ("yearly", "up_rare", "q1", "available",
                                 {"cron_name": "yearly", "triggered_manually": True}, False, None)
    # Waited for: upstream's awa.jobs view was seen to omit an existing job on one read.
    shown = wait_for(lambda: (s := awa_json("cron", "show", "yearly", "--dsn", upstream_dsn))["recent_fires"] and s,
                     timeout=10, what="the trigger in cron show's recent fires")
    assert [(f["id"], f["state"], f["manual"], f["fire_time"]) for f in shown["recent_fires"]] == [
        (job["id"], "available", True, None)]
    seen = wait_for(lambda: {j["id"]: j for j in jobs(upstream_conn, "yearly")}, timeout=10,
                    what="the triggered job in upstream's awa.jobs view")
    assert [(i, j["state"]) for i, j in seen.items()] == [(job["id"], "available")]
    resumed = awa("queue", "resume", "q1", "--operator", OPERATOR, "--dsn", upstream_dsn)
    assert resumed.code == 0

    def finished() -> list[dict[str, Any]]:
        # A job seen waiting and gone since has finished too: upstream truncates finished
        # jobs from its ring partitions, a waiting or running one never leaves the view.
        current = {j["id"]: j for j in jobs(upstream_conn, "yearly")}
        seen.update(current)
        return [j for i, j in seen.items() if j["state"] == "completed" or i not in current]

    done = wait_for(finished, timeout=30, what="upstream's worker to complete the triggered job")
    assert [(j["id"], j["kind"], j["queue"], j["metadata"]) for j in done] == [
        (job["id"], "up_rare", "q1", {"cron_name": "yearly", "triggered_manually": True})]
    text = awa("cron", "trigger", "yearly", "--operator", OPERATOR, "--dsn", upstream_dsn)
    assert text.code == 0 and text.stdout.startswith("triggered yearly: job ")


def test_cli_queue_pause_stops_upstreams_dispatch_until_resumed(
    start_upstream: Callable[..., UpstreamProcess], upstream_dsn: str, upstream_conn: Any
) -> None:
    start_upstream([every_second("tick-q", "UpTickQ", queue="qp")], [("qp", 2)])
    wait_for(lambda: any(j["state"] == "completed" for j in jobs(upstream_conn, "tick-q")), timeout=30,
             what="a first fire completed on qp")

    paused = awa_json("queue", "pause", "qp", "--operator", OPERATOR, "--dsn", upstream_dsn,
                      stderr=NOT_AUDITED + "\n")
    meta = upstream_conn.execute("SELECT paused, paused_at, paused_by FROM awa.queue_meta WHERE queue = 'qp'"
                                 ).fetchone()
    assert paused == {"queue": "qp", "paused": True, "paused_at": _iso(meta["paused_at"]), "paused_by": OPERATOR,
                      "audited": False, "audit_id": None}
    settled = meta["paused_at"] + timedelta(seconds=1)
    held = wait_for(lambda: (new := fired_after(upstream_conn, "tick-q", settled)) and len(new) >= 3 and new,
                    timeout=30, what="three fires into the paused queue")
    assert {(j["state"], j["attempt"]) for j in held} == {("available", 0)}
    # Waited for: upstream's awa.jobs view was seen to omit a row on one read.
    listed = wait_for(lambda: (q := awa_json("queue", "list", "--dsn", upstream_dsn)) and q[0]["available"] >= 3
                      and q, timeout=10, what="queue list to count the three held jobs")
    assert [(q["queue"], q["paused"], q["paused_by"]) for q in listed] == [("qp", True, OPERATOR)]

    resumed = awa("queue", "resume", "qp", "--operator", OPERATOR, "--dsn", upstream_dsn)
    assert (resumed.code, resumed.stdout, resumed.stderr) == (0, "resumed queue qp\n", NOT_AUDITED + "\n")
    held_ids = {j["id"] for j in held}
    completed: set[int] = set()  # accumulated: a row may be missing from one read of the view

    def held_jobs_completed() -> bool:
        completed.update(j["id"] for j in jobs(upstream_conn, "tick-q") if j["state"] == "completed")
        return completed >= held_ids

    wait_for(held_jobs_completed, timeout=30, what="upstream's worker to run the held jobs after the CLI resume")


# --- schema, refusals, audit ----------------------------------------------------------------------


def test_cron_create_every_is_refused_in_one_line(upstream_dsn: str, upstream_conn: Any) -> None:
    relations = _awa_relations(upstream_conn)
    refused = awa("cron", "create", "poll", "--every", "90s", "--kind", "k", "--dsn", upstream_dsn)
    assert_one_line_error(refused)
    assert refused.stderr == (
        "error: --every: upstream Awa has no interval schedules; this database holds upstream Awa's schema\n")
    assert _awa_relations(upstream_conn) == relations


def test_migrate_refuses_in_one_line_and_db_status_names_the_upstream_schema(
    upstream_dsn: str, upstream_conn: Any, awa_pg_schema_version: int, dsn: str
) -> None:
    relations = _awa_relations(upstream_conn)
    refused = awa("migrate", "--dsn", upstream_dsn)
    assert_one_line_error(refused)
    assert refused.stderr == (
        f"error: refusing to migrate: this database holds an upstream Awa (awa-pg) schema version "
        f"{awa_pg_schema_version} (awa.schema_version); awa-tui migrations would damage it (operate it in "
        "upstream mode, or give awa-tui its own database)\n")
    assert _awa_relations(upstream_conn) == relations

    detail = f"upstream Awa (awa-pg) schema version {awa_pg_schema_version} (awa.schema_version)"
    assert awa_json("db", "status", "--dsn", upstream_dsn) == {
        "database": describe_dsn(upstream_dsn), "schema": "upstream", "version": awa_pg_schema_version,
        "detail": detail, "upstream_mode": True, "audit_trail": False, "standby": False, "replay_lag_s": None}
    text = awa("db", "status", "--dsn", upstream_dsn)
    assert (text.code, text.stderr) == (0, "")
    assert detail in text.stdout and "upstream" in text.stdout
    password = conninfo_to_dict(upstream_dsn).get("password")
    if password:  # the embedded test server's TCP password must not be shown
        assert password not in text.stdout

    ours = awa_json("db", "status", "--dsn", dsn)
    assert (ours["schema"], ours["upstream_mode"], ours["audit_trail"]) == ("awa-tui", False, None)
    assert ours["detail"] == f"awa-tui schema version {ours['version']} (awa.schema_migrations)"


def test_every_cli_leaf_works_or_fails_in_one_line_on_an_upstream_database(
    upstream_dsn: str, upstream_conn: Any, awa_pg_schema_version: int
) -> None:
    insert_schedule(upstream_conn, "rel-x", queue="rel-q")
    relations = _awa_relations(upstream_conn)
    outcomes: dict[tuple[str, ...], Outcome] = {}
    # The tree walk skips the `db` group: `db status` with the database is swept too.
    swept = [*leaves(), Leaf(("db", "status"), (), (), False)]
    assert len(swept) >= 22  # the tree was really walked
    for leaf in swept:
        argv = [*leaf.argv({"name": "rel-x", "queue": "rel-q", "owner": "rel-owner"}), "--dsn", upstream_dsn]
        if leaf.mutates:
            argv += ["--operator", OPERATOR]
        out = awa(*argv)
        outcomes[leaf.path] = out
        assert "Traceback" not in out.stdout + out.stderr, out.describe()
        assert not any(raw in out.stderr for raw in RAW_SQL), out.describe()
        if out.code != 0:
            assert_one_line_error(out)
        else:
            assert out.stderr in ("", NOT_AUDITED + "\n"), out.describe()

    needs = f"awa-tui's own schema; this database holds upstream Awa schema v{awa_pg_schema_version}"
    expected_refusals = {
        ("owner", "list"): "owners need", ("owner", "retire"): "owners need", ("owner", "restore"): "owners need",
        ("cron", "adopt"): "owners need", ("cron", "transfer"): "owners need", ("plan",): "reconciliation plans need",
        ("cron", "retire"): "retiring a schedule needs", ("cron", "restore"): "restoring a schedule needs",
        ("cron", "remove"): "removing a schedule needs", ("queue", "drain"): "draining a queue needs",
    }
    for path, what in expected_refusals.items():
        assert outcomes[path].stderr == f"error: {what} {needs}\n", outcomes[path].describe()
    working = [("cron", "list"), ("cron", "show"), ("cron", "next"), ("cron", "pause"), ("cron", "trigger"),
               ("queue", "list"), ("queue", "pause"), ("runtime", "list"), ("db", "status")]
    assert [p for p in working if outcomes[p].code != 0] == []
    # Resumes come after the pauses in the sweep's (sorted) order: they work too.
    assert (outcomes[("cron", "resume")].code, outcomes[("queue", "resume")].code) == (0, 0)
    assert outcomes[("audit",)].stderr == (
        f"error: awa-tui's audit trail does not exist on this database (upstream Awa schema "
        f"v{awa_pg_schema_version}); `awa-tui db init-audit` creates it\n")
    # Nothing of upstream's schema was created, dropped or left behind; the schedule is intact.
    assert _awa_relations(upstream_conn) == relations
    assert upstream_conn.execute("SELECT name, paused_at FROM awa.cron_jobs").fetchall() == [
        {"name": "rel-x", "paused_at": None}]


def test_bulk_actions_resume_preview_and_audit_filters_run_in_upstream_mode(
    upstream_dsn: str, upstream_conn: Any
) -> None:
    """What the CLI gained by driving the console's backend: selections, the resume preview
    and the audit filters, on upstream's tables."""
    for name, queue in (("a-one", "qa"), ("a-two", "qa"), ("b-three", "qb")):
        insert_schedule(upstream_conn, name, queue=queue)

    # One warning for the whole selection, not one per schedule.
    paused = awa_json("cron", "pause", "--filter", "queue:qa", "--operator", OPERATOR, "--dsn", upstream_dsn,
                      stderr=NOT_AUDITED + "\n")
    assert (paused["done"], paused["skipped"], paused["counts"]) == (
        ["a-one", "a-two"], [], {"selected": 2, "done": 2, "skipped": 0})
    assert upstream_conn.execute("SELECT name, paused_by FROM awa.cron_jobs ORDER BY name").fetchall() == [
        {"name": "a-one", "paused_by": OPERATOR}, {"name": "a-two", "paused_by": OPERATOR},
        {"name": "b-three", "paused_by": None}]
    again = awa_json("cron", "pause", "a-one", "b-three", "--operator", OPERATOR, "--dsn", upstream_dsn,
                     stderr=NOT_AUDITED + "\n")
    assert (again["done"], again["skipped"]) == (
        ["b-three"], [{"name": "a-one", "reason": f"schedule 'a-one' is already paused (by '{OPERATOR}')"}])

    # The schedule fires once a year at midnight UTC on 1 January (insert_schedule), policy coalesce
    # (upstream's column default).
    year = _db_now(upstream_conn).year + 1
    preview = awa("cron", "resume", "a-one", "--dry-run", "--dsn", upstream_dsn)
    assert (preview.code, preview.stderr) == (0, "")
    assert preview.stdout == (
        "a-one: Upstream Awa's own leader decides what the paused period fires, by its policy coalesce; the next "
        f"regular fire is {year}-01-01 00:00:00 UTC.\ndry run: nothing changed, the schedule is still paused\n")
    assert upstream_conn.execute("SELECT paused_by FROM awa.cron_jobs WHERE name = 'a-one'").fetchone() == {
        "paused_by": OPERATOR}

    assert awa("db", "init-audit", "--dsn", upstream_dsn).code == 0
    awa_json("cron", "resume", "a-one", "--operator", "bob@ops", "--dsn", upstream_dsn)
    awa_json("cron", "resume", "a-two", "--operator", "carol@ops", "--dsn", upstream_dsn)
    awa_json("queue", "pause", "qb", "--operator", "bob@ops", "--dsn", upstream_dsn)
    oracle = upstream_conn.execute(
        "SELECT id, operator, action, target FROM awa_tui_audit.audit_log ORDER BY id DESC").fetchall()
    assert [(e["operator"], e["action"], e["target"]) for e in oracle] == [
        ("bob@ops", "queue_pause", "queue:qb"), ("carol@ops", "resume", "a-two"), ("bob@ops", "resume", "a-one")]
    by_bob = awa_json("audit", "--operator", "bob@ops", "--dsn", upstream_dsn)
    assert [e["id"] for e in by_bob] == [oracle[0]["id"], oracle[2]["id"]]
    resumes = awa_json("audit", "--action", "resume", "--limit", "1", "--dsn", upstream_dsn)
    assert [e["id"] for e in resumes] == [oracle[1]["id"]]
    older = awa_json("audit", "--action", "resume", "--before-id", str(oracle[1]["id"]), "--dsn", upstream_dsn)
    assert [e["id"] for e in older] == [oracle[2]["id"]]


def test_init_audit_then_actions_are_audited_and_without_it_a_warning(
    upstream_dsn: str, upstream_conn: Any, awa_pg_schema_version: int, dsn: str
) -> None:
    insert_schedule(upstream_conn, "nightly")
    paused = awa("cron", "pause", "nightly", "--operator", OPERATOR, "--dsn", upstream_dsn)
    assert (paused.code, paused.stderr) == (0, NOT_AUDITED + "\n")
    relations = _awa_relations(upstream_conn)

    created = awa("db", "init-audit", "--dsn", upstream_dsn)
    assert (created.code, created.stdout, created.stderr) == (
        0, "created awa_tui_audit.audit_log: operator actions on this database are now audited\n", "")
    assert awa_json("db", "init-audit", "--dsn", upstream_dsn) == {
        "created": False, "schema": "awa_tui_audit", "table": "awa_tui_audit.audit_log"}
    assert _awa_relations(upstream_conn) == relations  # upstream's own schema untouched
    assert awa_json("db", "status", "--dsn", upstream_dsn)["audit_trail"] is True

    resumed = awa_json("cron", "resume", "nightly", "--operator", "bob@ops", "--dsn", upstream_dsn)
    queue = awa_json("queue", "pause", "q1", "--operator", "carol@ops", "--dsn", upstream_dsn)
    rows = upstream_conn.execute(
        "SELECT id, operator, action, target, before, after FROM awa_tui_audit.audit_log ORDER BY id").fetchall()
    assert [(r["id"], r["operator"], r["action"], r["target"]) for r in rows] == [
        (resumed["audit_id"], "bob@ops", "resume", "nightly"), (queue["audit_id"], "carol@ops", "queue_pause",
                                                                 "queue:q1")]
    assert (resumed["audited"], queue["audited"]) == (True, True)
    assert rows[0]["before"]["paused_by"] == OPERATOR and rows[0]["after"] == {"paused_at": None, "paused_by": None}

    trail = awa_json("audit", "--dsn", upstream_dsn)
    assert [(e["id"], e["operator"], e["action"], e["target"]) for e in trail] == [
        (queue["audit_id"], "carol@ops", "queue_pause", "queue:q1"), (resumed["audit_id"], "bob@ops", "resume",
                                                                     "nightly")]
    # db_user: awa-tui's own audit entry's key; upstream mode's trail does not record it.
    assert set(trail[0]) == {"id", "at", "operator", "action", "target", "before", "after", "detail", "db_user"}
    assert trail[0]["db_user"] is None
    assert [e["action"] for e in awa_json("audit", "--target", "nightly", "--dsn", upstream_dsn)] == ["resume"]

    # Not on awa-tui's own database, whose audit trail is built in.
    refused = awa("db", "init-audit", "--dsn", dsn)
    assert_one_line_error(refused, contains=["init-audit is for upstream Awa databases; this database holds "
                                             "awa-tui schema version"])
