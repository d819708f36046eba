"""S38: `--json` of every command that emits a read model or an operation result keeps its
keys, in order, now that the engine hands typed models to the CLI (one `to_json` for all).

The expected keys are written out here, as the columns the engine has always returned;
values are checked where they are exact (names, counts, operators, ISO instants)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import psycopg
import pytest
from cli_helpers import awa_json, awa_many

from awa_tui import Client

SCHEDULE_COLUMNS = [
    "name", "cron_expr", "timezone", "kind", "queue", "priority", "max_attempts", "missed_fire_policy",
    "last_enqueued_at", "next_fire_at", "created_at", "updated_at", "paused_at", "paused_by", "owner",
    "retired_at", "retired_by", "fault",
    "overlap", "start_at", "end_at", "max_fires", "fires_count", "finished_at",
    # S41: the expectations (seconds and counts, null when not declared).
    "max_lateness", "expect_success_within", "max_consecutive_failures", "pause_after_failures",
    "cron_written", "jitter_ms", "overridden",  # issue 16: H as written, jitter, an operator override
    "exclude_dates", "exclude_calendars",  # S56
    "origin",  # S64: "code" (declared in code) or "api" (made at run time)
    "paused_until", "pause_reason", "catchup_window",  # S65, S66
]
SCHEDULE_STATE = [
    "name", "cron_expr", "timezone", "kind", "queue", "args", "priority", "max_attempts", "tags", "metadata",
    "missed_fire_policy", "last_enqueued_at", "paused_at", "paused_by", "owner", "retired_at", "retired_by",
    "overlap", "start_at", "end_at", "max_fires", "finished_at",
    "max_lateness", "expect_success_within", "max_consecutive_failures", "pause_after_failures",
    "cron_written", "jitter_ms", "overridden",  # issue 16
    "exclude_dates", "exclude_calendars",  # S56
    "paused_until", "pause_reason", "catchup_window",  # S65, S66
]
QUEUE_STATE = ["queue", "paused", "paused_at", "paused_by"]
OWNER_CHANGE = ["owner", "at", "names", "count"]


@pytest.fixture
def seeded(client: Client, conn: psycopg.Connection[Any]) -> Client:
    client.periodic("nightly", "30 2 * * *", "billing.run", {"plan": "pro"}, timezone="America/New_York",
                    queue="billing", tags=["finance"])
    client.periodic("early", "30 1 * * *", "report.run")
    client.sync()
    client.runtime.snapshot()  # one runtime row for `runtime list`
    return client


def test_read_commands_keep_their_json_keys(dsn: str, seeded: Client) -> None:
    seeded.actions.adopt("early", "billing", operator="ann@ops")
    seeded.actions.trigger("nightly", operator="ann@ops")
    outs = awa_many([
        [*argv, "--json", "--dsn", dsn] for argv in (
            ["cron", "list"], ["cron", "show", "nightly"], ["cron", "next", "nightly", "-n", "2"],
            ["queue", "list"], ["runtime", "list"], ["audit"], ["owner", "list"], ["plan"],
        )
    ])
    assert [(o.returncode, o.stderr) for o in outs] == [(0, "")] * len(outs)
    listed, shown, fires, queues, runtimes, audit, owners, plans = (json.loads(o.stdout) for o in outs)

    assert [list(r) for r in listed] == [[*SCHEDULE_COLUMNS, "queue_paused", "queue_paused_by", "state",
                                          "overdue_s"]] * 2
    assert [(r["name"], r["owner"], r["state"]) for r in listed] == [("early", "billing", "active"),
                                                                     ("nightly", None, "active")]

    assert list(shown) == [*SCHEDULE_COLUMNS, "args", "metadata", "tags", "queue_paused", "queue_paused_by",
                           "state", "recent_fires"]
    assert (shown["args"], shown["tags"], shown["state"]) == ({"plan": "pro"}, ["finance"], "active")
    assert [list(f) for f in shown["recent_fires"]] == [
        ["id", "state", "attempt", "created_at", "fire_time", "manual", "lateness", "replaced", "replaced_by"]]
    assert shown["recent_fires"][0]["manual"] is True and shown["recent_fires"][0]["fire_time"] is None

    assert [list(f) for f in fires] == [["utc", "local", "timezone", "dst", "excluded"]] * 2
    assert fires[0]["timezone"] == "America/New_York" and fires[0]["utc"].endswith("+00:00")
    assert datetime.fromisoformat(fires[0]["utc"]) == datetime.fromisoformat(fires[0]["local"])

    assert [list(q) for q in queues] == [
        ["queue", "paused", "paused_at", "paused_by", "available", "running", "schedules"]] * 2
    assert [(q["queue"], q["available"], q["schedules"]) for q in queues] == [("billing", 1, 1), ("default", 0, 1)]

    assert [list(r) for r in runtimes] == [[
        "instance_id", "hostname", "pid", "version", "protocol_version", "started_at", "last_seen_at",
        "snapshot_interval", "is_leader", "health", "stopped_at", "owner", "authoritative", "manifest_hash",
        "fresh", "role", "lease_expires_at", "passes", "schema_version", "leader_protocol", "lead_refusal",
    ]]
    assert (runtimes[0]["instance_id"], runtimes[0]["snapshot_interval"], runtimes[0]["role"],
            runtimes[0]["lead_refusal"]) == (str(seeded.identity.instance_id), 10.0, "follower", None)

    keys = ["id", "at", "operator", "action", "target", "before", "after", "detail", "db_user"]
    assert [list(e) for e in audit] == [keys] * 2
    assert [(e["operator"], e["action"], e["target"]) for e in audit] == [
        ("ann@ops", "trigger", "nightly"), ("ann@ops", "adopt", "early")]

    assert [list(o) for o in owners] == [[
        "owner", "fresh_runtimes", "manifest_hashes", "certificate_hash", "certified_at", "certified",
        "schedules_owned", "schedules_retired", "agreement_since", "grace_required_s", "grace_remaining_s",
        "pending", "blockers", "roles",
    ]]
    assert (owners[0]["owner"], owners[0]["schedules_owned"], owners[0]["pending"]) == (
        "billing", 1, {"inserts": 0, "updates": 0, "retirements": 0})

    assert [list(p) for p in plans] == [[
        "owner", "now", "fresh_declarations", "manifest_hash", "manifest_hashes", "certificate", "schedules",
        "inserts", "updates", "retirements", "conflicts", "will_insert", "will_update", "will_retire",
        "agreement", "blockers",
    ]]
    assert list(plans[0]["certificate"]) == ["hash", "size", "certified_at", "current"]
    assert plans[0]["schedules"] == {"active": 1, "retired": 0}
    assert list(plans[0]["agreement"]) == [
        "hash", "since", "recorded_since", "evidence_window_s", "grace_required_s", "grace_remaining_s"]


def test_action_commands_keep_their_json_keys(dsn: str, seeded: Client) -> None:
    def act(*argv: str) -> Any:
        return awa_json(*argv, "--dsn", dsn, "--operator", "bo@ops")

    paused = act("cron", "pause", "early")
    assert list(paused) == SCHEDULE_STATE and (paused["name"], paused["paused_by"]) == ("early", "bo@ops")
    resumed = act("cron", "resume", "early")
    assert list(resumed) == SCHEDULE_STATE and resumed["paused_at"] is None
    job = act("cron", "trigger", "early")
    assert list(job) == ["id", "kind", "queue", "state", "metadata", "created_at"]
    assert (job["kind"], job["queue"], job["state"], job["metadata"]["triggered_by"]) == (
        "report.run", "default", "available", "bo@ops")
    adopted = act("cron", "adopt", "early", "billing")
    assert list(adopted) == SCHEDULE_STATE and adopted["owner"] == "billing"
    moved = act("cron", "transfer", "early", "payments")
    assert list(moved) == SCHEDULE_STATE and moved["owner"] == "payments"
    retired = act("owner", "retire", "payments")
    assert list(retired) == OWNER_CHANGE and (retired["names"], retired["count"]) == (["early"], 1)
    restored = act("owner", "restore", "payments")
    assert list(restored) == OWNER_CHANGE and (restored["owner"], restored["names"]) == ("payments", ["early"])
    tomb = act("cron", "retire", "nightly")
    assert list(tomb) == SCHEDULE_STATE and tomb["retired_by"] == "bo@ops"
    back = act("cron", "restore", "nightly")
    assert list(back) == SCHEDULE_STATE and back["retired_at"] is None

    qpaused = act("queue", "pause", "default")
    assert list(qpaused) == QUEUE_STATE and (qpaused["paused"], qpaused["paused_by"]) == (True, "bo@ops")
    qresumed = act("queue", "resume", "default")
    assert list(qresumed) == QUEUE_STATE and (qresumed["paused"], qresumed["paused_at"]) == (False, None)
    assert act("queue", "drain", "default") == {"queue": "default", "cancelled": 1}  # the trigger's job

    removed = act("cron", "remove", "nightly")
    assert list(removed) == SCHEDULE_STATE and removed["args"] == {"plan": "pro"}
