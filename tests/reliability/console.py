"""Driving the console headless (Textual run_test) from the reliability scenarios."""

from __future__ import annotations

from typing import Any

from helpers import until  # noqa: F401  (re-exported for these tests)

from awa_tui.tui.config import ConsoleConfig
from awa_tui.tui.launch import console_client, create_app


def make_console(dsn: str, *, read_only: bool = False, refresh: float = 0.5) -> Any:
    """The console as `awa-tui --dsn DSN` builds it (same factory), refreshing fast."""
    client = console_client(dsn, "reliability", read_only)
    return create_app(ConsoleConfig(client=client, refresh=refresh))


def schedule_rows(app: Any) -> list[str]:
    table = app.main.panel("schedules").table
    return [row.key.value for row in table.ordered_rows]


def shown_actions(app: Any) -> set[str]:
    """The actions the footer offers right now."""
    return {binding.action for _, binding, _, _ in app.screen.active_bindings.values() if binding.show}
