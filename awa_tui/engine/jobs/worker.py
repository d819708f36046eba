"""A worker: slots, the claim of what free slots start now, the outcome of each attempt,
timeouts and cancellations, and a graceful shutdown.

One process runs `concurrency` jobs at once: async handlers on the executor's event loop,
sync ones on its threads. A queue given a cap of its own (`queues={"reports": 2}`) never
takes more than that many slots, so a slow queue leaves the others their slots. A job is
claimed only when a slot is free to start it, so nothing waits claimed behind a slow job.
Each step records the attempts that ended, in one transaction, then claims."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any
from uuid import UUID

from awa_tui.engine.core.db import ConnectionSource
from awa_tui.engine.jobs import store
from awa_tui.engine.jobs.context import Job, JobCancelled
from awa_tui.engine.jobs.executor import Attempt, Executor, JobTimedOut
from awa_tui.engine.jobs.handlers import HandlerSpec, SchedulePolicy
from awa_tui.engine.jobs.slots import Slots
from awa_tui.engine.jobs.tracing import Tracing, end_span
from awa_tui.printable import printable_logger

log = printable_logger("awa_tui.worker")

IDLE_S = 0.2  # how long an idle worker waits before it looks for due jobs again
CANCEL_POLL_S = 1.0  # how often a busy worker asks whether an operator cancelled one of its jobs

Outcome = tuple[Job, str]


class Worker:
    """The jobs one runtime runs (`step` from its worker loop, or `work_once` from a test)."""

    def __init__(
        self,
        db: ConnectionSource,
        handlers: Mapping[str, HandlerSpec],
        *,
        slots: Slots,
        claimed_by: UUID | None,
        resources: Mapping[str, Any] | None = None,
        on_job: Sequence[Callable[[Job, str], None]] = (),
        on_timed: Sequence[Callable[[Job, str, float], None]] = (),
        job_log_level: int = logging.INFO,
        policies: Mapping[str, SchedulePolicy] | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        self.db = db
        self.handlers = handlers
        self.slots = slots
        self.claimed_by = claimed_by
        self.resources = resources or {}
        self.on_job = on_job
        self.on_timed = on_timed  # each ended attempt with its seconds (the /metrics histogram)
        self.policies = policies if policies is not None else {}  # a schedule's own timeout and retries
        self.job_log_level = job_log_level
        self.tracing = tracing if tracing is not None else Tracing()  # a span per attempt, when on
        self.executor = Executor(slots.concurrency)
        self.running: dict[int, Attempt] = {}
        self.wake = threading.Event()  # set when an attempt ends: the loop records it at once
        self.stopping = False
        self._lock = threading.Lock()  # one step at a time (the loop, work_once, shutdown)
        self._last_cancel_poll = 0.0
        self._order = 0

    # --- the loop's step ---------------------------------------------------------------------

    def step(self) -> float:
        """Record what ended, stop what must stop, fill the free slots. Returns how long the
        loop may wait (an ending attempt wakes it sooner)."""
        with self._lock:
            self.wake.clear()
            outcomes, claimed = self._round(fill=not self.stopping)
        self._announce(outcomes)
        return 0.0 if claimed and self._free() else self._wait()

    def _round(self, *, fill: bool, limit: int | None = None) -> tuple[list[Outcome], int]:
        with self.db.connection() as conn:
            with conn.transaction():
                outcomes, settle = self._record(conn)
            settle()
            self._poll_cancels(conn)
            claimed = self._fill(conn, limit) if fill else 0
        return outcomes, claimed

    def _free(self) -> int:
        return self.slots.concurrency - len(self.running)

    def _wait(self) -> float:
        if not self.running:
            return IDLE_S
        waits = [CANCEL_POLL_S] + [a.deadline - time.monotonic() for a in self.running.values()
                                   if a.deadline is not None and not a.recorded]
        return max(min(waits), 0.0) if self._free() == 0 else min(IDLE_S, *waits)

    def _fill(self, conn: Any, limit: int | None = None) -> int:
        """Claim what the free slots start now (each capped queue within its own cap)."""
        if not self.handlers:
            return 0
        free = self._free() if limit is None else limit
        kinds = sorted(self.handlers)
        caps = self.slots.caps or {}
        jobs: list[Job] = []
        busy: dict[str, int] = {}
        for attempt in self.running.values():
            busy[attempt.job.queue] = busy.get(attempt.job.queue, 0) + 1
        for queue, cap in caps.items():
            room = min(cap - busy.get(queue, 0), free - len(jobs))
            jobs += store.claim_jobs(conn, kinds, room, [queue], self.claimed_by, resources=self.resources)
        shared = [q for q in self.slots.queues if q not in caps] if self.slots.queues is not None else None
        if shared is None or shared:
            jobs += store.claim_jobs(conn, kinds, free - len(jobs), shared, self.claimed_by, exclude=sorted(caps),
                                     resources=self.resources)
        if self.stopping:  # shutdown began while claiming: give them back, unspent
            store.release_unstarted(conn, jobs, self.claimed_by)
            return 0
        for job in jobs:
            self._order += 1
            handler = self.handlers[job.kind]
            own = self.policies.get(job.schedule) if job.schedule is not None else None
            attempt = self.executor.submit(job, own.over(handler) if own is not None else handler, self._order,
                                           self.tracing.job(job))
            self.running[job.id] = attempt
            attempt.future.add_done_callback(lambda _: self.wake.set())
        return len(jobs)

    # --- outcomes ------------------------------------------------------------------------------

    def _record(self, conn: Any) -> tuple[list[Outcome], Callable[[], None]]:
        """Write the outcome of every attempt that ended, and of sync ones past their deadline.
        Returns the outcomes and what to change in memory once the writes committed: an
        outcome whose write failed stays to be written by the next round, never lost with
        its job left `running`."""
        now = time.monotonic()
        completed: list[Attempt] = []
        outcomes: list[tuple[Attempt, str]] = []
        errors: dict[Attempt, BaseException] = {}  # what each attempt that did not complete raised
        freed: list[Attempt] = []  # their slot is free once this round commits
        overdue: list[Attempt] = []  # sync attempts recorded timed out, still on their thread
        for attempt in list(self.running.values()):
            if attempt.future.done():
                freed.append(attempt)
                if attempt.recorded:  # a sync job timed out earlier: its slot is free only now
                    log.warning("job %s (%s) returned %.1f s after its timeout; its slot is free again",
                                attempt.job.id, attempt.job.kind, now - (attempt.deadline or now))
                    continue
                error = attempt.future.exception()
                if error is None:
                    completed.append(attempt)
                else:
                    errors[attempt] = error
                    outcomes.append((attempt, self._failed(conn, attempt, error)))
            elif attempt.deadline is not None and now >= attempt.deadline and not attempt.recorded \
                    and not attempt.spec.is_async:
                # A thread cannot be stopped from outside: the job is told (job.cancelled) and its
                # attempt recorded timed out; the slot stays taken until the thread returns.
                attempt.stop("timed_out")
                overdue.append(attempt)
                error = errors[attempt] = JobTimedOut(f"timed out after {attempt.spec.timeout:g} s")
                outcomes.append((attempt, self._failed(conn, attempt, error)))
        store.complete_jobs(conn, [a.job for a in completed], self.claimed_by)
        ended = [(a, "completed") for a in completed] + outcomes
        ended.sort(key=lambda pair: pair[0].order)

        def settle() -> None:
            for attempt in freed:
                self.running.pop(attempt.job.id, None)
            for attempt in overdue:
                attempt.recorded = True
            for attempt, state in ended:
                self._log(attempt, state)
                end_span(attempt.span, state, errors.get(attempt))
                for observe in self.on_timed:
                    observe(attempt.job, state, now - attempt.started)

        return [(a.job, state) for a, state in ended], settle

    def _failed(self, conn: Any, attempt: Attempt, error: BaseException) -> str:
        job, policy = attempt.job, attempt.spec.retry
        message = f"{type(error).__name__}: {error}"
        reason = attempt.stop_reason if attempt.stop_reason is not None else "failed"
        if isinstance(error, JobTimedOut):
            reason = "timed_out"
        elif reason == "replaced":
            return store.fail_job(conn, job, f"replaced by job {attempt.replaced_by}", state="cancelled",
                                  reason="replaced", claimed_by=self.claimed_by)
        elif reason == "cancelled" or (isinstance(error, JobCancelled) and reason == "failed"):
            return store.fail_job(conn, job, "cancelled by an operator", state="cancelled", reason="cancelled",
                                  claimed_by=self.claimed_by)
        if reason == "interrupted":
            return store.fail_job(conn, job, message, reason="interrupted", final=False, delay=_NOW,
                                  claimed_by=self.claimed_by)
        trace = store.trace_tail(error)
        final = job.attempt >= job.max_attempts or not policy.retries(error)
        log.warning("job %s (%s) in queue %s, attempt %d of %d, %s: %s\n%s", job.id, job.kind, job.queue,
                    job.attempt, job.max_attempts, "timed out" if reason == "timed_out" else "failed", message, trace)
        return store.fail_job(conn, job, message, trace, delay=policy.delay(job.attempt), final=final,
                              reason=reason, claimed_by=self.claimed_by)

    def _log(self, attempt: Attempt, state: str) -> None:
        log.log(self.job_log_level, "job %s (%s) %s", attempt.job.id, attempt.job.kind, state)

    def _announce(self, outcomes: list[Outcome]) -> None:
        for job, state in outcomes:
            for callback in self.on_job:
                callback(job, state)

    def _poll_cancels(self, conn: Any) -> None:
        """Stop the running jobs an operator asked to cancel (once a second at most)."""
        live = [job_id for job_id, a in self.running.items() if a.stop_reason is None]
        if not live or time.monotonic() - self._last_cancel_poll < CANCEL_POLL_S:
            return
        self._last_cancel_poll = time.monotonic()
        for job_id, replaced_by in store.cancel_requests(conn, live, self.claimed_by).items():
            attempt = self.running[job_id]
            if replaced_by is None:
                log.info("job %s: cancel asked by an operator; stopping its handler", job_id)
                attempt.stop("cancelled")
            else:
                log.info("job %s: replaced by job %s (overlap replace); stopping its handler", job_id, replaced_by)
                attempt.replaced_by = replaced_by
                attempt.stop("replaced")

    # --- one step for tests and scripts --------------------------------------------------------

    def work_once(self, limit: int) -> list[Outcome]:
        """Claim up to `limit` due jobs, run them (at most `concurrency` at once), wait for all,
        record each outcome. Returns (job, state) in claim order."""
        with self._lock:
            mine: set[int] = set(self.running)
            outcomes, _ = self._round(fill=True, limit=limit)
            claimed = set(self.running) - mine
            self._last_cancel_poll = 0.0

        def waiting() -> bool:
            return any((a := self.running.get(job_id)) is not None and not a.recorded for job_id in claimed)

        while waiting():  # the lock is let go between rounds: a shutdown may take them over
            self.wake.wait(self._wait())
            self.wake.clear()
            with self._lock:
                more, _ = self._round(fill=False)
            outcomes += more
        self._announce(outcomes)
        return outcomes

    # --- shutdown --------------------------------------------------------------------------------

    def shutdown(self, grace: float, force: threading.Event, keep_fresh: Callable[[], None] | None = None) -> None:
        """Stop claiming at once; let running jobs finish for `grace` seconds (less when
        `force` is set), then stop and release the rest: each goes back to waiting at once,
        its attempt counted (it ran, maybe in part). Says what happened to each."""
        self.stopping = True
        with self._lock:
            if self.running:
                log.info("shutting down: %d job(s) running, waiting up to %g s for them", len(self.running), grace)
            end = time.monotonic() + grace
            last_fresh = time.monotonic()
            while self.running and not force.is_set() and time.monotonic() < end:
                self.wake.wait(min(0.2, max(end - time.monotonic(), 0.0)))
                self.wake.clear()
                outcomes, _ = self._round(fill=False)
                for job, state in outcomes:
                    log.info("job %s (%s) ended during shutdown: %s", job.id, job.kind, state)
                self._announce(outcomes)
                if keep_fresh is not None and time.monotonic() - last_fresh > 5.0:
                    keep_fresh()  # still alive: no one rescues jobs that are finishing here
                    last_fresh = time.monotonic()
            self._interrupt(forced=force.is_set())
        self.executor.close()

    def _interrupt(self, *, forced: bool) -> None:
        unstarted = [a for a in self.running.values() if not a.spec.is_async and a.future.cancel()]
        for attempt in unstarted:
            del self.running[attempt.job.id]
            end_span(attempt.span, "released")
        with self.db.connection() as conn:
            released = store.release_unstarted(conn, [a.job for a in unstarted], self.claimed_by)
            if released:
                log.info("shutdown: %d job(s) claimed but not started went back to waiting, no attempt spent",
                         released)
            why = "a second signal came" if forced else "the shutdown grace ended"
            for attempt in [a for a in self.running.values() if not a.recorded]:
                attempt.stop("interrupted")
                error = RuntimeError(f"interrupted: the runtime shut down ({why})")
                state = self._failed(conn, attempt, error)
                end_span(attempt.span, state, error)
                log.warning("job %s (%s) still running when %s: released (%s, runs again at once)",
                            attempt.job.id, attempt.job.kind, why, state)
            self.running.clear()

    def close(self) -> None:
        self.executor.close()


_NOW = timedelta(0)  # an interrupted job may run again at once
