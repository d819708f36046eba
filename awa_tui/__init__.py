"""awa-tui: a Postgres-only cron scheduler with an operator console.

Importing this package is cheap: the engine loads on first use of `Client`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from awa_tui.engine.errors import (
    AwaError,
    Conflict,
    DatabaseUnavailable,
    NotFound,
    ReadOnly,
    SchemaError,
    ValidationError,
)

__version__ = "0.1.0"

if TYPE_CHECKING:
    from awa_tui.engine.client import Client
    from awa_tui.engine.schedules.definition import Schedule

__all__ = [
    "AwaError", "Client", "Conflict", "DatabaseUnavailable", "NotFound", "ReadOnly",
    "Schedule", "SchemaError", "ValidationError", "__version__",
]


def __getattr__(name: str) -> Any:
    if name == "Client":
        from awa_tui.engine.client import Client

        return Client
    if name == "Schedule":
        from awa_tui.engine.schedules.definition import Schedule

        return Schedule
    raise AttributeError(name)
