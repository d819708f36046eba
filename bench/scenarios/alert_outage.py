"""An alert receiver's outage costs the fire path nothing (S63, S70).

The per-second measurement (N x `* * * * * *`, catch_up, a window of W seconds, under a
running in-process runtime) three times, alert delivery on in each: a webhook sink whose
receiver is up (answers 200), refused (nothing listens: connection refused), and
blackholed (accepts the connection, never answers: every request waits its 10 s timeout).
A feeder inserts a health transition of one schedule every half second during the run, so
the deliverer always has alerts to send (up: delivered; down: failing, retried with its
backoff). Target: with the receiver down, the fires land as with it up: landed < 1 s stays
>= 99 % and p99 lateness within NOISE_S of the up run's.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import psycopg

from bench.common import (
    Report,
    Row,
    Server,
    collect_fires,
    db_now,
    lateness_basis,
    percentile,
    seed_schedules,
    sleep_until_db,
)
from bench.engines import Engine

LAND_WITHIN_S = 1.0
LAND_TARGET_PCT = 99.0
GRACE_S = 5.0
NOISE_S = 0.25  # p99 lateness: a receiver down may add at most this to the up run's
FEED_EVERY_S = 0.5
KEY_ENV = "AWA_BENCH_HOOK_KEY"
MODES = ("up", "refused", "blackholed")


class _Ok(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


@contextmanager
def receiver(mode: str) -> Iterator[str]:
    """The sink's URL: a server answering 200, a port nothing listens on, or a socket whose
    backlog accepts connections that nobody ever reads."""
    if mode == "up":
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/hook"
        finally:
            server.shutdown()
            server.server_close()
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        if mode == "blackholed":
            s.listen(64)
            yield f"http://127.0.0.1:{port}/hook"
            return
    yield f"http://127.0.0.1:{port}/hook"  # refused: bound, then released


def _feed(dsn: str, stop: threading.Event, counts: dict[str, int]) -> None:
    """One transition of bench-000001 every FEED_EVERY_S, alternating failing and ok."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        failing = False
        while not stop.wait(FEED_EVERY_S):
            old, new = ("failing", "ok") if failing else ("ok", "failing")
            conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health, reason) "
                         "VALUES ('bench-000001', now(), %s, %s, 'bench feed')", (old, new))
            failing = not failing
            counts["fed"] += 1


def measure(server: Server, engine: Engine, n: int, window_s: int, mode: str) -> dict[str, float | None]:
    from awa_tui import Client

    os.environ.setdefault(KEY_ENV, "bench-key")
    with server.database(f"ao_{mode}_{n}") as dsn, receiver(mode) as url:
        engine.migrate(dsn)
        with Client(dsn, operator="bench") as admin:
            admin.actions.add_alert_sink("hook", "webhook", url=url, key_env=KEY_ENV)
        lead = 6.0 + n / 5000
        opens = (db_now(dsn) + timedelta(seconds=lead)).replace(microsecond=0)
        closes = opens + timedelta(seconds=window_s)
        seed_schedules(dsn, n, "* * * * * *", "catch_up", opens - timedelta(seconds=1))
        running = engine.start(dsn, n, "* * * * * *", "catch_up", max_seconds=lead + window_s + 120)
        stop, counts = threading.Event(), {"fed": 0}
        feeder = threading.Thread(target=_feed, args=(dsn, stop, counts), daemon=True)
        feeder.start()
        cpu0, t0 = running.cpu_seconds(), time.monotonic()
        try:
            sleep_until_db(dsn, closes + timedelta(seconds=GRACE_S))
            cpu = (running.cpu_seconds() - cpu0) / (time.monotonic() - t0)
        finally:
            stop.set()
            feeder.join(10)
            running.stop()
        fires = collect_fires(dsn, engine.name, server.commit_ts, opens, closes)
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FILTER (WHERE state = 'delivered') AS delivered, "
                               "count(*) FILTER (WHERE state = 'pending' AND attempts > 0) AS failing "
                               "FROM awa.alert_deliveries").fetchone()
    expected = n * window_s
    late = fires.lateness
    return {
        "landed": sum(1 for x in late if x < LAND_WITHIN_S) / expected * 100,
        "p50": percentile(late, 0.5),
        "p99": percentile(late, 0.99),
        "doubled": float(fires.doubled),
        "cpu": cpu * 100,
        "fed": float(counts["fed"]),
        "delivered": float(row[0]) if row else None,
        "failing": float(row[1]) if row else None,
    }


def run(server: Server, engine: Engine, sizes: list[int], report: Report, upstream: Engine | None,
        window_s: int) -> None:
    for n in sizes:
        found = {mode: measure(server, engine, n, window_s, mode) for mode in MODES}
        base = found["up"]
        for mode in MODES:
            a = found[mode]
            size = f"{n:,} x 1/s, {window_s} s, receiver {mode}"

            def row(metric: str, key: str, target: str, unit: str, ok: bool | None, a=a, size=size) -> None:
                report.add(Row("alert outage", size, metric, target, a.get(key), unit, ok,
                               lower_is_better=unit != "%" or key == "cpu"))

            row(f"landed < {LAND_WITHIN_S:g} s", "landed", f">= {LAND_TARGET_PCT:g} %", "%",
                a["landed"] is not None and a["landed"] >= LAND_TARGET_PCT)
            row("lateness p50", "p50", "", "s", None)
            if mode == "up" or base["p99"] is None:
                row("lateness p99", "p99", "", "s", None)
            else:
                row("lateness p99", "p99", f"<= up + {NOISE_S:g} s", "s",
                    a["p99"] is not None and a["p99"] <= base["p99"] + NOISE_S)
            row("doubled", "doubled", "0", "", a["doubled"] == 0)
            row("engine CPU", "cpu", "", "%", None)
            row("alerts delivered", "delivered", "", "", None)
            row("alerts failing", "failing", "", "", None)
    report.note(f"alert outage lateness = {lateness_basis(server.commit_ts)} - cron_fire_time; a transition "
                f"fed every {FEED_EVERY_S:g} s; down = refused or blackholed (each request waits 10 s)")
