"""What each loop of this process is doing now: in a step since when, or waiting since its
last step ended. `awa-tui check --alive` reads it through the metrics server (runtime/alive.py)
to tell a live runtime from one whose loop is stuck in a call that never returns."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from awa_tui.engine.health.models import LoopState

# The worker's step runs the application's handlers, which may rightly take hours: how long
# it has been busy says nothing about a stuck loop.
UNBOUNDED_LOOPS = frozenset({"worker"})


class LoopBeats:
    """Per loop, the monotonic instant its current step began (None while it waits) and
    the one its last step ended. Written by each loop's own thread, read by the server's."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._busy: dict[str, float | None] = {}
        self._done: dict[str, float | None] = {}
        self._threads: dict[str, threading.Thread] = {}

    def add(self, name: str, thread: threading.Thread) -> None:
        with self._lock:
            self._busy[name] = None
            self._done[name] = None
            self._threads[name] = thread

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        with self._lock:
            self._busy[name] = self._clock()
        try:
            yield
        finally:
            with self._lock:
                self._busy[name] = None
                self._done[name] = self._clock()

    def states(self) -> list[LoopState]:
        with self._lock:
            now = self._clock()
            return [
                LoopState(
                    name=name,
                    running=self._threads[name].is_alive(),
                    busy_s=None if busy is None else round(now - busy, 3),
                    since_step_s=None if (done := self._done[name]) is None else round(now - done, 3),
                    bounded=name not in UNBOUNDED_LOOPS,
                )
                for name, busy in self._busy.items()
            ]
