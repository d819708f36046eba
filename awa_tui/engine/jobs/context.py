"""What a handler receives: `Job`, a typed context of one attempt of one job."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class JobCancelled(Exception):
    """Raised by `Job.raise_if_cancelled()` once an operator asked to cancel the job (or its
    timeout passed): the attempt ends as cancelled (or timed out), never as a failure to retry
    at once."""




@dataclass(frozen=True)
class Job:
    """One attempt of one job, as its handler sees it.

    `fire_time` is the instant a schedule fired it (None for a manual trigger, which has
    `triggered_by`, and for an enqueued job). `resources` are what the app gave the Client
    once (`Client(resources=...)`: a pool, settings). `cancelled` turns true when an operator
    asks to cancel the job or its timeout passes: a sync handler polls it (an async one is
    cancelled at its next await)."""

    id: int
    kind: str
    queue: str
    args: dict[str, Any]
    attempt: int
    max_attempts: int
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    priority: int = 2
    enqueued_at: datetime | None = None
    resources: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    cancel_event: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)

    @classmethod
    def from_row(cls, row: Mapping[str, Any], resources: Mapping[str, Any] | None = None) -> Job:
        return cls(id=row["id"], kind=row["kind"], queue=row["queue"], args=row["args"], attempt=row["attempt"],
                   max_attempts=row["max_attempts"], metadata=row["metadata"], tags=row["tags"],
                   priority=row.get("priority", 2), enqueued_at=row.get("created_at"), resources=resources or {})

    @property
    def schedule(self) -> str | None:
        """The schedule that fired or triggered the job; None for an enqueued one."""
        name = self.metadata.get("cron_name")
        return name if isinstance(name, str) else None

    @property
    def fire_time(self) -> datetime | None:
        from awa_tui.engine.ledger.models import stored_instant  # loaded by a handler's read, not by `import awa_tui`

        return stored_instant(self.metadata.get("cron_fire_time"))

    @property
    def manual(self) -> bool:
        return self.metadata.get("triggered_manually") is True

    @property
    def triggered_by(self) -> str | None:
        who = self.metadata.get("triggered_by")
        return who if isinstance(who, str) else None

    @property
    def source(self) -> str:
        """`fired`, `manual` or `enqueued`: where the job came from."""
        return "manual" if self.manual else "fired" if self.schedule is not None else "enqueued"

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def raise_if_cancelled(self) -> None:
        if self.cancel_event.is_set():
            raise JobCancelled(f"job {self.id} was cancelled")
