"""A registered handler: the function, whether it is async, its timeout and retry policy."""

from __future__ import annotations

import functools
import inspect
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal, Union

from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.jobs.context import Job

Handler = Callable[[Job], Union[Any, Awaitable[Any]]]  # noqa: UP007 (a runtime alias)
Backoff = Union[Literal["exponential", "fixed"], Callable[[int], timedelta]]  # noqa: UP007

MAX_TIMEOUT_S = 7 * 86400.0


@dataclass(frozen=True)
class RetryPolicy:
    """How a failed attempt is retried. `backoff`: "exponential" (base * 2^attempt, capped,
    with up to `jitter` of it added at random), "fixed" (base every time) or a function of
    the attempt number. `retry_on`: the exceptions worth retrying (all when empty);
    `discard_on`: exceptions that discard the job at once, whatever attempts remain. The
    job's own max attempts still bound the retries."""

    backoff: Backoff = "exponential"
    base: timedelta = timedelta(seconds=1)
    cap: timedelta = timedelta(hours=1)
    jitter: float = 0.0
    retry_on: tuple[type[BaseException], ...] = ()
    discard_on: tuple[type[BaseException], ...] = ()

    def __post_init__(self) -> None:
        if not (self.backoff in ("exponential", "fixed") or callable(self.backoff)):
            raise ValidationError(f"backoff: exponential, fixed or a function of the attempt, got {self.backoff!r}")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValidationError(f"jitter: a fraction between 0 and 1, got {self.jitter!r}")
        if self.base <= timedelta(0) or self.cap < self.base:
            raise ValidationError("base: must be positive and at most cap")

    def delay(self, attempt: int) -> timedelta:
        """How long after failed attempt `attempt` the next one may start."""
        if callable(self.backoff):
            return max(self.backoff(attempt), timedelta(0))
        if self.backoff == "fixed":
            return self.base
        seconds = min(self.base.total_seconds() * 2 ** attempt, self.cap.total_seconds())
        return timedelta(seconds=seconds + seconds * self.jitter * random.random())

    def retries(self, exc: BaseException) -> bool:
        """Whether `exc` is worth another attempt."""
        if self.discard_on and isinstance(exc, self.discard_on):
            return False
        return not self.retry_on or isinstance(exc, self.retry_on)


DEFAULT_RETRY = RetryPolicy()


def backoff(attempt: int) -> timedelta:
    """The default policy's delay: 2^attempt seconds, capped at one hour."""
    return DEFAULT_RETRY.delay(attempt)


def is_async(fn: Callable[..., Any]) -> bool:
    """An `async def` function, a partial of one, or an object whose __call__ is one."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


@dataclass(frozen=True)
class HandlerSpec:
    fn: Handler
    is_async: bool
    timeout: float | None = None  # seconds; None: no limit
    retry: RetryPolicy = field(default=DEFAULT_RETRY)


@dataclass(frozen=True)
class SchedulePolicy:
    """A schedule's own timeout and retry policy for its jobs, over its kind's."""

    timeout: float | None = None
    retry: RetryPolicy | None = None

    def over(self, handler: HandlerSpec) -> HandlerSpec:
        return HandlerSpec(handler.fn, handler.is_async, self.timeout if self.timeout is not None else handler.timeout,
                           self.retry or handler.retry)


def policy(schedule: str, timeout: timedelta | float | None = None, retry: RetryPolicy | None = None) -> SchedulePolicy:
    """A schedule's policy, checked like a handler's."""
    if not isinstance(schedule, str) or not schedule:
        raise ValidationError(f"schedule: a schedule's name, got {schedule!r}")
    checked = spec(lambda job: None, timeout, retry)
    return SchedulePolicy(checked.timeout, retry)


def check_kind(kind: str) -> str:
    """A handler's kind: a non-empty string, or one line saying what is wrong."""
    if not isinstance(kind, str) or not kind:
        raise ValidationError(f"kind: a handler needs a non-empty kind, got {kind!r}")
    return kind


def spec(fn: Handler, timeout: timedelta | float | None = None, retry: RetryPolicy | None = None) -> HandlerSpec:
    """A handler as registered, checked: a callable, a positive timeout, a RetryPolicy."""
    if not callable(fn):
        raise ValidationError(f"handler: must be a function taking the job, got {fn!r}")
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
    if seconds is not None and not 0 < seconds <= MAX_TIMEOUT_S:
        raise ValidationError(f"timeout: must be more than 0 and at most 7 days, got {seconds!r} s")
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise ValidationError(f"retry: must be a RetryPolicy, got {retry!r}")
    return HandlerSpec(fn, is_async(fn), seconds, retry or DEFAULT_RETRY)
