"""What a console is built from. The CLI (launch.py) and the tests build it the same way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from awa_tui.engine.db import describe_dsn


@dataclass
class ConsoleConfig:
    client: Any  # the console's Client: reads and operator actions (read_only inside)
    engine: Any = None  # the in-process runtime's Client under --lead, else None
    db_label: str | None = None  # shown instead of describe_dsn() (tests pin it)
    embedded_at: str | None = None  # where the embedded Postgres lives, when used
    refresh: float = 2.0
    clock: Callable[[], datetime] | None = None  # None: DB time; tests inject a fixed clock
    page_size: int = 1000  # schedules fetched per page
    handle_signals: bool = False  # SIGHUP/SIGTERM exit cleanly (the real terminal only)

    @property
    def database(self) -> str:
        """Where the console points, never with a password."""
        return self.db_label or describe_dsn(self.client.dsn)
