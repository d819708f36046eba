"""The heap of a process that runs awa-tui for its whole life: what the cycle collector may skip.

A runtime keeps what it registered (every schedule, its parsed expression, the cron caches)
until it stops, and the console keeps its widgets and styles. Python's cycle collector
re-walks long-lived objects each time they have grown by a quarter, and a full collection
walks all of them, in whichever pass or refresh happens to trigger it. Measured:
registering 200k schedules spent ~30 % of its time in the collector (2.2 s, 1.55 s with it
off); in a process holding ~440k objects of cron caches a full collection took 0.45 s, and
a 10k minute boundary fired in the middle of one went from 0.25 s to 0.8-1.2 s late.

Frozen objects (gc.freeze) are left out of every later collection; they are still freed
by reference counting, so only a cycle among them outlives its use. Only a process that
owns its heap does this (`awa-tui run`, the console): a Client embedded in an application
never touches the application's collector.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def freeze_once() -> int:
    """Freeze what is alive now, once per process: a process that froze its heap already
    (its host's choice, or an earlier call) keeps what it froze. Returns the frozen count."""
    if not gc.get_freeze_count():
        gc.freeze()
    return gc.get_freeze_count()


def registered_then_frozen(register: Callable[[], T]) -> tuple[T, int]:
    """`register()` (a runtime's schedules, declared one `periodic()` at a time) with the
    cycle collector off, then one full collection of what registering left behind, then
    everything alive is frozen (added to what is frozen already). For the process that owns
    its heap and is about to run a runtime for good: its caller's decision, unlike
    `freeze_once`. Returns register's value and the count of frozen objects. If register
    raises, the collector is back as it was and nothing is frozen."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        value = register()
    finally:
        if enabled:
            gc.enable()
    return value, collected_then_frozen()


def collected_then_frozen() -> int:
    """One full collection, then everything alive frozen (added to what is frozen already).
    Returns the count of frozen objects."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
