"""Where handlers run: async ones on an event loop the worker owns (one thread), sync ones
in a thread pool. A submitted job is an `Attempt`: its future, its deadline, and how to
ask it to stop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from awa_tui.engine.jobs.context import Job, JobCancelled
from awa_tui.engine.jobs.handlers import HandlerSpec
from awa_tui.engine.jobs.tracing import active


class JobTimedOut(Exception):
    """The handler ran past its timeout."""


@dataclass(eq=False)
class Attempt:
    job: Job
    spec: HandlerSpec
    future: concurrent.futures.Future[Any]
    deadline: float | None  # time.monotonic(); None: no timeout
    order: int = 0  # claim order, for a stable report
    started: float = field(default_factory=time.monotonic)
    # Why it was asked to stop: "cancelled" (an operator), "replaced" (the overlap policy
    # replace: `replaced_by` fired), "timed_out", "interrupted" (shutdown).
    stop_reason: str | None = None
    replaced_by: int | None = None
    recorded: bool = False  # its outcome is written (a sync job past its deadline, before it returns)
    task: asyncio.Task[Any] | None = field(default=None, repr=False)
    loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    span: Any = field(default=None, repr=False)  # its OpenTelemetry span while tracing is on (jobs/tracing.py)

    def stop(self, reason: str) -> None:
        """Ask the handler to stop: its job's `cancelled` turns true; an async one is also
        cancelled at its next await. A sync one stops only if it looks."""
        if self.stop_reason is None:
            self.stop_reason = reason
        self.job.cancel_event.set()
        task, loop = self.task, self.loop
        if task is not None and loop is not None:
            loop.call_soon_threadsafe(task.cancel)


class DaemonPool:
    """At most `threads` daemon threads running submitted calls in order. Not the standard
    ThreadPoolExecutor: its threads are joined when the interpreter exits, so one handler
    that never returns would keep a stopped runtime's process alive for ever."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._queue: queue.SimpleQueue[tuple[concurrent.futures.Future[Any], Callable[..., Any], tuple[Any, ...]]
                                       | None] = queue.SimpleQueue()
        self._started = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._queue.put((future, fn, args))
        with self._lock:
            if self._started < self.threads:
                self._started += 1
                threading.Thread(target=self._work, name=f"awa-job-{self._started}", daemon=True).start()
        return future

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            future, fn, args = item
            if not future.set_running_or_notify_cancel():  # cancelled before it started
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # the handler's, handed to whoever reads the future
                future.set_exception(exc)

    def shutdown(self) -> None:
        """Let the threads go once the calls already queued are done (not waited for)."""
        with self._lock:
            for _ in range(self._started):
                self._queue.put(None)
            self._started = 0


class Executor:
    """An event loop thread and a thread pool of `threads`, both started at first use."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pool: DaemonPool | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="awa-jobs-loop", daemon=True).start()
                self._loop = loop
            return self._loop

    @property
    def pool(self) -> DaemonPool:
        with self._lock:
            if self._pool is None:
                self._pool = DaemonPool(self.threads)
            return self._pool

    def submit(self, job: Job, spec: HandlerSpec, order: int = 0, span: Any = None) -> Attempt:
        """Start `job`'s handler; `span` (tracing on) is current while it runs."""
        deadline = time.monotonic() + spec.timeout if spec.timeout is not None else None
        if spec.is_async:
            loop = self.loop
            attempt = Attempt(job, spec, concurrent.futures.Future(), deadline, order, loop=loop, span=span)
            # The loop's task runs in a copy of this thread's context, taken here: the span's.
            with active(span):
                attempt.future = asyncio.run_coroutine_threadsafe(_run_async(attempt), loop)
            return attempt
        attempt = Attempt(job, spec, concurrent.futures.Future(), deadline, order, span=span)
        attempt.future = self.pool.submit(self._run_sync, attempt)
        return attempt

    def _run_sync(self, attempt: Attempt) -> Any:
        with active(attempt.span):
            result = attempt.spec.fn(attempt.job)
            if inspect.isawaitable(result):  # a sync callable that returned a coroutine: run it, never drop it
                return asyncio.run_coroutine_threadsafe(_awaited(result), self.loop).result()
        return result

    def close(self) -> None:
        """Stop the loop and let the pool's threads go (a thread that will not stop is left
        to finish on its own: a daemon, it does not hold the process)."""
        with self._lock:
            loop, self._loop = self._loop, None
            pool, self._pool = self._pool, None
        if loop is not None and not loop.is_closed():
            asyncio.run_coroutine_threadsafe(_wind_down(), loop)
        if pool is not None:
            pool.shutdown()


WIND_DOWN_S = 1.0  # how long async handlers get to unwind once cancelled at close


async def _wind_down() -> None:
    """Cancel what still runs on the loop, let it unwind (its `finally` blocks, at most
    WIND_DOWN_S), then stop the loop: a bare stop would leave a task cancelled but never
    resumed."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=WIND_DOWN_S)
    asyncio.get_running_loop().stop()


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


async def _run_async(attempt: Attempt) -> Any:
    """Run an async handler as a task of its own (so it can be cancelled alone), at most
    until its deadline."""
    attempt.task = asyncio.ensure_future(attempt.spec.fn(attempt.job))  # type: ignore[arg-type]
    if attempt.job.cancel_event.is_set():  # asked to stop before the task existed
        attempt.task.cancel()
    timeout = None if attempt.deadline is None else max(attempt.deadline - time.monotonic(), 0.0)
    done, _ = await asyncio.wait({attempt.task}, timeout=timeout)
    if attempt.task not in done:
        attempt.stop("timed_out")
        with contextlib.suppress(BaseException):
            await attempt.task
        raise JobTimedOut(f"timed out after {attempt.spec.timeout:g} s")
    if attempt.task.cancelled():
        raise JobCancelled(f"job {attempt.job.id} was cancelled")
    return attempt.task.result()
