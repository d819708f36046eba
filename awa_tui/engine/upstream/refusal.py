"""The one-line refusal of what upstream Awa's schema has no notion of (owners, the plan,
tombstones, the fire ledger, calendars...): the same words in the console and the CLI."""

from __future__ import annotations

from typing import NoReturn

from awa_tui.engine.core.errors import AwaError

# What each refused method is about, by its name in the ReadBackend / ActionBackend protocols.
NEEDS_OWN_SCHEMA: dict[str, str] = {
    "list_owners": "owners need",
    "retire_owner": "owners need",
    "restore_owner": "owners need",
    "adopt": "owners need",
    "adopt_declared": "owners need",
    "transfer": "owners need",
    "plan": "reconciliation plans need",
    "retire": "retiring a schedule needs",
    "restore": "restoring a schedule needs",
    "remove": "removing a schedule needs",
    "queue_drain": "draining a queue needs",
    "registered_runtimes": "the readiness check of a runtime needs",
    "check": "the health check needs",
    "set_calendar": "calendars need",
    "delete_calendar": "calendars need",
    "list_calendars": "calendars need",
    "get_calendar": "calendars need",
    "jobs_page": "the jobs panel (fire ledger) needs",
    "list_jobs": "job history (fire ledger) needs",
    "job_detail": "job history (fire ledger) needs",
    "ledger": "the fire ledger needs",
    "ledger_view": "the fire ledger needs",
    "why": "the fire ledger needs",
    "retry_job": "retrying a job needs",
    "cancel_job": "cancelling a job needs",
    "prune_jobs": "pruning jobs needs",
    "backfill": "backfill needs",
    "override": "operator overrides need",
    "reset_override": "operator overrides need",
    "create_schedule": "schedules made at run time need",
    "edit_schedule": "schedules made at run time need",
    "delete_schedule": "schedules made at run time need",
    "definition_fires": "schedules made at run time need",
    "alerts": "alerts need",
    "silences": "alert silences need",
    "silence_alerts": "alert silences need",
}


class Unsupported(AwaError):
    """An awa-tui feature upstream Awa's schema does not have."""


def refuse(method: str, version: int | None, what: str | None = None) -> NoReturn:
    """Refuse protocol method `method` (or `what`, e.g. "bulk retire needs") in one line."""
    needs = what or NEEDS_OWN_SCHEMA[method]
    raise Unsupported(f"{needs} awa-tui's own schema; this database holds upstream Awa schema v{version}")
