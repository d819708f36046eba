"""`awa-tui check --alive`: is this runtime process alive, and is none of its loops stuck?
Asked of the process itself, over the HTTP server that serves its /metrics (GET /alive),
never of the database: a liveness probe that failed while the database is down would
restart every runtime at once and fix nothing."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client.exposition import ThreadingWSGIServer

from awa_tui.engine.core.errors import AwaError
from awa_tui.engine.health.listen import parse_addr
from awa_tui.engine.health.models import LoopState, RuntimeAlive

if TYPE_CHECKING:
    from awa_tui.engine.runtime.identity import RuntimeIdentity
    from awa_tui.engine.runtime.loops import Runtime

ALIVE_PATH = "/alive"
# A bounded loop inside one step for longer than this is stuck (the slowest steps measured
# at 1M schedules, a fresh leader's first pass and a full sync, take well under a minute).
DEFAULT_STUCK_AFTER_S = 120.0
FETCH_TIMEOUT_S = 5.0  # the whole probe, connect to last byte
ALIVE_MAX_BYTES = 64 * 1024  # a runtime's answer is well under 2 KiB

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def with_alive(metrics_app: WsgiApp, report: Callable[[], RuntimeAlive]) -> WsgiApp:
    """The metrics app, plus GET /alive: what `report` says, as JSON."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != ALIVE_PATH:
            return metrics_app(environ, start_response)
        body = json.dumps(asdict(report())).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    return app


CLIENT_TIMEOUT_S = 5.0  # a client silent this long (a request never finished) is dropped


class _QuietHandler(WSGIRequestHandler):
    # Each connection has a thread and a descriptor: one that sends nothing gives them back.
    timeout = CLIENT_TIMEOUT_S

    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes and probes come every few seconds: no access log."""


# Requests answered at once; the next connections wait in the listen queue (then the kernel
# refuses), so a storm of scrapes costs the runtime's process a few threads, not one each.
MAX_HANDLERS = 8
LISTEN_QUEUE = 128


def serve(host: str, port: int, app: WsgiApp) -> tuple[WSGIServer, threading.Thread]:
    """Serve `app` on HOST:PORT (IPv4 or IPv6) from a daemon thread, at most MAX_HANDLERS
    requests at a time."""
    slots = threading.BoundedSemaphore(MAX_HANDLERS)

    class Server(ThreadingWSGIServer):
        request_queue_size = LISTEN_QUEUE

        def process_request(self, request: Any, client_address: Any) -> None:
            slots.acquire()  # the accept loop waits for a free handler
            try:
                super().process_request(request, client_address)
            except BaseException:
                slots.release()
                raise

        def process_request_thread(self, request: Any, client_address: Any) -> None:
            try:
                super().process_request_thread(request, client_address)
            finally:
                slots.release()

    family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    Server.address_family = family
    httpd = make_server(str(sockaddr[0]), port, app, Server, handler_class=_QuietHandler)
    thread = threading.Thread(target=httpd.serve_forever, name="awa-metrics", daemon=True)
    thread.start()
    return httpd, thread


def fetch_alive(addr: str, timeout: float = FETCH_TIMEOUT_S) -> RuntimeAlive:
    """What the runtime serving /metrics on `addr` says of itself; AwaError (one line) when
    nothing answers there, or something that is not a runtime of this version.

    `timeout` bounds the whole exchange, not each read: a server that answers one byte at
    a time cannot keep a probe going (the exchange runs on a daemon thread given up at the
    deadline), and at most ALIVE_MAX_BYTES of its answer are read."""
    host, port = parse_addr(addr, "--alive")
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}{ALIVE_PATH}"
    outcome: list[RuntimeAlive | AwaError] = []

    def exchange() -> None:
        try:
            outcome.append(_fetch(url, timeout))
        except AwaError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=exchange, name="awa-alive-probe", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        raise AwaError(f"no runtime answers at {url}: no complete answer within {timeout:g} s")
    if isinstance(outcome[0], AwaError):
        raise outcome[0]
    return outcome[0]


def _fetch(url: str, timeout: float) -> RuntimeAlive:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body = response.read(ALIVE_MAX_BYTES + 1)
        if len(body) > ALIVE_MAX_BYTES:
            raise AwaError(f"the answer at {url} is larger than {ALIVE_MAX_BYTES // 1024} KiB: "
                           "not an awa-tui runtime's")
        data = json.loads(body)
        return RuntimeAlive(**{**data, "loops": [LoopState(**loop) for loop in data["loops"]]})
    except urllib.error.HTTPError as exc:
        raise AwaError(f"no awa-tui runtime answers at {url}: HTTP {exc.code} (is it an older version?)") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise AwaError(f"no runtime answers at {url}: {reason}") from None
    except (ValueError, TypeError, KeyError, http.client.HTTPException):
        raise AwaError(f"the answer at {url} is not an awa-tui runtime's") from None


def alive_problems(alive: RuntimeAlive, stuck_after_s: float = DEFAULT_STUCK_AFTER_S) -> list[str]:
    """Why this runtime is not alive, one line each (none: alive). A runtime still
    starting (migrating, syncing its schedules for the first time) is alive."""
    if alive.state == "stopping":
        return ["the runtime is stopping"]
    problems = []
    for loop in alive.loops:
        if not loop.running:
            problems.append(f"loop {loop.name} has ended")
        elif loop.bounded and loop.busy_s is not None and loop.busy_s > stuck_after_s:
            problems.append(f"loop {loop.name} stuck: inside one step for {loop.busy_s:.0f} s "
                            f"(more than {stuck_after_s:g} s)")
    return problems


def runtime_alive(identity: RuntimeIdentity, runtime: Runtime | None, closing: bool) -> RuntimeAlive:
    """What a process says at /alive: its identity, whether it is starting, running or
    stopping (closing, or its loops told to stop), and what each of its loops is doing."""
    if closing or (runtime is not None and runtime.stop_event.is_set()):
        state = "stopping"
    else:
        state = "starting" if runtime is None else "running"
    return RuntimeAlive(instance_id=str(identity.instance_id), hostname=identity.hostname, pid=identity.pid,
                        state=state, loops=runtime.beats.states() if runtime is not None else [])
