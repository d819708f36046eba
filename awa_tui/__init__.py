"""awa-tui: a Postgres-only cron scheduler with an operator console.

Importing this package is cheap: the engine loads on first use of `Client`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from awa_tui.engine.core.errors import (
    AwaError,
    Conflict,
    DatabaseUnavailable,
    NotFound,
    ReadOnly,
    SchemaError,
    ValidationError,
)

# The one version of awa-tui (pyproject.toml reads it from here); docs/versioning.md says
# what a major, a minor and a patch may change.
__version__ = "1.0.0"

if TYPE_CHECKING:
    from awa_tui.engine.client import Client
    from awa_tui.engine.jobs.context import Job, JobCancelled
    from awa_tui.engine.jobs.handlers import RetryPolicy
    from awa_tui.engine.schedules.definition import Schedule

__all__ = [
    "AwaError", "Client", "Conflict", "DatabaseUnavailable", "Job", "JobCancelled", "NotFound", "ReadOnly",
    "RetryPolicy", "Schedule", "SchemaError", "ValidationError", "__version__",
]

# What a handler sees and how its retries are chosen: light modules, loaded on first use.
_LAZY = {
    "Job": "awa_tui.engine.jobs.context",
    "JobCancelled": "awa_tui.engine.jobs.context",
    "RetryPolicy": "awa_tui.engine.jobs.handlers",
}


def __getattr__(name: str) -> Any:
    if name == "Client":
        from awa_tui.engine.client import Client

        return Client
    if name == "Schedule":
        from awa_tui.engine.schedules.definition import Schedule

        return Schedule
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(name)
