"""The words an operator reads above a CLI table's column, or beside a value in a listing
(`cron show`), for each field of the read models. `--json` keeps the field names.

The words match the console's columns where it has the same one (CRON, ZONE, POLICY,
NEXT FIRE, LAST FIRE, WAITING). A field not named here reads as its words in capitals
(`fires_count`: FIRES COUNT), so a new field never shows as a raw column name.
"""

from __future__ import annotations

HEADINGS: dict[str, str] = {
    # Schedules (`cron list`, `cron show`).
    "cron_expr": "CRON",
    "timezone": "ZONE",
    "missed_fire_policy": "POLICY",
    "state_text": "STATE",
    "overdue": "OVERDUE",
    "last_enqueued_at": "LAST FIRE",
    "next_fire_at": "NEXT FIRE",
    "created_at": "CREATED",
    "updated_at": "UPDATED",
    "paused_at": "PAUSED AT",
    "paused_until": "PAUSED UNTIL",
    "pause_reason": "PAUSE REASON",
    "catchup_window": "CATCH-UP WINDOW (S)",
    "retired_at": "RETIRED AT",
    "start_at": "STARTS",
    "end_at": "ENDS",
    "fires_count": "FIRES SO FAR",
    "finished_at": "FINISHED",
    "max_attempts": "MAX TRIES",
    "cron_written": "CRON AS WRITTEN",
    "jitter_ms": "JITTER (MS)",
    "queue_paused": "QUEUE PAUSED",
    "origin_text": "ORIGIN",  # S64: declared in code, or made at run time
    "replace_text": "REPLACE",  # the overlap policy replace: which fire cancelled which job
    # Jobs and the ledger.
    "fire_time": "FIRE TIME",
    "attempt": "TRY",
    "duration_s": "DURATION (S)",
    "lateness_s": "LATE (S)",
    "job_id": "JOB",
    "last_error": "LAST ERROR",
    "triggered_by": "TRIGGERED BY",
    "attempted_at": "TRIED AT",
    "scheduled_at": "DUE AT",
    "run_at": "RUN AT",
    # Runtimes.
    "instance_id": "INSTANCE",
    "hostname": "HOST",
    "leader_protocol": "PROTOCOL",
    "schema_version": "SCHEMA",
    "last_seen_at": "LAST SEEN",
    "manifest_hash": "MANIFEST",
    # Owners.
    "fresh_runtimes": "FRESH RUNTIMES",
    "schedules_owned": "OWNED",
    "schedules_retired": "RETIRED",
    "agreement_since": "AGREED SINCE",
    # Queues.
    "available": "WAITING",
    # Alerts (`alerts list`, `alerts sinks list`).
    "from_health": "WAS",
    "to_health": "NOW",
    "open": "FIRING",
    "next_attempt_at": "NEXT TRY",
    "attempts": "TRIES",
    "key_from": "KEY FROM",
    "target": "SENDS TO",
    # `db status` and the embedded Postgres.
    "upstream_mode": "UPSTREAM MODE",
    "audit_trail": "AUDIT TRAIL",
    "standby": "STANDBY",
    "replay_lag_s": "REPLAY LAG (S)",
    "data_dir": "DATA DIRECTORY",
    "dsn": "CONNECT WITH",
}


def heading(field: str) -> str:
    """A table's column header for `field`."""
    return HEADINGS.get(field) or field.replace("_", " ").upper()


def label(field: str) -> str:
    """The same words beside a value in a listing of one row (`cron show`)."""
    return heading(field).lower()


LABEL_WIDTH = 24  # "max consecutive failures", the longest label a listing shows


def listing_line(field: str, value: str) -> str:
    """One line of a one-row listing: the field's label, padded, then the value as shown."""
    return f"{label(field):{LABEL_WIDTH}} {value}"
