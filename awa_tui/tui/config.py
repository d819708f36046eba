"""What a console is built from. The CLI (launch.py) and the tests build it the same way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from awa_tui.engine.backend.protocol import ConsoleBackend
from awa_tui.engine.core.db import describe_dsn

if TYPE_CHECKING:
    from awa_tui.engine.client import Client


# Schedules fetched per page (the end of the list asks for the next). Every refresh reads
# the page, its outcome strips and diffs its rows, and the first paint builds them all:
# 1,000 rows were ~0.25 s of the UI thread before anything showed (measured); 250 fill ten
# screens of a 25-row terminal.
PAGE_SIZE = 250


@dataclass
class ConsoleConfig:
    client: ConsoleBackend  # the console's reads and operator actions (read_only inside)
    engine: Client | None = None  # the in-process runtime's Client under --lead, else None
    db_label: str | None = None  # shown instead of describe_dsn() (tests pin it)
    embedded_at: str | None = None  # where the embedded Postgres lives, when used
    refresh: float = 2.0
    clock: Callable[[], datetime] | None = None  # None: DB time; tests inject a fixed clock
    page_size: int = PAGE_SIZE
    handle_signals: bool = False  # SIGHUP/SIGTERM exit cleanly (the real terminal only)
    schema_label: str | None = None  # the header's "upstream Awa schema v40" (launch.py detects it)

    @property
    def database(self) -> str:
        """Where the console points, never with a password."""
        return self.db_label or describe_dsn(self.client.dsn)
