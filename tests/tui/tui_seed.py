"""A deterministic database for console tests and screenshots: fixed names, fixed times,
fixed ids, and a fixed `now` that the console is given as its clock.

Rows are inserted directly (tests may write SQL; the console may not) so every timestamp
is known; schedules are also what a real runtime would have written.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from awa_tui.engine.ownership.manifest import manifest_hash
from awa_tui.engine.runtime.identity import RUNTIME_PROTOCOL
from awa_tui.engine.schedules.definition import Schedule

NOW = datetime(2025, 3, 8, 12, 0, 30, tzinfo=UTC)
DB_LABEL = "awa@db.example:5432/awa"
OPERATOR = "alice@ops"


def t(hms: str, day: int = 8) -> datetime:
    h, m, s = (int(x) for x in hms.split(":"))
    return datetime(2025, 3, day, h, m, s, tzinfo=UTC)


# name, cron, zone, kind, queue, policy, last fire, next hint, owner, extra
SCHEDULES: list[dict[str, Any]] = [
    dict(name="billing.nightly-invoice", cron_expr="30 2 * * *", timezone="America/New_York", kind="billing.invoice",
         queue="billing", missed_fire_policy="catch_up", last_enqueued_at=t("07:30:00"),
         next_fire_at=t("07:00:00", 9), owner="billing", args={"plan": "pro", "dry_run": False},
         metadata={"team": "billing"}),
    dict(name="cleanup.tmp-files", cron_expr="*/15 * * * *", timezone="UTC", kind="ops.cleanup", queue="default",
         last_enqueued_at=t("11:15:00"), next_fire_at=t("11:30:00"), paused_at=t("11:20:00"),
         paused_by="alice@ops"),
    dict(name="crm.contact-sync", cron_expr="*/10 * * * * *", timezone="UTC", kind="crm.sync",
         queue="integrations", last_enqueued_at=t("12:00:30"), next_fire_at=t("12:00:40"),
         args={"target": "crm"}),
    dict(name="legacy.export", cron_expr="0 9 * * 1-5", timezone="Europe/London", kind="legacy.export",
         queue="default", last_enqueued_at=t("09:00:00", 3), retired_at=t("09:05:00", 3),
         retired_by="carol@ops", owner="billing"),
    dict(name="metrics.rollup", cron_expr="*/5 * * * *", timezone="UTC", kind="metrics.rollup", queue="default",
         last_enqueued_at=t("12:00:00"), next_fire_at=t("12:05:00"), owner="platform"),
    dict(name="payments.settlement-reconciliation-eu-west", cron_expr="0 6 * * *", timezone="Europe/Dublin",
         kind="payments.settle", queue="billing", last_enqueued_at=t("06:00:00"), next_fire_at=t("06:00:00", 9)),
    dict(name="reports.hourly", cron_expr="@hourly", timezone="UTC", kind="reports.build", queue="reports",
         last_enqueued_at=t("12:00:00"), next_fire_at=t("13:00:00"), tags=["reports"]),
    dict(name="weekly.digest", cron_expr="0 8 * * 1", timezone="Europe/Berlin", kind="mail.digest",
         queue="mail"),
]

# schedule, fire time, job state, attempt, seconds late (created_at - fire)
JOBS = [
    ("billing.nightly-invoice", t("07:30:00", 7), "completed", 1, 0.8),
    ("billing.nightly-invoice", t("07:30:00"), "completed", 1, 1.2),
    ("cleanup.tmp-files", t("11:00:00"), "completed", 1, 0.3),
    ("cleanup.tmp-files", t("11:15:00"), "completed", 1, 0.4),
    ("metrics.rollup", t("11:55:00"), "completed", 1, 0.2),
    ("metrics.rollup", t("12:00:00"), "running", 1, 2.3),
    ("reports.hourly", t("12:00:00"), "retryable", 2, 0.5),
    ("crm.contact-sync", t("12:00:20"), "available", 0, 0.1),
    ("crm.contact-sync", t("12:00:30"), "available", 0, 0.1),
    ("payments.settlement-reconciliation-eu-west", t("06:00:00"), "completed", 1, 47.0),
]

# The billing deployment's manifest: it redefines one schedule (an UPDATE in the plan),
# adds one (an INSERT), and names an unowned schedule (a CONFLICT until adopted).
BILLING_MANIFEST = [
    Schedule.build("billing.nightly-invoice", "45 2 * * *", "billing.invoice", {"plan": "pro", "dry_run": False},
                   timezone="America/New_York", queue="billing", metadata={"team": "billing"},
                   missed_fire_policy="catch_up"),
    Schedule.build("billing.dunning", "0 10 * * *", "billing.dunning", queue="billing"),
    Schedule.build("payments.settlement-reconciliation-eu-west", "0 6 * * *", "payments.settle",
                   timezone="Europe/Dublin", queue="billing"),
]

RUNTIMES = [
    dict(instance_id=uuid.UUID("6f1c2a9e-0000-4000-8000-000000000001"), hostname="app-1", pid=4242,
         version="0.1.0", protocol_version=1, started_at=t("08:00:00"), last_seen_at=t("12:00:25"),
         is_leader=True, owner="billing", authoritative=True),
    dict(instance_id=uuid.UUID("0b7d4e21-0000-4000-8000-000000000002"), hostname="app-2", pid=5151,
         version="0.1.0", protocol_version=1, started_at=t("08:00:05"), last_seen_at=t("12:00:21"),
         is_leader=False, owner="billing", authoritative=True),
    dict(instance_id=uuid.UUID("c3a0ffee-0000-4000-8000-000000000003"), hostname="batch-old", pid=777,
         version="0.0.9", protocol_version=0, started_at=t("07:00:00"), last_seen_at=t("11:40:00"),
         is_leader=False, owner=None, authoritative=False),
]

AUDIT = [
    (t("10:00:00"), "bob@ops", "queue_pause", "queue:integrations", {"paused": False}, {"paused": True}),
    (t("11:20:00"), "alice@ops", "pause", "cleanup.tmp-files", {"paused_at": None, "paused_by": None},
     {"paused_at": "2025-03-08 11:20:00+00", "paused_by": "alice@ops"}),
    (t("09:05:00", 3), "carol@ops", "retire", "legacy.export", {"retired_at": None},
     {"retired_at": "2025-03-03 09:05:00+00"}),
]


def seed(conn: psycopg.Connection[Any]) -> None:
    created = t("08:00:00", 1)
    with conn.transaction():
        # Restored as a dump would be, triggers off: the audit rows keep their fixed times
        # (the database stamps its own on a live insert) and the seed itself is not audited.
        conn.execute("SET LOCAL session_replication_role = replica")
        for s in SCHEDULES:
            conn.execute(
                "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, args, metadata, tags, "
                "missed_fire_policy, last_enqueued_at, next_fire_at, created_at, updated_at, paused_at, paused_by, "
                "owner, retired_at, retired_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
                "%s, %s, %s)",
                (s["name"], s["cron_expr"], s["timezone"], s["kind"], s["queue"], Jsonb(s.get("args", {})),
                 Jsonb(s.get("metadata", {})), s.get("tags", []), s.get("missed_fire_policy", "coalesce"),
                 s.get("last_enqueued_at"), s.get("next_fire_at"), created, created, s.get("paused_at"),
                 s.get("paused_by"), s.get("owner"), s.get("retired_at"), s.get("retired_by")),
            )
        for name, fire, state, attempt, late in JOBS:
            kind, queue = next((s["kind"], s["queue"]) for s in SCHEDULES if s["name"] == name)
            conn.execute(
                "INSERT INTO awa.jobs (kind, queue, state, attempt, run_at, created_at, metadata) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (kind, queue, state, attempt, fire, fire + timedelta(seconds=late),
                 Jsonb({"cron_name": name, "cron_fire_time": fire.strftime("%Y-%m-%dT%H:%M:%SZ")})),
            )
        conn.execute(
            "INSERT INTO awa.queue_meta (queue, paused, paused_at, paused_by) VALUES ('integrations', true, %s, %s)",
            (t("10:00:00"), "bob@ops"),
        )
        definitions = [sch.definition() for sch in BILLING_MANIFEST]
        for r in RUNTIMES:
            declaring = r["authoritative"]
            conn.execute(
                "INSERT INTO awa.runtime_instances (instance_id, hostname, pid, version, protocol_version, "
                "started_at, last_seen_at, is_leader, owner, authoritative, manifest, manifest_hash, retire_grace, "
                "leader_protocol) "
                "VALUES (%(instance_id)s, %(hostname)s, %(pid)s, %(version)s, %(protocol_version)s, "
                "%(started_at)s, %(last_seen_at)s, %(is_leader)s, %(owner)s, %(authoritative)s, %(manifest)s, "
                "%(manifest_hash)s, %(retire_grace)s, %(leader_protocol)s)",
                # runtimes of this release: their protocol may lead
                {**r, "leader_protocol": RUNTIME_PROTOCOL,
                 "manifest": Jsonb({d["name"]: d for d in definitions}) if declaring else None,
                 "manifest_hash": manifest_hash(definitions) if declaring else None,
                 "retire_grace": timedelta(minutes=10) if declaring else None},
            )
        # billing's certificate is for an older manifest: NOT SYNCED until the leader applies.
        conn.execute(
            "INSERT INTO awa.owners (owner, certificate_hash, certificate_size, certified_at, agreement_hash, "
            "agreement_since, agreement_seen_at) VALUES ('billing', %s, 2, %s, %s, %s, %s), "
            "('platform', NULL, NULL, NULL, NULL, NULL, NULL)",
            ("0" * 64, t("09:00:00"), manifest_hash(definitions), t("11:58:00"), t("12:00:25")),
        )
        for at, operator, action, target, before, after in AUDIT:
            conn.execute(
                "INSERT INTO awa.audit_log (at, operator, action, target, before, after) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                (at, operator, action, target, Jsonb(before), Jsonb(after)),
            )
