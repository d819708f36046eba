"""`check --alive` is bounded: a server that answers one byte at a time cannot keep the
probe past its timeout (each byte arrives well within a per-read timeout, so only a
deadline on the whole exchange stops it), and an endless answer is read no further than
its cap. The servers are real sockets on this host."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator

import pytest

from awa_tui.engine.core.errors import AwaError
from awa_tui.engine.runtime.alive import ALIVE_MAX_BYTES, fetch_alive

Answer = Callable[[socket.socket, threading.Event], None]
Start = Callable[[Answer], int]
HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"


@pytest.fixture
def server() -> Iterator[Start]:
    """A listening socket whose every connection is handed to `answer` on a thread of its own."""
    stop = threading.Event()
    listeners: list[socket.socket] = []

    def start(answer: Answer) -> int:
        listener = socket.create_server(("127.0.0.1", 0))
        listeners.append(listener)

        def accept() -> None:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                threading.Thread(target=answer, args=(conn, stop), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()
        return int(listener.getsockname()[1])

    yield start
    stop.set()
    for listener in listeners:
        listener.close()


def dribble(conn: socket.socket, stop: threading.Event) -> None:
    """Headers, then one byte of the body every 0.1 s, until the test ends."""
    try:
        conn.recv(4096)
        conn.sendall(HEADERS)
        while not stop.wait(0.1):
            conn.sendall(b" ")
    except OSError:
        pass
    finally:
        conn.close()


def flood(conn: socket.socket, stop: threading.Event) -> None:
    """An answer far larger than any runtime's, as fast as it is read."""
    try:
        conn.recv(4096)
        conn.sendall(HEADERS)
        chunk = b"x" * 65536
        for _ in range(16):
            conn.sendall(chunk)
    except OSError:
        pass
    finally:
        conn.close()


def test_control_a_per_read_timeout_never_ends_a_dribbling_answer(server: Start) -> None:
    """The fault is real: urllib with a 0.5 s timeout is still reading after 2 s."""
    port = server(dribble)
    done = threading.Event()

    def read() -> None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/alive", timeout=0.5) as response:
                response.read()
        except Exception:  # the server goes away when the test ends: any ending will do
            pass
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert not done.wait(2.0)


def test_a_dribbling_server_is_given_up_at_the_deadline(server: Start) -> None:
    port = server(dribble)
    started = time.monotonic()
    with pytest.raises(AwaError) as refused:
        fetch_alive(f"127.0.0.1:{port}", timeout=1.0)
    took = time.monotonic() - started
    assert str(refused.value) == (f"no runtime answers at http://127.0.0.1:{port}/alive: "
                                  "no complete answer within 1 s")
    assert 1.0 <= took < 1.5, took


def test_an_endless_answer_is_read_only_to_its_cap(server: Start) -> None:
    port = server(flood)
    with pytest.raises(AwaError) as refused:
        fetch_alive(f"127.0.0.1:{port}", timeout=5.0)
    assert str(refused.value) == (f"the answer at http://127.0.0.1:{port}/alive is larger than "
                                  f"{ALIVE_MAX_BYTES // 1024} KiB: not an awa-tui runtime's")


def test_the_metrics_server_drops_a_client_that_sends_nothing(dsn: str) -> None:
    """A connection that never finishes its request does not keep its thread and
    descriptor: the server closes it after its client timeout."""
    from awa_tui.engine.core.db import ConnectionSource
    from awa_tui.engine.runtime.alive import CLIENT_TIMEOUT_S
    from awa_tui.engine.runtime.metrics import MetricsServer

    db = ConnectionSource(dsn, "awa-metrics-timeout-test")
    server = MetricsServer.serve(db, "127.0.0.1:0", is_leader=lambda: False)
    try:
        with socket.create_connection(("127.0.0.1", server.bound_port)) as silent:
            silent.sendall(b"GET /metrics HTTP/1.1\r\n")  # and never the rest
            silent.settimeout(CLIENT_TIMEOUT_S * 3)
            started = time.monotonic()
            assert silent.recv(4096) == b""  # closed by the server, no answer
            took = time.monotonic() - started
    finally:
        server.stop()
        db.close_all()
    assert CLIENT_TIMEOUT_S - 0.5 <= took < CLIENT_TIMEOUT_S + 2, took


def test_a_storm_of_connections_gets_at_most_eight_handlers(dsn: str) -> None:
    """Clients that hold a handler (a request never finished) take at most MAX_HANDLERS
    threads of the runtime's process; the next request waits in the listen queue until one
    is dropped, then is answered."""
    from helpers import wait_for

    from awa_tui.engine.core.db import ConnectionSource
    from awa_tui.engine.runtime.alive import CLIENT_TIMEOUT_S, MAX_HANDLERS
    from awa_tui.engine.runtime.metrics import MetricsServer

    def handlers() -> int:
        return sum(1 for t in threading.enumerate() if "process_request_thread" in t.name)

    db = ConnectionSource(dsn, "awa-metrics-storm-test")
    server = MetricsServer.serve(db, "127.0.0.1:0", is_leader=lambda: False)
    silent = [socket.create_connection(("127.0.0.1", server.bound_port)) for _ in range(MAX_HANDLERS + 4)]
    try:
        for conn in silent:
            conn.sendall(b"GET /metrics HTTP/1.1\r\n")  # and never the rest: each holds a handler
        wait_for(lambda: handlers() == MAX_HANDLERS, 10, what="every handler taken by a silent client")
        url = f"http://127.0.0.1:{server.bound_port}/metrics"
        with pytest.raises(OSError):  # queued behind the silent clients, not answered meanwhile
            urllib.request.urlopen(url, timeout=CLIENT_TIMEOUT_S / 2)
        assert handlers() == MAX_HANDLERS
        with urllib.request.urlopen(url, timeout=CLIENT_TIMEOUT_S * 4) as answer:  # once they are dropped
            assert answer.status == 200 and b"awa_up" in answer.read()
    finally:
        for conn in silent:
            conn.close()
        server.stop()
        db.close_all()


def test_one_rendering_answers_every_scrape_for_a_second(dsn: str) -> None:
    """A storm of scrapes costs one rendering a second: a pass observed in between shows in
    the next rendering, not in the kept one."""
    from helpers import wait_for

    from awa_tui.engine.core.db import ConnectionSource
    from awa_tui.engine.runtime.metrics import MetricsServer

    db = ConnectionSource(dsn, "awa-metrics-cache-test")
    server = MetricsServer.serve(db, "127.0.0.1:0", is_leader=lambda: False)
    url = f"http://127.0.0.1:{server.bound_port}/metrics"

    def scrape() -> bytes:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return bytes(answer.read())

    try:
        first = scrape()
        server.observe_pass(0.3, 5)
        assert b"awa_evaluator_pass_seconds_count 0.0" in first
        def counted() -> bytes | None:
            body = scrape()
            return body if b"awa_evaluator_pass_seconds_count 1.0" in body else None

        fresh = wait_for(counted, 10, interval=0.1, what="the next rendering")
        assert b"awa_evaluator_due 5.0" in fresh
    finally:
        server.stop()
        db.close_all()


def test_a_kept_rendering_answers_until_it_expires_per_format() -> None:
    """`rendered_for` over prometheus_client's own WSGI app: within its time every request
    of a format gets the kept answer; another format, or after the time, renders afresh."""
    from wsgiref.util import setup_testing_defaults

    from prometheus_client import CollectorRegistry, Counter, make_wsgi_app

    from awa_tui.engine.runtime.metrics import rendered_for

    registry = CollectorRegistry()
    counter = Counter("probe", "a probe", registry=registry)

    def get(app: Callable[..., list[bytes]], accept: str = "") -> bytes:
        environ: dict[str, object] = {"PATH_INFO": "/metrics", "HTTP_ACCEPT": accept}
        setup_testing_defaults(environ)
        return b"".join(app(environ, lambda status, headers, exc_info=None: None))

    kept = rendered_for(make_wsgi_app(registry), 3600)
    assert b"probe_total 0.0" in get(kept)
    counter.inc()
    assert b"probe_total 0.0" in get(kept)  # the kept rendering
    assert b"probe_total 1.0" in get(kept, "application/openmetrics-text; version=1.0.0")  # its own format
    assert b"probe_total 1.0" in get(rendered_for(make_wsgi_app(registry), 0))  # expired at once
