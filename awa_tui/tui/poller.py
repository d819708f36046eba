"""The refresh loop: one fetch in flight, the next scheduled only after it finished.

Thread work cannot be cancelled, so a fixed interval would pile fetches up behind a slow
database; instead each fetch, when done, schedules the next (Dolphie's loop). Failures
back off exponentially (the client reconnects on its next use). A fetch that has been
in flight too long makes the data STALE even before it fails.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.timer import Timer

from awa_tui.tui.dbthread import DbThread

MAX_BACKOFF_S = 30.0
DEBOUNCE_S = 0.3


class Poller:
    def __init__(
        self,
        app: App[Any],
        reader: DbThread,
        build: Callable[[], Callable[[], Any]],
        on_data: Callable[[Any, float], None],
        on_error: Callable[[str, float], None],
        interval: float,
    ) -> None:
        self.app = app
        self.reader = reader
        self.build = build
        self.on_data = on_data
        self.on_error = on_error
        self.interval = interval
        self.failures = 0
        self.in_flight = False
        self.stopped = False
        self.started_at = 0.0
        self.last_ok: float | None = None  # monotonic time of the last good fetch
        self.last_elapsed = 0.0  # seconds the last fetch took on the reader thread
        self._again = False
        self._timer: Timer | None = None

    @property
    def stale_after(self) -> float:
        """How long without a good refresh before the data is called STALE."""
        return max(3 * self.interval, 6.0)

    def backoff(self) -> float:
        return min(MAX_BACKOFF_S, 2.0 ** (self.failures - 1))

    def start(self) -> None:
        self._schedule(0)

    def refresh_now(self) -> None:
        if self.in_flight:
            self._again = True
        else:
            self._schedule(0)

    def refresh_soon(self) -> None:
        """Debounced refresh (the filter box refetches once typing pauses)."""
        if self.in_flight:
            self._again = True
        else:
            self._schedule(DEBOUNCE_S)

    def running(self) -> float | None:
        """Seconds the current fetch has been running, if one is."""
        return time.monotonic() - self.started_at if self.in_flight else None

    def overdue(self) -> float | None:
        """Seconds the current fetch has been running, if beyond `stale_after`."""
        if self.in_flight:
            running = time.monotonic() - self.started_at
            if running > self.stale_after:
                return running
        return None

    def stop(self) -> None:
        """No more fetches: the app is closing (a late timer must not touch its screens)."""
        self.stopped = True
        if self._timer is not None:
            self._timer.stop()

    def _schedule(self, delay: float) -> None:
        if self.stopped:
            return
        if self._timer is not None:
            self._timer.stop()
        # A zero-delay Textual timer divides by zero when stopped; 10 ms is "now".
        self._timer = self.app.set_timer(max(delay, 0.01), self._fire, name="poll")

    def _fire(self) -> None:
        if self.stopped or not self.app.screen_stack:  # fired during the app's teardown
            return
        if self.in_flight:
            self._again = True
            return
        self.in_flight = True
        self.started_at = time.monotonic()
        self.reader.submit(self.build(), self._done)

    def _done(self, value: Any, error: str | None) -> None:
        self.in_flight = False
        if self.stopped:  # the answer arrived while the app was closing
            return
        elapsed = self.last_elapsed = time.monotonic() - self.started_at
        if error is None:
            self.failures = 0
            self.last_ok = time.monotonic()
            self.on_data(value, elapsed)
            delay = self.interval
        else:
            self.failures += 1
            self.on_error(error, elapsed)
            delay = self.backoff()
        if self._again:
            self._again = False
            delay = 0 if error is None else delay
        self._schedule(delay)
