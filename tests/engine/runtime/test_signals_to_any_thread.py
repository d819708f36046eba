"""A stop signal the kernel hands to one of the engine's threads rather than the main one
still stops `run` (runtime/loops.run_until_stopped). Python runs signal handlers on the main
thread only; a main thread parked in an unbounded wait never ran them, and `awa-tui run`
ignored TERM until killed (seen as a flaky third-signal test). With the wait unbounded again
(SIGNAL_POLL_S = None), this test times out: it is its own control."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# The child sends SIGTERM to one of its own non-main threads (pthread_kill), so the signal
# cannot land on the main thread, once the main thread is parked in its wait (read from its
# frame), then reports how the stop went.
CHILD = textwrap.dedent("""
    import signal, sys, threading
    from awa_tui.engine.runtime import loops

    main = threading.main_thread().ident

    def parked():  # the main thread waits inside run_until_stopped (not in Thread.start's own wait)
        frame = sys._current_frames()[main]
        names = []
        while frame is not None:
            names.append(frame.f_code.co_name)
            frame = frame.f_back
        return names[:3] == ["wait", "wait", "run_until_stopped"]

    def start():
        def deliver():
            while not parked():
                pass
            signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
        threading.Thread(target=deliver, name="not-main").start()

    closed = []
    loops.run_until_stopped(start, lambda: closed.append(True), None)
    print("stopped", closed)
""")


def test_a_signal_delivered_to_another_thread_stops_the_run() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=20)
    assert (done.returncode, done.stdout, done.stderr) == (0, "stopped [True]\n", "")
