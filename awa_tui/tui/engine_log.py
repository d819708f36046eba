"""Warnings of the in-process engine (leadership lost, a loop failing) as notifications.

Under --lead the engine logs from its own threads; with the console on screen stderr is
not where an operator looks (Textual captures it anyway). Job failures are left out:
they are the jobs' business and show in the detail view's recent fires.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from textual.app import App
from textual.message import Message

from awa_tui.engine.core.db import redact
from awa_tui.printable import printable

QUIET = ("awa_tui.worker", "awa_tui.demo", "awa_tui.tui")
REPEAT_S = 30.0  # the same warning is shown again at most this often


class EngineWarning(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class EngineLog(logging.Handler):
    def __init__(self, app: App[Any]) -> None:
        super().__init__(logging.WARNING)
        self.app = app
        self.logger = logging.getLogger("awa_tui")
        self._shown: dict[str, float] = {}

    def install(self) -> None:
        self.logger.addHandler(self)

    def remove(self) -> None:
        self.logger.removeHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(QUIET):
            return
        try:
            self.app.post_message(EngineWarning(printable(redact(" ".join(record.getMessage().split())))))
        except RuntimeError:  # the app's loop is closed: the engine is outliving the console
            pass

    def should_show(self, text: str) -> bool:
        """Called on the UI thread: drop a repeat of the same warning within REPEAT_S."""
        now = time.monotonic()
        if now - self._shown.get(text, -REPEAT_S) < REPEAT_S:
            return False
        self._shown[text] = now
        return True
