"""Driving the console headless (Textual run_test) from the reliability scenarios."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from awa_tui.tui.config import ConsoleConfig
from awa_tui.tui.launch import console_client, create_app


def make_console(dsn: str, *, read_only: bool = False, refresh: float = 0.5) -> Any:
    """The console as `awa-tui --dsn DSN` builds it (same factory), refreshing fast."""
    client = console_client(dsn, "reliability", read_only)
    return create_app(ConsoleConfig(client=client, refresh=refresh))


async def until(pilot: Any, predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    """Let the app run until `predicate()` holds (the pilot waits; nothing sleeps)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await pilot.pause(0.05)


def schedule_rows(app: Any) -> list[str]:
    table = app.main.panel("schedules").table
    return [row.key.value for row in table.ordered_rows]


def shown_actions(app: Any) -> set[str]:
    """The actions the footer offers right now."""
    return {binding.action for _, binding, _, _ in app.screen.active_bindings.values() if binding.show}
