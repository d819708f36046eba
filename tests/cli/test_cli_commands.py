"""S38: every issue-2 subcommand through the real executable, --json parsed and checked."""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cli_helpers import awa, awa_json, cli_env

from awa_tui import Client
from awa_tui.config import default_operator
from awa_tui.engine import migrations


@pytest.fixture
def schedules(client: Client, conn: psycopg.Connection[Any]) -> Client:
    client.periodic("nightly", "30 2 * * *", "billing.run", {"plan": "pro"}, timezone="America/New_York",
                    queue="billing", tags=["finance"], missed_fire_policy="catch_up")
    client.periodic("early", "30 1 * * *", "report.run", timezone="America/New_York")
    client.periodic("every-minute", "* * * * *", "tick")
    client.sync()
    return client


def test_migrate(empty_dsn: str) -> None:
    versions = [m.version for m in migrations.available()]
    assert awa_json("migrate", "--dsn", empty_dsn) == {"applied": versions, "version": versions[-1]}
    assert awa_json("migrate", "--dsn", empty_dsn) == {"applied": [], "version": versions[-1]}
    text = awa("migrate", "--dsn", empty_dsn)
    assert (text.returncode, text.stdout.strip()) == (0, f"up to date (schema version {versions[-1]})")


def test_cron_list_and_show(dsn: str, schedules: Client) -> None:
    schedules.actions.pause("early", operator="alice@ops")
    schedules.actions.queue_pause("billing", operator="bob@ops")
    rows = awa_json("cron", "list", "--dsn", dsn)
    assert [(r["name"], r["state"], r["paused_by"], r["queue_paused"]) for r in rows] == [
        ("early", "paused", "alice@ops", False),
        ("every-minute", "active", None, False),
        ("nightly", "active", None, True),
    ]
    assert {k: rows[2][k] for k in ("cron_expr", "timezone", "kind", "queue", "missed_fire_policy")} == {
        "cron_expr": "30 2 * * *", "timezone": "America/New_York", "kind": "billing.run", "queue": "billing",
        "missed_fire_policy": "catch_up",
    }
    assert [r["name"] for r in awa_json("cron", "list", "--dsn", dsn, "--filter", "NIGHT")] == ["nightly"]

    schedules.actions.trigger("nightly", operator="carol@ops")
    shown = awa_json("cron", "show", "nightly", "--dsn", dsn)
    assert {k: shown[k] for k in ("name", "args", "tags", "state", "queue_paused", "queue_paused_by")} == {
        "name": "nightly", "args": {"plan": "pro"}, "tags": ["finance"], "state": "active",
        "queue_paused": True, "queue_paused_by": "bob@ops",
    }
    assert [(f["state"], f["manual"]) for f in shown["recent_fires"]] == [("available", True)]

    text = awa("cron", "list", "--dsn", dsn)
    assert text.returncode == 0 and text.stderr == ""
    assert "PAUSED by alice@ops" in text.stdout and "[queue paused]" in text.stdout
    text = awa("cron", "show", "nightly", "--dsn", dsn)
    assert text.returncode == 0 and "[queue paused]" in text.stdout


def test_cron_next_shows_zone_utc_and_dst_marks(dsn: str, schedules: Client) -> None:
    fires = awa_json("cron", "next", "nightly", "-n", "3", "--after", "2025-03-08T00:00:00Z", "--dsn", dsn)
    assert fires == [
        {"utc": "2025-03-08T07:30:00+00:00", "local": "2025-03-08T02:30:00-05:00",
         "timezone": "America/New_York", "dst": None, "excluded": None},
        {"utc": "2025-03-09T07:00:00+00:00", "local": "2025-03-09T03:00:00-04:00",
         "timezone": "America/New_York", "dst": "gap", "excluded": None},
        {"utc": "2025-03-10T06:30:00+00:00", "local": "2025-03-10T02:30:00-04:00",
         "timezone": "America/New_York", "dst": None, "excluded": None},
    ]
    text = awa("cron", "next", "early", "-n", "5", "--after", "2025-10-31T12:00:00Z", "--dsn", dsn)
    assert text.returncode == 0 and text.stderr == ""
    assert text.stdout.splitlines() == [
        "next fires of early (zone America/New_York; local time, then UTC):",
        "  2025-11-01 01:30:00 EDT (UTC-0400)  2025-11-01T05:30:00Z",
        "  2025-11-02 01:30:00 EDT (UTC-0400)  2025-11-02T05:30:00Z"
        "  [DST fold: this wall time occurs twice; fires at the first occurrence only]",
        "  2025-11-03 01:30:00 EST (UTC-0500)  2025-11-03T06:30:00Z",
        "  2025-11-04 01:30:00 EST (UTC-0500)  2025-11-04T06:30:00Z",
        "  2025-11-05 01:30:00 EST (UTC-0500)  2025-11-05T06:30:00Z",
    ]
    gap = awa("cron", "next", "nightly", "-n", "2", "--after", "2025-03-08T12:00:00Z", "--dsn", dsn)
    assert gap.stdout.splitlines()[1] == (
        "  2025-03-09 03:00:00 EDT (UTC-0400)  2025-03-09T07:00:00Z"
        "  [DST gap: this wall time does not exist; fires at the end of the gap]"
    )
    # Without --after: the next five fires from now (DB time), one minute apart. The CLI's
    # "now" lies between these two readings, so the first fire is after `before` and at
    # most a minute after `after`.
    before = schedules.reads.db_time()
    upcoming = awa_json("cron", "next", "every-minute", "-n", "5", "--dsn", dsn)
    after = schedules.reads.db_time()
    instants = [datetime.fromisoformat(f["utc"]) for f in upcoming]
    assert len(instants) == 5 and all((b - a).total_seconds() == 60 for a, b in itertools.pairwise(instants))
    assert before < instants[0] <= after + timedelta(minutes=1)


def test_cron_pause_resume_trigger_remove(dsn: str, schedules: Client, conn: psycopg.Connection[Any]) -> None:
    paused = awa_json("cron", "pause", "nightly", "--operator", "alice@ops", "--dsn", dsn)
    assert (paused["name"], paused["paused_by"]) == ("nightly", "alice@ops")
    assert datetime.fromisoformat(paused["paused_at"]) <= schedules.reads.db_time()
    job = awa_json("cron", "trigger", "nightly", "--operator", "bob@ops", "--dsn", dsn)
    assert (job["kind"], job["queue"], job["state"]) == ("billing.run", "billing", "available")
    assert (job["metadata"]["cron_name"], job["metadata"]["triggered_manually"]) == ("nightly", True)
    resumed = awa_json("cron", "resume", "nightly", "--operator", "carol@ops", "--dsn", dsn)
    assert (resumed["paused_at"], resumed["paused_by"]) == (None, None)
    removed = awa_json("cron", "remove", "every-minute", "--operator", "dave@ops", "--dsn", dsn)
    assert (removed["name"], removed["cron_expr"]) == ("every-minute", "* * * * *")
    names = [r["name"] for r in conn.execute("SELECT name FROM awa.cron_jobs ORDER BY name")]
    assert names == ["early", "nightly"]
    text = awa("cron", "pause", "early", "--operator", "erin@ops", "--dsn", dsn)
    assert (text.returncode, text.stdout.strip(), text.stderr) == (0, "paused early", "")
    text = awa("cron", "trigger", "early", "--dsn", dsn)
    assert text.returncode == 0 and text.stdout.startswith("triggered early: job ")

    audit = awa_json("audit", "--dsn", dsn)
    assert [(a["operator"], a["action"], a["target"]) for a in audit] == [
        (default_operator(), "trigger", "early"), ("erin@ops", "pause", "early"),
        ("dave@ops", "remove", "every-minute"), ("carol@ops", "resume", "nightly"),
        ("bob@ops", "trigger", "nightly"), ("alice@ops", "pause", "nightly"),
    ]
    latest_two = awa_json("audit", "--target", "nightly", "--limit", "2", "--dsn", dsn)
    assert [(a["action"], a["before"], a["after"]) for a in latest_two] == [
        ("resume", audit[3]["before"], audit[3]["after"]), ("trigger", None, {"job_id": job["id"]}),
    ]
    assert (latest_two[0]["before"]["paused_by"], latest_two[0]["after"]["paused_by"]) == ("alice@ops", None)
    text = awa("audit", "--dsn", dsn)
    assert text.returncode == 0 and "erin@ops" in text.stdout


def test_queue_list_pause_resume_drain(dsn: str, schedules: Client, conn: psycopg.Connection[Any]) -> None:
    schedules.actions.trigger("nightly")
    schedules.actions.trigger("nightly")
    queues = awa_json("queue", "list", "--dsn", dsn)
    assert queues == [
        {"queue": "billing", "paused": False, "paused_at": None, "paused_by": None, "available": 2, "running": 0,
         "schedules": 1},
        {"queue": "default", "paused": False, "paused_at": None, "paused_by": None, "available": 0, "running": 0,
         "schedules": 2},
    ]
    paused = awa_json("queue", "pause", "billing", "--operator", "alice@ops", "--dsn", dsn)
    assert (paused["queue"], paused["paused"], paused["paused_by"]) == ("billing", True, "alice@ops")
    assert [q["paused"] for q in awa_json("queue", "list", "--dsn", dsn)] == [True, False]
    resumed = awa_json("queue", "resume", "billing", "--operator", "alice@ops", "--dsn", dsn)
    assert (resumed["paused"], resumed["paused_at"], resumed["paused_by"]) == (False, None, None)
    assert awa_json("queue", "drain", "billing", "--operator", "alice@ops", "--dsn", dsn) == {
        "queue": "billing", "cancelled": 2,
    }
    states = [r["state"] for r in conn.execute("SELECT state FROM awa.jobs ORDER BY id")]
    assert states == ["cancelled", "cancelled"]
    text = awa("queue", "drain", "billing", "--dsn", dsn)
    assert (text.returncode, text.stdout.strip()) == (0, "drained queue billing: 0 jobs cancelled")


def test_runtime_list(dsn: str, client: Client) -> None:
    assert awa_json("runtime", "list", "--dsn", dsn) == []
    client.runtime.snapshot(is_leader=True)
    rows = awa_json("runtime", "list", "--dsn", dsn)
    assert len(rows) == 1
    row = rows[0]
    assert (row["instance_id"], row["is_leader"], row["fresh"], row["health"]) == (
        str(client.identity.instance_id), True, True, "healthy",
    )
    assert (row["pid"], row["snapshot_interval"]) == (client.identity.pid, 10.0)


def test_runtime_list_names_the_protocol_the_release_policy_judges(
    dsn: str, client: Client, conn: psycopg.Connection[Any]
) -> None:
    """PROTOCOL is what `--version` prints and `migrate --leaders-from` takes: this release's
    runtime reports 4; a release that reported its schema but no protocol is judged 1 by the
    schema (awa.may_lead), and the list says the same."""
    client.runtime.snapshot(is_leader=False)
    conn.execute("INSERT INTO awa.runtime_instances (instance_id, hostname, pid, version, started_at, "
                 "schema_version) VALUES ('00000000-0000-0000-0000-00000000000a', 'old', 7, '0.1.0', now(), 18)")
    rows = {r["hostname"]: r for r in awa_json("runtime", "list", "--dsn", dsn)}
    assert {h: (r["leader_protocol"], r["protocol_version"]) for h, r in rows.items()} == {
        client.identity.hostname: (4, 1), "old": (1, 0)}
    judged = conn.execute("SELECT awa.may_lead('00000000-0000-0000-0000-00000000000a') AS old").fetchone()
    assert judged == {"old": False}  # the schema agrees: protocol 1 is below this release's floor
    text = awa("runtime", "list", "--dsn", dsn, env=cli_env(COLUMNS="200"))
    header, _rule, first, second, *_ = text.stdout.splitlines()
    column = header.index("PROTOCOL")
    assert sorted(line[column:].split()[0] for line in (first, second)) == ["1", "4"]


def test_db_status_reports_the_embedded_server(tmp_path: Path) -> None:
    result = awa("db", "status", "--json", env=cli_env(AWA_EMBEDDED_HOME=str(tmp_path / "pg")))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "home": str(tmp_path / "pg"), "data_dir": str(tmp_path / "pg" / "data"), "initialised": False,
        "version": None, "running": False, "dsn": None,
    }


def test_cron_list_says_how_long_a_due_fire_is_overdue(dsn: str, schedules: Client,
                                                       conn: psycopg.Connection[Any]) -> None:
    """Nobody fired every-minute's instant of 66 s ago (a stalled fleet): OVERDUE says so,
    by the database's clock; a fire due in the future, or paused, is not overdue."""
    conn.execute("UPDATE awa.cron_jobs SET next_fire_at = now() - interval '66 seconds' WHERE name = 'every-minute'")
    conn.execute("UPDATE awa.cron_jobs SET next_fire_at = now() - interval '1 hour', paused_at = now(), "
                 "paused_by = 'a@ops' WHERE name = 'early'")
    text = awa("cron", "list", "--dsn", dsn)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    header = lines[0]
    start = header.index("OVERDUE")
    overdue = {line.split()[0]: line[start:].split()[0] for line in lines[1:] if line.strip()}
    assert overdue["every-minute"] in ("1m06s", "1m07s", "1m08s")  # the command's own run time
    assert overdue["nightly"] == "-" and overdue["early"] == "-"
    # --json says the same in seconds, null where the table says "-" (a script's stalled-fleet check).
    listed = {r["name"]: r["overdue_s"] for r in awa_json("cron", "list", "--dsn", dsn)}
    assert 66 <= listed.pop("every-minute") < 70
    assert set(listed.values()) == {None} and {"nightly", "early"} <= set(listed)
