"""S58: every read command works on a hot standby and shows what was written on the
primary once the standby has replayed it; every write is refused in one line naming the
standby (never a stack trace, never the password)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cli_helpers import awa, one_line_error, table

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
        client.pause(f"{PREFIX}tick")
        job = client.trigger(f"{PREFIX}nightly")
        by_hand = client.trigger(f"{PREFIX}minutely")
    finally:
        client.close()
    standby_pair.wait_replayed()
    return {"job_id": job.id, "minutely_job_id": by_hand.id, "standby": standby_pair.dsn(standby_pair.standby),
            "primary": standby_pair.dsn(standby_pair.primary), "where": standby_pair.standby.where}


def _json(*args: str) -> Any:
    result = awa(*args, "--json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return json.loads(result.stdout)


def test_cron_list_on_the_standby(written: dict[str, Any]) -> None:
    rows = {r["name"]: r for r in _json("cron", "list", "--dsn", written["standby"]) if r["name"].startswith(PREFIX)}
    assert {n: (r["state"], r["paused_by"], r["queue"]) for n, r in rows.items()} == {
        f"{PREFIX}minutely": ("active", None, "default"), f"{PREFIX}nightly": ("active", None, "billing"),
        f"{PREFIX}tick": ("paused", OPERATOR, "default")}


def test_cron_show_on_the_standby(written: dict[str, Any]) -> None:
    shown = _json("cron", "show", f"{PREFIX}nightly", "--dsn", written["standby"])
    assert (shown["name"], shown["cron_expr"], shown["state"]) == (f"{PREFIX}nightly", "30 2 * * *", "active")
    assert [(f["id"], f["manual"]) for f in shown["recent_fires"]] == [(written["job_id"], True)]


def test_cron_history_on_the_standby(written: dict[str, Any]) -> None:
    """The ledger of a schedule due every minute: its manual fire is there (the minute's
    own instant may or may not have come yet, so only the manual row is compared)."""
    result = awa("cron", "history", f"{PREFIX}minutely", "--dsn", written["standby"])
    assert result.returncode == 0 and result.stderr == "", result.stderr
    manual = [(r["VERDICT"], r["JOB"]) for r in table(result.stdout) if r["VERDICT"] == "manual"]
    assert manual == [("manual", str(written["minutely_job_id"]))]


def test_jobs_list_on_the_standby(written: dict[str, Any]) -> None:
    jobs = _json("jobs", "list", "--schedule", f"{PREFIX}nightly", "--dsn", written["standby"])
    assert [(j["id"], j["schedule"], j["queue"], j["manual"], j["triggered_by"]) for j in jobs] == [
        (written["job_id"], f"{PREFIX}nightly", "billing", True, OPERATOR)]


def test_check_on_the_standby_says_what_the_primary_says(written: dict[str, Any]) -> None:
    """Health is read from replayed data; leadership from the replicated lease (a standby
    sees none of its primary's locks). No runtime leads here: both say so, alike."""
    on_standby = awa("check", "--schedule", f"{PREFIX}nightly", "--json", "--dsn", written["standby"])
    on_primary = awa("check", "--schedule", f"{PREFIX}nightly", "--json", "--dsn", written["primary"])
    assert on_standby.stderr == on_primary.stderr == ""
    assert on_standby.returncode == on_primary.returncode == 2  # critical: no leader
    standby_report, primary_report = json.loads(on_standby.stdout), json.loads(on_primary.stdout)
    assert [p["code"] for p in standby_report["fleet"]] == [p["code"] for p in primary_report["fleet"]] == ["no_leader"]
    assert standby_report["counts"] == primary_report["counts"]


WRITES = [
    ("cron", "pause", f"{PREFIX}nightly"),
    ("cron", "resume", f"{PREFIX}tick"),
    ("cron", "trigger", f"{PREFIX}nightly"),
    ("cron", "retire", f"{PREFIX}nightly"),
    ("queue", "pause", "billing"),
    ("migrate",),
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
