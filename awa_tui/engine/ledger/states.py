"""The states of a job (awa.jobs.state), apart from the ledger's read models: the filter
grammar names them without building every model class
(a short command starts faster)."""

from __future__ import annotations

JOB_STATES = ("available", "running", "completed", "retryable", "discarded", "cancelled")
FINISHED_STATES = ("completed", "discarded", "cancelled")
WAITING_STATES = ("available", "retryable")
