"""The Runtime: starts and stops the loops of one process (sync, reporter, election,
evaluator, the leader's duties, worker). It only composes the small modules; each loop has its own thread and
its own connection, so a slow loop (or a slow console render) never delays another.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime

from awa_tui.engine.errors import AwaError
from awa_tui.engine.runtime.beats import LoopBeats
from awa_tui.engine.runtime.host import RuntimeHost
from awa_tui.engine.runtime.leader import LeaderElector, lease_valid
from awa_tui.printable import printable_logger

log = printable_logger("awa_tui.runtime")

SYNC_INTERVAL_S = 60.0
EVALUATE_INTERVAL_S = 1.0
DUTIES_INTERVAL_S = 1.0  # how often the duties thread looks for a due service
WORKER_IDLE_S = 0.2
MAX_BACKOFF_S = 5.0


class Runtime:
    def __init__(self, client: RuntimeHost, *, run_worker: bool = True, lead: bool = True) -> None:
        self.client = client
        self.run_worker = run_worker
        self.lead = lead
        self.stop_event = threading.Event()
        self.elector = LeaderElector(
            client.leader_dsn, application_name=f"{client.application_name} leader",
            instance_id=client.identity.instance_id, lease=client.leader_lease,
        )
        self._threads: list[threading.Thread] = []
        self.beats = LoopBeats()
        self.started = False

    @property
    def is_leader(self) -> bool:
        return self.elector.is_leader

    def start(self) -> None:
        """Sync once (so bad definitions fail startup), then start every loop."""
        self.client.sync()
        self.client.snapshot(is_leader=False)
        self.started = True
        loops: list[tuple[str, Callable[[], None]]] = [
            ("sync", self._sync_loop),
            ("reporter", self._reporter_loop),
        ]
        if self.lead:
            loops += [("leader", lambda: self.elector.run(self.stop_event, self.beats)),
                      ("evaluator", self._evaluator_loop),
                      ("duties", self._duties_loop)]
        if self.run_worker and self.client.handlers:
            loops.append(("worker", self._worker_loop))
        for name, target in loops:
            thread = threading.Thread(target=target, name=f"awa-{name}", daemon=True)
            self.beats.add(name, thread)
            thread.start()
            self._threads.append(thread)

    def _guarded(self, loop: str, what: str, step: Callable[[], float], wake: threading.Event | None = None) -> None:
        """Run `step` until stopped; it returns how long to wait (cut short by `wake`).
        Errors back off. Each step is timed in `beats` under the loop's name."""
        failures = 0
        while not self.stop_event.is_set():
            try:
                with self.beats.step(loop):
                    delay = step()
                failures = 0
            except AwaError as exc:
                failures += 1
                delay = min(MAX_BACKOFF_S, 0.25 * 2 ** failures)
                log.warning("%s failed (retry in %.1fs): %s", what, delay, exc)
            except Exception:  # keep the loop alive; a bug must not stop the scheduler
                failures += 1
                delay = min(MAX_BACKOFF_S, 0.25 * 2 ** failures)
                log.exception("%s crashed (retry in %.1fs)", what, delay)
            (wake or self.stop_event).wait(delay)

    def _sync_loop(self) -> None:
        def step() -> float:
            self.client.sync()
            return SYNC_INTERVAL_S

        self.stop_event.wait(SYNC_INTERVAL_S)
        self._guarded("sync", "sync", step)

    def _reporter_loop(self) -> None:
        interval = self.client.snapshot_interval.total_seconds()

        def step() -> float:
            self.elector.changed.clear()
            self.client.snapshot(is_leader=self.is_leader)
            return interval

        self._guarded("reporter", "snapshot", step, wake=self.elector.changed)

    def _leads(self, now: datetime | None) -> bool:
        """Whether this runtime leads with a valid lease at `now` (DB time when omitted;
        tests inject it). A leader that wakes from a freeze may still believe it leads, its
        lock connection not yet known dead: the lease check makes it step down."""
        if not self.elector.is_leader:
            return False
        term = self.elector.term
        with self.client.db.connection() as conn:
            valid = lease_valid(conn, self.elector.instance_id, term, now)
        if not valid:
            self.elector.abdicate(f"leader lease (term {term}) expired or taken over")
            return False
        return True

    def evaluate_once(self, now: datetime | None = None) -> bool:
        """One evaluator tick: a pass, only while this runtime leads with a valid lease.
        Returns whether a pass ran."""
        if not self._leads(now):
            return False
        self.client.evaluate()
        return True

    def duties_once(self, now: datetime | None = None) -> bool:
        """The leader's services that are due, under the same lease check as a pass."""
        if not self._leads(now):
            return False
        self.client.leader_services()
        return True

    def _duties_loop(self) -> None:
        def step() -> float:
            self.duties_once()
            return DUTIES_INTERVAL_S

        self._guarded("duties", "leader duties", step)

    def _evaluator_loop(self) -> None:
        def step() -> float:
            self.elector.gained.clear()
            self.evaluate_once()
            # Wake just after the next whole second, when per-second fires fall due (or at
            # once when leadership is gained).
            return EVALUATE_INTERVAL_S - (time.time() % EVALUATE_INTERVAL_S) + 0.005

        self._guarded("evaluator", "evaluator", step, wake=self.elector.gained)

    def _worker_loop(self) -> None:
        def step() -> float:
            done = self.client.work_once()
            return 0.0 if done else WORKER_IDLE_S

        self._guarded("worker", "worker", step)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop every loop, write the final snapshot, release the leader lock."""
        self.stop_event.set()
        self.elector.changed.set()  # wakes the reporter, which waits on leadership changes
        self.elector.gained.set()  # ... and the evaluator, likewise
        self.elector.nudge()
        for thread in self._threads:
            thread.join(timeout)
        self._threads.clear()
        self.elector.release()
        if self.started:
            try:
                self.client.snapshot(is_leader=False, stopped=True)
            except AwaError as exc:
                log.warning("final snapshot failed: %s", exc)
        self.started = False


def launch(host: RuntimeHost, migrate: Callable[[], object], parts: Callable[[], object], *, run_worker: bool,
           lead: bool) -> Runtime:
    """Start a client's loops: refused on a hot standby, where a runtime could write nothing
    (S58); the schema migrated first only when it is behind (an up-to-date one needs no DDL
    rights, which a runtime's role lacks); `parts`, what the loops' threads share, made
    before any of them starts."""
    from awa_tui.engine import migrations
    from awa_tui.engine.errors import ReadOnly
    from awa_tui.engine.standby import standby_refusal

    with host.db.connection() as conn:
        refusal = standby_refusal(conn)
        if refusal is not None:
            raise ReadOnly(f"cannot run: {refusal}")
        current = migrations.current_version(conn) == migrations.code_version()
    if not current:
        migrate()
    parts()
    runtime = Runtime(host, run_worker=run_worker, lead=lead)
    runtime.start()
    return runtime


def run_until_stopped(start: Callable[[], object], close: Callable[[], None], stop: threading.Event | None) -> None:
    """Run a client until `stop` is set or SIGINT/SIGTERM/SIGHUP arrives (signals only on the
    main thread); then close it cleanly, the previous signal handlers back."""
    import signal

    stop = stop or threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, lambda *_: stop.set())
    try:
        start()
        stop.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        close()
