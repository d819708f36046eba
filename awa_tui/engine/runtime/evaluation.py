"""One evaluator pass of a client, as its runtime keeps it: the pass's connections watched
for blockers (S59), its time and counts recorded for the snapshot and /metrics, and the
client's `on_pass` callbacks told once its connection is back."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from awa_tui.engine.core.db import ConnectionSource
    from awa_tui.engine.core.errors import AwaError
    from awa_tui.engine.firing.evaluator import PassResult, PassTimedOut, Timeouts
    from awa_tui.engine.jobs.tracing import Tracing
    from awa_tui.engine.read.blockers import PassWatch
    from awa_tui.engine.read.events import RecentEvents
    from awa_tui.engine.read.fleet import Blocker
    from awa_tui.engine.read.passes import RecentPasses
    from awa_tui.engine.runtime.metrics import MetricsServer


class PassHost(Protocol):
    """What a pass needs of the client it runs for (Client satisfies it)."""

    db: ConnectionSource
    catch_up_limit: int
    metrics: MetricsServer | None
    on_pass: list[Callable[[PassResult], None]]
    last_pass: PassResult | None

    @property
    def tracing(self) -> Tracing: ...

    @property
    def pass_timeouts(self) -> Timeouts: ...

    @property
    def pass_watch(self) -> PassWatch: ...

    @property
    def recent_passes(self) -> RecentPasses: ...

    @property
    def recent_events(self) -> RecentEvents: ...


def run_pass(host: PassHost, now: datetime | None, wake: Callable[[], None]) -> PassResult:
    """One pass at `now` (DB time when omitted); `wake` tells the reporter that a timed-out
    pass is to be carried by the next snapshot now."""
    from awa_tui.engine.firing import evaluator

    watch = host.pass_watch
    started = time.perf_counter()
    started_ns = time.time_ns()  # the fire spans' start (wall clock, as OpenTelemetry's)
    try:
        with host.db.connection() as conn:
            watch.begin(conn.info.backend_pid)
            result = evaluator.evaluate(conn, now, catch_up_limit=host.catch_up_limit, more=lambda: _watched(host),
                                        timeouts=host.pass_timeouts)
    except evaluator.PassTimedOut as exc:
        raise _timed_out(host, exc, watch.end(), time.perf_counter() - started, wake) from None
    except BaseException:
        watch.end()
        raise
    took = time.perf_counter() - started
    blockers = watch.end()
    if host.metrics is not None:
        host.metrics.observe_pass(took, result.examined + result.hinted)
    host.last_pass = result
    host.recent_passes.record(result.now, took, result.examined + result.hinted, result.fired, len(result.errors),
                              blockers=blockers)
    host.tracing.fired(result.jobs, started_ns)  # after the fire statements returned; nothing when off
    for callback in host.on_pass:
        callback(result)
    return result


@contextlib.contextmanager
def _watched(host: PassHost) -> Iterator[Any]:
    """A second connection of the pass (chunks in flight), watched like the first."""
    with host.db.connection() as conn:
        host.pass_watch.add(conn.info.backend_pid)
        yield conn


def _timed_out(host: PassHost, exc: PassTimedOut, blockers: tuple[Blocker, ...], took: float,
               wake: Callable[[], None]) -> AwaError:
    """S59: the pass is recorded (the runtimes page and `check` show it) and its error
    names what blocked it, in one line."""
    from awa_tui.engine.read.events import PASS_TIMED_OUT
    from awa_tui.engine.read.fleet import describe

    waited = f" after {took:.1f} s"
    error = type(exc)(f"{exc}{waited}; blocked by {describe(blockers)}" if blockers else f"{exc}{waited}", exc.now)
    # The pass's own DB time when it was read; else the next snapshot places it.
    # Passes given up on the same sessions, one after another (a lock held a minute): one event, counted.
    host.recent_events.record(PASS_TIMED_OUT, str(error).removeprefix("the pass "), at=exc.now,
                              same=describe(blockers) if blockers else "no blockers")
    if exc.now is not None:
        host.recent_passes.record(exc.now, took, 0, 0, 0, timed_out=True, blockers=blockers)
    wake()  # the snapshot carries it now
    return error
