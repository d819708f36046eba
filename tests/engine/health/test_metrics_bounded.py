"""/metrics cannot hurt firing: concurrent scrapes share one collection (one database
connection at most), which gives up on its own lock timeout behind a locked table; and
label values written by anyone reach the scraper printable."""

from __future__ import annotations

import threading
import urllib.request
from typing import Any

import psycopg
from prometheus_client.parser import text_string_to_metric_families

from awa_tui.engine.core.db import ConnectionSource, connect
from awa_tui.engine.runtime.metrics import LOCK_TIMEOUT_MS, MetricsServer, read_metrics

SCRAPES = 40


def _get(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        return response.read().decode()


def _sessions(conn: psycopg.Connection[Any], application: str) -> int:
    row = conn.execute("SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = %s",
                       (application,)).fetchone()
    assert row is not None
    return int(row["n"])


def _while_running(threads: list[threading.Thread], conn: psycopg.Connection[Any], application: str) -> list[int]:
    """Start `threads` and sample the server's sessions of `application` until all ended."""
    for t in threads:
        t.start()
    counts = []
    while any(t.is_alive() for t in threads):
        counts.append(_sessions(conn, application))
        threads[0].join(0.02)
    return counts


def test_concurrent_scrapes_behind_a_locked_table_use_one_connection(dsn: str,
                                                                     conn: psycopg.Connection[Any]) -> None:
    application = "awa-metrics-bound-test"
    db = ConnectionSource(dsn, application)
    server = MetricsServer.serve(db, "127.0.0.1:0", is_leader=lambda: False)
    answers: list[str] = []
    locker = connect(dsn, application_name="psql")
    try:
        with locker.transaction():
            locker.execute("LOCK TABLE awa.cron_jobs IN ACCESS EXCLUSIVE MODE")
            threads = [threading.Thread(target=lambda: answers.append(_get(server.bound_port)))
                       for _ in range(SCRAPES)]
            counts = _while_running(threads, conn, application)
    finally:
        locker.close()
        server.stop()
    assert len(answers) == SCRAPES
    ups = [s.value for text in answers for f in text_string_to_metric_families(text) for s in f.samples
           if s.name == "awa_up"]
    # The fault happened: the collections waited on the lock and gave up (awa_up 0).
    assert ups == [0.0] * SCRAPES
    assert max(counts) == 1  # one connection, whatever the number of scrapes
    assert 1 <= server.collector.reads < SCRAPES  # most scrapes shared a collection
    db.close_all()


def test_control_reads_without_the_gate_hold_a_connection_each(dsn: str, conn: psycopg.Connection[Any]) -> None:
    """Control: the same reads made per request, as before (no shared collection), hold one
    session each behind the lock; so the bound above is the gate's."""
    application = "awa-metrics-unbound-test"
    db = ConnectionSource(dsn, application)
    n = 6
    waiting = threading.Barrier(n + 1)
    locker = connect(dsn, application_name="psql")

    def read() -> None:
        with db.connection() as c:
            waiting.wait(timeout=30)
            try:
                read_metrics(c, 10)
            except psycopg.Error:
                pass

    try:
        with locker.transaction():
            locker.execute("LOCK TABLE awa.cron_jobs IN ACCESS EXCLUSIVE MODE")
            threads = [threading.Thread(target=read) for _ in range(n)]
            for t in threads:
                t.start()
            waiting.wait(timeout=30)
            held = _sessions(conn, application)
            for t in threads:
                t.join(timeout=LOCK_TIMEOUT_MS / 1000 + 30)
    finally:
        locker.close()
        db.close_all()
    assert held == n


def test_label_values_reach_the_scraper_printable(dsn: str, conn: psycopg.Connection[Any]) -> None:
    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind, owner, queue) "
                 "VALUES (E'evil\\x1b]0;owned\\x07', '0 0 1 1 *', 'k', E'team\\r', E'q\\x07')")
    conn.execute("INSERT INTO awa.fire_stats (owner, queue, verdict, fires) "
                 "VALUES (E'team\\r', E'q\\x07', 'manual', 1)")
    db = ConnectionSource(dsn, "awa-metrics-labels-test")
    server = MetricsServer.serve(db, "127.0.0.1:0", is_leader=lambda: False)
    try:
        text = _get(server.bound_port)
    finally:
        server.stop()
        db.close_all()
    assert not any(c in text for c in "\x1b\x07\r")
    samples = {(s.name, tuple(sorted(s.labels.items()))) for f in text_string_to_metric_families(text)
               for s in f.samples}
    assert ("awa_schedule_health", (("owner", "team\\r"), ("queue", "q\\x07"), ("schedule", "evil\\x1b]0;owned\\x07"),
                                    ("state", "ok"))) in samples
    assert ("awa_schedule_fires_total", (("owner", "team\\r"), ("queue", "q\\x07"), ("verdict", "manual"))) in samples
