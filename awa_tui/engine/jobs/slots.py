"""How many jobs one worker runs at once, and in which queues: the worker's size, checked
where a Client is made (the CLI and the console make one for a read too), so it imports
nothing of the worker itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAX_CONCURRENCY = 1000


@dataclass(frozen=True)
class Slots:
    """How many jobs run at once: `concurrency` in all; `queues`, the queues served (all when
    None); `caps`, queues with a limit of their own (each within the total)."""

    concurrency: int = 10
    queues: tuple[str, ...] | None = None
    caps: Mapping[str, int] | None = None

    @classmethod
    def parse(cls, concurrency: int, queues: Sequence[str] | Mapping[str, int] | None) -> Slots:
        """`queues` as a list of names (each may be `name=N`, a cap) or a mapping name -> cap."""
        from awa_tui.engine.core.errors import ValidationError

        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not 1 <= concurrency <= MAX_CONCURRENCY:
            raise ValidationError(f"concurrency: a whole number from 1 to {MAX_CONCURRENCY}, got {concurrency!r}")
        if queues is None:
            return cls(concurrency)
        caps: dict[str, int] = {}
        names: list[str] = []
        items = queues.items() if isinstance(queues, Mapping) else [
            (q.split("=", 1)[0], q.split("=", 1)[1]) if "=" in q else (q, None) for q in queues]
        for name, cap in items:
            name = name.strip()
            if not name:
                raise ValidationError("queues: a queue name is empty")
            names.append(name)
            if cap is None:
                continue
            try:
                value = int(cap)
            except (TypeError, ValueError):
                raise ValidationError(f"queues: {name}'s limit must be a whole number, got {cap!r}") from None
            if not 1 <= value <= concurrency:
                raise ValidationError(f"queues: {name}'s limit must be from 1 to the concurrency ({concurrency}),"
                                      f" got {value}")
            caps[name] = value
        if not names:
            raise ValidationError("queues: name at least one queue, or none for all")
        return cls(concurrency, tuple(dict.fromkeys(names)), caps or None)
