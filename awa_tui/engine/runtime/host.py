"""What the runtime loops need of the client that owns them: a narrow interface, so the
loops depend on it and not on engine/client.py (which starts them: no import circle)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from awa_tui.engine.core.db import ConnectionSource
from awa_tui.engine.jobs.context import Job
from awa_tui.engine.jobs.handlers import HandlerSpec
from awa_tui.engine.read.events import RecentEvents
from awa_tui.engine.runtime.identity import RuntimeIdentity


class RuntimeHost(Protocol):
    # Read-only here (properties), so plain attributes of narrower types satisfy them.
    @property
    def dsn(self) -> str: ...

    @property
    def leader_dsn(self) -> str: ...  # the leader lock connection's (S57); the dsn unless set apart

    @property
    def application_name(self) -> str: ...

    @property
    def identity(self) -> RuntimeIdentity: ...

    @property
    def leader_lease(self) -> timedelta: ...

    @property
    def snapshot_interval(self) -> timedelta: ...

    @property
    def fleet_alert_grace(self) -> timedelta: ...  # S70

    @property
    def fleet_stall_after(self) -> timedelta: ...

    @property
    def db(self) -> ConnectionSource: ...

    @property
    def handlers(self) -> Mapping[str, HandlerSpec]: ...

    @property
    def recent_events(self) -> RecentEvents: ...  # carried by its snapshot (read/events.py)

    def sync(self) -> dict[str, int]: ...

    def snapshot(
        self, *, is_leader: bool = False, stopped: bool = False, now: datetime | None = None
    ) -> dict[str, Any] | None: ...

    def leader_pass(self) -> None: ...

    def evaluate(self, now: datetime | None = None) -> Any: ...

    def leader_services(self) -> None: ...

    def work_once(self, limit: int | None = None) -> list[tuple[Job, str]]: ...

    @property
    def worker(self) -> Any: ...  # jobs.worker.Worker: its step() is the worker loop's

    def shutdown_worker(self) -> None: ...
