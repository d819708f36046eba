"""Shared test helpers. Wait on conditions with a deadline; never sleep blindly.

`wait_for` (threads, processes, the database) and `until` (a Textual app under its pilot)
are the one polling loop, in its sync and async forms: the same deadline and failure.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg import sql

T = TypeVar("T")


class Deadline:
    """`timeout` seconds from now; `check()` fails the test, naming what was awaited, once past."""

    def __init__(self, timeout: float, what: str) -> None:
        self.timeout = timeout
        self.what = what
        self.at = time.monotonic() + timeout

    def check(self) -> None:
        if time.monotonic() > self.at:
            raise AssertionError(f"timed out after {self.timeout}s waiting for {self.what}")


def wait_for(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.02, what: str = "condition") -> T:
    """Poll `predicate` until it returns a truthy value; fail the test after `timeout`."""
    deadline = Deadline(timeout, what)
    pause = threading.Event()
    while True:
        value = predicate()
        if value:
            return value
        deadline.check()
        pause.wait(interval)


async def until(pilot: Any, predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    """Let a Textual app run (the pilot waits) until `predicate()` is truthy; fail after `timeout`."""
    deadline = Deadline(timeout, what)
    while True:
        value = predicate()
        if value:
            return value
        deadline.check()
        await pilot.pause(0.02)


async def drained(pilot: Any, app: Any) -> None:
    """Everything the keys pressed so far set going has finished: their handlers ran, the
    database work they queued (the reader's and the writer's queues are FIFO: a marker job
    answers after every job queued before it) was answered on the UI thread, and what those
    answers did (a dialog pushed after a preview) was processed. A deterministic point at
    which to assert that nothing happened."""
    await pilot.pause()
    answered: list[str] = []
    for thread in (app.reader, app.writer):
        thread.submit(lambda: None, lambda value, error, name=thread.name: answered.append(name))
    await until(pilot, lambda: sorted(answered) == ["reader", "writer"], what="the console's database work")
    await pilot.pause()


def drop_roles(admin: psycopg.Connection[Any], prefix: str) -> None:
    """Drop every role named with `prefix`, handing what it owns back to the admin."""
    roles = [r["rolname"] for r in admin.execute(
        "SELECT rolname FROM pg_roles WHERE starts_with(rolname, %s) ORDER BY rolname DESC", (prefix,)).fetchall()]
    for role in roles:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,))
    for role in roles:
        admin.execute(sql.SQL("REASSIGN OWNED BY {} TO CURRENT_USER").format(sql.Identifier(role)))
        admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
    for role in roles:
        admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
