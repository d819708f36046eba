"""Shared test helpers. Wait on conditions with a deadline; never sleep blindly."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.02, what: str = "condition") -> T:
    """Poll `predicate` until it returns a truthy value; fail the test after `timeout`."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        pause.wait(interval)


async def until(pilot: Any, predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    """Let a Textual app run (the pilot waits) until `predicate()` is truthy; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await pilot.pause(0.02)
