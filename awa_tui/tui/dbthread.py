"""Database work off the UI thread.

A `DbThread` is one long-lived thread with a queue: the console's `Client` keeps one
connection per thread, so a fresh thread per poll would open (and leak) a connection each
time. The console runs two of them, one for reads (polls, detail views) and one for
operator actions, so an action never waits behind a slow refresh (Dolphie's pattern).

Results come back as messages posted to the app (thread-safe); handlers on the UI thread
own every state change (Harlequin's pattern).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from textual.message import Message
from textual.message_pump import MessagePump

from awa_tui.engine.core.db import redact
from awa_tui.engine.core.errors import AwaError
from awa_tui.printable import printable_logger

log = printable_logger("awa_tui.tui")

Done = Callable[[Any, "str | None"], None]


def one_line(exc: BaseException) -> str:
    """The one-line, password-free text of an error (never a traceback)."""
    if isinstance(exc, AwaError):
        return redact(exc.message)
    text = " ".join(str(exc).split()) or type(exc).__name__
    return redact(f"{type(exc).__name__}: {text}")


class DbResult(Message):
    """The outcome of one unit of database work; `done(value, error)` runs on the UI thread."""

    def __init__(self, done: Done, value: Any, error: str | None, elapsed: float) -> None:
        super().__init__()
        self.done = done
        self.value = value
        self.error = error
        self.elapsed = elapsed


@dataclass
class _Job:
    work: Callable[[], Any]
    done: Done


class DbThread:
    def __init__(self, name: str, target: MessagePump) -> None:
        self.name = name
        self.target = target
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=f"awa-console-{name}", daemon=True)
        self._started = False

    @property
    def ident(self) -> int | None:
        """The thread's id once started (its statements' connection is known by it, S75)."""
        return self._thread.ident

    def submit(self, work: Callable[[], Any], done: Done) -> None:
        if not self._started:
            self._thread.start()
            self._started = True
        self._queue.put(_Job(work, done))

    def _run(self) -> None:
        import time

        while True:
            job = self._queue.get()
            if job is None:
                return
            started = time.monotonic()
            try:
                value, error = job.work(), None
            except Exception as exc:  # every failure becomes a one-line message, never a traceback
                if not isinstance(exc, AwaError):
                    log.exception("console %s work failed", self.name)
                value, error = None, one_line(exc)
            try:
                self.target.post_message(DbResult(job.done, value, error, time.monotonic() - started))
            except RuntimeError:  # the app's loop closed while this job ran: nobody to tell
                return

    def stop(self) -> None:
        """Ask the thread to finish after its current job. It is a daemon: a query stuck
        on a dead network never keeps the process alive."""
        if self._started:
            self._queue.put(None)
