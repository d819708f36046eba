"""S63 end to end on a real runtime: the leader's own alerts loop delivers the outbox to a
real receiver; while the receiver is down the failing delivery shows in /metrics and in
`check`; a receiver that never answers keeps the alerts loop busy while the evaluator
goes on passing every second (delivery never slows firing)."""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from helpers import wait_for
from http_receiver import Receiver, closed_port
from prometheus_client.parser import text_string_to_metric_families

from awa_tui.engine.client import Client

KEY = "k3y"


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def undelivered(port: int, sink: str, state: str) -> float:
    return scrape(port)[("awa_alert_deliveries_undelivered", (("sink", sink), ("state", state)))]


@pytest.fixture
def runtime(dsn: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Client, int]]:
    monkeypatch.setenv("AWA_TEST_HOOK_KEY", KEY)
    c = Client(dsn, operator="tester@test")
    c.periodic("tick", "* * * * *", "test.job")
    c.migrate()
    server = c.serve_metrics("127.0.0.1:0")
    yield c, server.bound_port
    c.close()


def test_s63_the_leader_delivers_retries_and_shows_a_failing_sink(
        runtime: tuple[Client, int], conn: psycopg.Connection[Any]) -> None:
    c, metrics_port = runtime
    port = closed_port()
    c.actions.add_alert_sink("hook", "webhook", url=f"http://127.0.0.1:{port}/in", key_env="AWA_TEST_HOOK_KEY")
    c.start(run_worker=False)
    wait_for(lambda: c.is_leader, timeout=30, what="leadership")
    conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health, reason) "
                 "VALUES ('tick', now(), 'ok', 'failing', 'the last job failed')")
    wait_for(lambda: undelivered(metrics_port, "hook", "failing") == 1, timeout=30, what="a failed attempt")
    assert undelivered(metrics_port, "hook", "pending") == 0
    report = c.reads.check()
    [problem] = [p for p in report.fleet if p.code == "alert_delivery"]
    assert problem.warning and problem.message.startswith("alert sink hook: 1 alert(s) not delivered since ")
    assert problem.message.endswith(f"(sink hook (http://127.0.0.1:{port}/…): cannot connect: Connection refused)")
    receiver = Receiver(port)
    try:
        wait_for(lambda: receiver.requests, timeout=30, what="the retry to reach the receiver")
        wait_for(lambda: undelivered(metrics_port, "hook", "failing") == 0, timeout=30, what="delivered")
        [body] = receiver.bodies()
        assert [(a["schedule"], a["health"]) for a in body["alerts"]] == [("tick", "failing")]
        assert not [p for p in c.reads.check().fleet if p.code == "alert_delivery"]
    finally:
        receiver.close()


def test_s63_a_receiver_that_never_answers_does_not_slow_the_evaluator(
        runtime: tuple[Client, int], conn: psycopg.Connection[Any]) -> None:
    c, _ = runtime
    with socket.socket() as silent:  # accepts connections (the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        c.actions.add_alert_sink("hook", "webhook", url=f"http://127.0.0.1:{silent.getsockname()[1]}/in",
                                 key_env="AWA_TEST_HOOK_KEY")
        c.start(run_worker=False)
        wait_for(lambda: c.is_leader, timeout=30, what="leadership")
        conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health) "
                     "VALUES ('tick', now(), 'ok', 'late')")
        loops = c.runtime.loops
        assert loops is not None

        def alerts_busy() -> float:
            state = next(s for s in loops.beats.states() if s.name == "alerts")
            return state.busy_s or 0.0

        wait_for(lambda: alerts_busy() > 1.0, timeout=30, what="the alerts loop waiting on the receiver")
        before = c.runtime.last_pass
        assert before is not None
        # The evaluator passes again (once a second) while the delivery still waits.
        wait_for(lambda: c.runtime.last_pass is not None and c.runtime.last_pass.now >= before.now
                 + timedelta(seconds=2), timeout=10, what="two more evaluator passes")
        assert alerts_busy() > 2.0
