"""The states of a job (awa.jobs.state), and what a job's metadata says of the jobs it
replaced, apart from the ledger's read models: the filter grammar and `cron show` read
them without building every model class (a short command starts faster)."""

from __future__ import annotations

from typing import Any

JOB_STATES = ("available", "running", "completed", "retryable", "discarded", "cancelled")
FINISHED_STATES = ("completed", "discarded", "cancelled")
WAITING_STATES = ("available", "retryable")


def replaced_ids(value: Any) -> tuple[int, ...]:
    """The job ids a fire's metadata says it replaced (a JSON array); others are ignored:
    one malformed stored value never stops a read."""
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, int) and not isinstance(v, bool))
