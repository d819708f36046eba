"""S58: every read command works on a hot standby and shows what was written on the
primary once the standby has replayed it; every write is refused in one line naming the
standby (never a stack trace, never the password)."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from cli_helpers import awa, one_line_error, table
from helpers import wait_for
from psycopg.rows import dict_row

from awa_tui import Client

PREFIX = "sb-cli-"
OPERATOR = "alice@ops"


@pytest.fixture(scope="module")
def written(standby_pair: Any) -> dict[str, Any]:
    """Written on the primary: two schedules, one paused, one triggered by hand; then
    replayed by the standby (waited for by WAL position)."""
    client = Client(standby_pair.dsn(standby_pair.primary), operator=OPERATOR)
    try:
        client.periodic(f"{PREFIX}nightly", "30 2 * * *", "billing.run", queue="billing")
        client.periodic(f"{PREFIX}tick", "*/5 * * * *", "tick")
        client.periodic(f"{PREFIX}minutely", "* * * * *", "tick")
        client.sync()
        client.actions.pause(f"{PREFIX}tick")
        job = client.actions.trigger(f"{PREFIX}nightly")
        by_hand = client.actions.trigger(f"{PREFIX}minutely")
    finally:
        client.close()
    standby_pair.wait_replayed()
    return {"job_id": job.id, "minutely_job_id": by_hand.id, "standby": standby_pair.dsn(standby_pair.standby),
            "primary": standby_pair.dsn(standby_pair.primary), "where": standby_pair.standby.where}


def _standby_note(where: str) -> re.Pattern[str]:
    """The one line on stderr of every read from the standby: which server, and how far behind."""
    return re.compile(rf"reading {re.escape(where)}, a hot standby"
                      r"(, caught up \(newest change replayed \d+\.\d s ago\)"
                      r"| (?P<lag>\d+\.\d) s behind its primary, [\d,]+ bytes of changes to replay)\n")


def _json(*args: str, where: str) -> Any:
    result = awa(*args, "--json")
    assert result.returncode == 0, result.stderr
    assert _standby_note(where).fullmatch(result.stderr), result.stderr
    return json.loads(result.stdout)


def test_cron_list_on_the_standby(written: dict[str, Any]) -> None:
    listed = _json("cron", "list", "--dsn", written["standby"], where=written["where"])
    rows = {r["name"]: r for r in listed if r["name"].startswith(PREFIX)}
    assert {n: (r["state"], r["paused_by"], r["queue"]) for n, r in rows.items()} == {
        f"{PREFIX}minutely": ("active", None, "default"), f"{PREFIX}nightly": ("active", None, "billing"),
        f"{PREFIX}tick": ("paused", OPERATOR, "default")}


def test_cron_show_on_the_standby(written: dict[str, Any]) -> None:
    shown = _json("cron", "show", f"{PREFIX}nightly", "--dsn", written["standby"], where=written["where"])
    assert (shown["name"], shown["cron_expr"], shown["state"]) == (f"{PREFIX}nightly", "30 2 * * *", "active")
    assert [(f["id"], f["manual"]) for f in shown["recent_fires"]] == [(written["job_id"], True)]


def test_cron_history_on_the_standby(written: dict[str, Any]) -> None:
    """The ledger of a schedule due every minute: its manual fire is there (the minute's
    own instant may or may not have come yet, so only the manual row is compared)."""
    result = awa("cron", "history", f"{PREFIX}minutely", "--dsn", written["standby"])
    assert result.returncode == 0 and _standby_note(written["where"]).fullmatch(result.stderr), result.stderr
    manual = [(r["VERDICT"], r["JOB"]) for r in table(result.stdout) if r["VERDICT"] == "manual"]
    assert manual == [("manual", str(written["minutely_job_id"]))]


def test_jobs_list_on_the_standby(written: dict[str, Any]) -> None:
    jobs = _json("jobs", "list", "--schedule", f"{PREFIX}nightly", "--dsn", written["standby"],
                 where=written["where"])
    assert [(j["id"], j["schedule"], j["queue"], j["manual"], j["triggered_by"]) for j in jobs] == [
        (written["job_id"], f"{PREFIX}nightly", "billing", True, OPERATOR)]


def test_check_on_the_standby_says_what_the_primary_says(written: dict[str, Any]) -> None:
    """Health is read from replayed data; leadership from the replicated lease (a standby
    sees none of its primary's locks). No runtime leads here: both say so, alike."""
    on_standby = awa("check", "--schedule", f"{PREFIX}nightly", "--json", "--dsn", written["standby"])
    on_primary = awa("check", "--schedule", f"{PREFIX}nightly", "--json", "--dsn", written["primary"])
    assert _standby_note(written["where"]).fullmatch(on_standby.stderr) and on_primary.stderr == ""
    assert on_standby.returncode == on_primary.returncode == 2  # critical: no leader
    standby_report, primary_report = json.loads(on_standby.stdout), json.loads(on_primary.stdout)
    codes = [p["code"] for p in standby_report["fleet"]]
    assert codes == [p["code"] for p in primary_report["fleet"]]
    # No leader; once a minute has passed since the fixture wrote them, its schedules' due
    # fires are overdue too (named by both alike).
    assert codes in (["no_leader"], ["no_leader", "overdue"])
    assert standby_report["counts"] == primary_report["counts"]


WRITES = [
    ("cron", "pause", f"{PREFIX}nightly"),
    ("cron", "resume", f"{PREFIX}tick"),
    ("cron", "trigger", f"{PREFIX}nightly"),
    ("cron", "retire", f"{PREFIX}nightly"),
    ("queue", "pause", "billing"),
    ("migrate",),
    ("db", "grants", "--apply"),
]


@pytest.mark.parametrize("command", WRITES, ids=[" ".join(c) for c in WRITES])
def test_a_write_on_the_standby_is_one_line_naming_it(written: dict[str, Any], command: tuple[str, ...]) -> None:
    line = one_line_error(awa(*command, "--dsn", written["standby"]))
    assert line == f"error: {written['where']} is a read-only standby (in recovery): writes go to the primary"


def test_jobs_retry_on_the_standby_is_refused(written: dict[str, Any]) -> None:
    line = one_line_error(awa("jobs", "retry", str(written["job_id"]), "--dsn", written["standby"]))
    assert line == f"error: {written['where']} is a read-only standby (in recovery): writes go to the primary"


def test_run_on_the_standby_is_refused_before_it_starts(written: dict[str, Any]) -> None:
    result = awa("run", "--demo", "--dsn", written["standby"], timeout=60)
    assert result.returncode == 1 and "Traceback" not in result.stderr + result.stdout
    # Registering the demo schedules logs a line first; the refusal is the last line.
    assert result.stderr.splitlines()[-1] == (
        f"error: cannot run: {written['where']} is a read-only standby (in recovery): writes go to the primary")


def test_the_refusal_never_shows_the_password(written: dict[str, Any]) -> None:
    """Trust admits any password: the one in the DSN must not reach the message."""
    dsn = f"{written['standby']} password=hunter2-secret"
    result = awa("cron", "pause", f"{PREFIX}nightly", "--dsn", dsn)
    line = one_line_error(result)
    assert "hunter2" not in result.stderr + result.stdout
    assert line == f"error: {written['where']} is a read-only standby (in recovery): writes go to the primary"


def test_the_primary_was_left_alone(written: dict[str, Any], standby_pair: Any) -> None:
    """What the refused writes would have changed is unchanged on the primary."""
    with standby_pair.connect(standby_pair.primary) as conn:
        rows = conn.execute("SELECT name, paused_at IS NOT NULL AS paused, retired_at IS NOT NULL AS retired "
                            "FROM awa.cron_jobs WHERE name LIKE %s ORDER BY name", (f"{PREFIX}%",)).fetchall()
        jobs = conn.execute("SELECT count(*) AS n FROM awa.jobs WHERE metadata ->> 'cron_name' LIKE %s",
                            (f"{PREFIX}%",)).fetchone()
    assert [(r["name"], r["paused"], r["retired"]) for r in rows] == [
        (f"{PREFIX}minutely", False, False), (f"{PREFIX}nightly", False, False), (f"{PREFIX}tick", True, False)]
    assert jobs is not None and jobs["n"] == 2


def test_a_standby_replaying_behind_judges_the_lease_at_its_replay_not_its_clock(
    written: dict[str, Any], standby_pair: Any
) -> None:
    """A leader renews its lease every second on the primary while the standby's replay is
    paused past the lease: read there, the fleet still has that live leader as of the replayed
    data (not "no leader" by the standby's own clock), and every read says how far behind the
    standby is."""
    lease = timedelta(seconds=3)
    leader = Client(written["primary"], operator=OPERATOR, leader_lease=lease)
    standby = psycopg.connect(written["standby"], autocommit=True, row_factory=dict_row)
    try:
        leader.start(run_worker=False)
        wait_for(lambda: leader.is_leader, 15, what="the runtime on the primary to lead")
        standby_pair.wait_replayed()
        standby.execute("SELECT pg_wal_replay_pause()")
        wait_for(lambda: standby.execute("SELECT pg_get_wal_replay_pause_state() AS s").fetchone()["s"] == "paused",
                 10, what="replay to pause")
        # The fault: by the standby's clock the replayed lease has expired (two seconds past
        # its end), while the primary's leader keeps renewing (WAL received, not replayed).
        wait_for(lambda: standby.execute(
            "SELECT (SELECT expires_at FROM awa.leader_lease) < clock_timestamp() - interval '2 seconds' "
            "AND pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn() AS lagging").fetchone()["lagging"],
            20, what="the replayed lease to expire by the standby's clock")
        assert leader.is_leader
        paused_for = standby.execute(
            "SELECT extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8 AS s"
        ).fetchone()["s"]
        checked = awa("check", "--schedule", f"{PREFIX}nightly", "--json", "--dsn", written["standby"])
        note = _standby_note(written["where"]).fullmatch(checked.stderr)
        assert note is not None and note["lag"] is not None, checked.stderr
        assert float(note["lag"]) >= paused_for  # measured after: the lag can only have grown
        fleet = [p["code"] for p in json.loads(checked.stdout)["fleet"]]
        assert "no_leader" not in fleet and "stalled" not in fleet, fleet
        runtimes = [r for r in _json("runtime", "list", "--dsn", written["standby"], where=written["where"])
                    if r["instance_id"] == str(leader.identity.instance_id)]
        assert [(r["role"], r["fresh"]) for r in runtimes] == [("leader", True)]
        status = _json("db", "status", "--dsn", written["standby"], where=written["where"])
        assert status["standby"] is True and status["replay_lag_s"] >= paused_for
    finally:
        standby.execute("SELECT pg_wal_replay_resume()")
        standby.close()
        leader.close()
    standby_pair.wait_replayed()
