"""`awa-tui check --alive`: is this runtime process alive, and is none of its loops stuck?
Asked of the process itself, over the HTTP server that serves its /metrics (GET /alive),
never of the database: a liveness probe that failed while the database is down would
restart every runtime at once and fix nothing."""

from __future__ import annotations

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

from awa_tui.engine.errors import AwaError
from awa_tui.engine.health.listen import parse_addr
from awa_tui.engine.health.models import LoopState, RuntimeAlive

if TYPE_CHECKING:
    from awa_tui.engine.runtime.identity import RuntimeIdentity
    from awa_tui.engine.runtime.loops import Runtime

ALIVE_PATH = "/alive"
# A bounded loop inside one step for longer than this is stuck (the slowest steps measured
# at 1M schedules, a fresh leader's first pass and a full sync, take well under a minute).
DEFAULT_STUCK_AFTER_S = 120.0
FETCH_TIMEOUT_S = 5.0

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


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes and probes come every few seconds: no access log."""


def serve(host: str, port: int, app: WsgiApp) -> tuple[WSGIServer, threading.Thread]:
    """Serve `app` on HOST:PORT (IPv4 or IPv6) from a daemon thread."""

    class Server(ThreadingWSGIServer):
        pass

    family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    Server.address_family = family
    httpd = make_server(sockaddr[0], port, app, Server, handler_class=_QuietHandler)
    thread = threading.Thread(target=httpd.serve_forever, name="awa-metrics", daemon=True)
    thread.start()
    return httpd, thread


def fetch_alive(addr: str, timeout: float = FETCH_TIMEOUT_S) -> RuntimeAlive:
    """What the runtime serving /metrics on `addr` says of itself; AwaError (one line) when
    nothing answers there, or something that is not a runtime of this version."""
    host, port = parse_addr(addr, "--alive")
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}{ALIVE_PATH}"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            data = json.loads(response.read())
        return RuntimeAlive(**{**data, "loops": [LoopState(**loop) for loop in data["loops"]]})
    except urllib.error.HTTPError as exc:
        raise AwaError(f"no awa-tui runtime answers at {url}: HTTP {exc.code} (is it an older version?)") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise AwaError(f"no runtime answers at {url}: {reason}") from None
    except (ValueError, TypeError, KeyError):
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
