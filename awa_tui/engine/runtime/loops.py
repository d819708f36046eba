"""The Runtime: starts and stops the loops of one process (sync, reporter, election,
evaluator, the leader's duties, alert delivery, worker). It only composes the small
modules; each loop has its own thread and its own connection, so a slow loop (or a slow
console render) never delays another.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime

from awa_tui.engine.alerts.fleet import FleetThresholds
from awa_tui.engine.core.errors import AwaError
from awa_tui.engine.read.events import STARTED, STOPPED
from awa_tui.engine.runtime.alerting import ALERTS_INTERVAL_S, AlertLoop
from awa_tui.engine.runtime.beats import LoopBeats
from awa_tui.engine.runtime.host import RuntimeHost
from awa_tui.engine.runtime.leader import LEASE_LOST, LeaderElector, lease_valid
from awa_tui.printable import printable_logger

log = printable_logger("awa_tui.runtime")

SYNC_INTERVAL_S = 60.0
EVALUATE_INTERVAL_S = 1.0
DUTIES_INTERVAL_S = 1.0  # how often the duties thread looks for a due service
MAX_BACKOFF_S = 5.0


class Runtime:
    def __init__(self, client: RuntimeHost, *, run_worker: bool = True, lead: bool = True) -> None:
        self.client = client
        self.run_worker = run_worker
        self.lead = lead
        self.stop_event = threading.Event()
        self.elector = LeaderElector(
            client.leader_dsn, application_name=f"{client.application_name} leader",
            instance_id=client.identity.instance_id, lease=client.leader_lease, events=client.recent_events,
        )
        self._threads: list[threading.Thread] = []
        self.beats = LoopBeats()
        self.started = False
        self.alerts = AlertLoop(client.dsn, client.application_name, instance_id=client.identity.instance_id,
                                thresholds=FleetThresholds(client.fleet_alert_grace, client.fleet_stall_after))

    @property
    def is_leader(self) -> bool:
        return self.elector.is_leader

    @property
    def runs_worker(self) -> bool:
        return self.run_worker and bool(self.client.handlers)

    def start(self) -> None:
        """Sync once (so bad definitions fail startup), then start every loop."""
        self.client.sync()
        self.client.recent_events.record(STARTED, "" if self.lead else "without competing for leadership")
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
        # Every runtime watches the fleet and may deliver alerts while nobody leads (S70).
        loops.append(("alerts", self._alerts_loop))
        if self.runs_worker:
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
        with self.client.db.connection() as conn:
            valid = lease_valid(conn, self.elector.instance_id, self.elector.term, now)
        if not valid:
            self.elector.abdicate(LEASE_LOST)
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

    def _alerts_loop(self) -> None:
        # The leader delivers; a follower watches the fleet and delivers only while nobody
        # leads (the deliverer's lease keeps it to one runtime at a time).
        def step() -> float:
            self.alerts.step(leads=self.elector.is_leader)
            return ALERTS_INTERVAL_S

        self._guarded("alerts", "alert delivery", step)

    def _evaluator_loop(self) -> None:
        def step() -> float:
            self.elector.gained.clear()
            self.evaluate_once()
            # Wake just after the next whole second, when per-second fires fall due (or at
            # once when leadership is gained).
            return EVALUATE_INTERVAL_S - (time.time() % EVALUATE_INTERVAL_S) + 0.005

        self._guarded("evaluator", "evaluator", step, wake=self.elector.gained)

    def _worker_loop(self) -> None:
        worker = self.client.worker
        self._guarded("worker", "worker", worker.step, wake=worker.wake)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop every loop, write the final snapshot, release the leader lock."""
        self.stop_event.set()
        self.elector.changed.set()  # wakes the reporter, which waits on leadership changes
        self.elector.gained.set()  # ... and the evaluator, likewise
        self.elector.nudge()
        if self.run_worker and self.client.handlers:
            self.client.worker.wake.set()  # its loop waits on its own event
        for thread in self._threads:
            thread.join(timeout)
        self._threads.clear()
        self.alerts.close()
        self.elector.release()  # leadership goes at once; running jobs finish after (S62)
        if self.started:
            self.client.shutdown_worker()
        if self.started:
            self.client.recent_events.record(STOPPED)
            try:
                self.client.snapshot(is_leader=False, stopped=True)
            except AwaError as exc:
                log.warning("final snapshot failed: %s", exc)
        self.started = False


def launch(host: RuntimeHost, migrate: Callable[[], object], parts: Callable[[], object], *, run_worker: bool,
           lead: bool, migrating: bool = True) -> Runtime:
    """Start a client's loops: refused on a hot standby, where a runtime could write nothing
    (S58); the schema migrated first only when it is behind (an up-to-date one needs no DDL
    rights, which a runtime's role lacks) and `migrating` (else a schema behind is refused in
    one line: migration is then a deploy step of its own); a newer schema is run on when its
    release policy admits this runtime (the compatibility window), which then leads only if
    the policy lets it; `parts`, what the loops' threads share, made before any of them starts."""
    from awa_tui.engine import migrations
    from awa_tui.engine.core.errors import ReadOnly, SchemaError
    from awa_tui.engine.core.standby import standby_refusal

    with host.db.connection() as conn:
        refusal = standby_refusal(conn)
        if refusal is not None:
            raise ReadOnly(f"cannot run: {refusal}")
        found = migrations.read_status(conn)
        window = migrations.window_refusal(conn, found, host.identity.leader_protocol)
    if window is not None:
        raise SchemaError(window)
    if found.ahead:
        log.warning("%s; running within the compatibility window (docs/operations.md, Upgrading)",
                    found.mismatch())
    elif found.mismatch() is not None:
        if not migrating:
            raise SchemaError(f"{found.mismatch()} (this runtime does not migrate: --no-migrate)")
        migrate()
    parts()
    runtime = Runtime(host, run_worker=run_worker, lead=lead)
    runtime.start()
    return runtime


SIGNAL_POLL_S = 0.25  # how soon a signal received by another thread is acted on


def run_until_stopped(start: Callable[[], object], close: Callable[[], None], stop: threading.Event | None,
                      force: Callable[[], None] | None = None, end_grace: threading.Event | None = None) -> None:
    """Run a client until `stop` is set or SIGINT/SIGTERM/SIGHUP arrives (signals only on the
    main thread); then close it cleanly. The handlers stay in place until the close is done:
    a second signal (`timeout`'s follow-up, a double Ctrl-C) ends the running jobs' shutdown
    grace (`end_grace`: they are released to run again now) and the clean stop goes on; a
    third forces it, after `force` has marked the runtime stopped, by raising
    KeyboardInterrupt. The previous handlers are put back at the end."""
    import signal

    stop = stop or threading.Event()
    received: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        received.append(signum)
        stop.set()
        if len(received) == 2:
            if end_grace is not None:
                end_grace.set()
            log.warning("%s: already stopping cleanly; running jobs are released now (a third signal "
                        "forces the stop)", signal.Signals(signum).name)
        elif len(received) >= 3:
            log.warning("%s: forced stop, the runtime marked stopped", signal.Signals(signum).name)
            if force is not None:
                force()
            raise KeyboardInterrupt

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        try:
            start()
            # A bounded wait, again and again: the kernel may deliver a signal to any of the
            # engine's threads, and then the main thread (where Python runs its handlers) is
            # only woken by a timeout; an unbounded wait would never see it.
            while not stop.wait(SIGNAL_POLL_S):
                pass
        finally:
            if len(received) < 3:  # forced: the process is on its way out, its row already stopped
                close()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
