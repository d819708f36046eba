"""S63 against a real Alertmanager (Debian's prometheus-alertmanager, started by the test;
`make test-tools` installs it): an alert sent by the deliverer is active in Alertmanager,
routed to a receiver (a real local HTTP server) as firing, then resolved by the recovery
and notified resolved."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_for
from http_receiver import Receiver

from awa_tui.engine.alerts.deliver import Deliverer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def alertmanager_binary() -> str:
    found = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    if found is None:
        raise AssertionError("Alertmanager is not installed: `make test-tools` installs it "
                             "(apt-get install -y prometheus-alertmanager)")
    return found


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[tuple[str, Receiver]]:
    """A real Alertmanager on a free port, routing every alert to a local receiver at once."""
    hook = Receiver()
    config = tmp_path / "alertmanager.yml"
    config.write_text(
        "route:\n  receiver: hook\n  group_by: ['alertname', 'schedule']\n  group_wait: 0s\n"
        "  group_interval: 1s\n  repeat_interval: 1h\n"
        f"receivers:\n  - name: hook\n    webhook_configs:\n      - url: {hook.url}/am\n        send_resolved: true\n")
    port = free_port()
    process = subprocess.Popen(
        [alertmanager_binary(), f"--config.file={config}", f"--storage.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            return False

    try:
        wait_for(ready, timeout=30, what="Alertmanager to be ready")
        yield url, hook
    finally:
        process.terminate()
        process.wait(timeout=10)
        hook.close()


def active(url: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{url}/api/v2/alerts", timeout=5) as response:
        return list(json.loads(response.read()))


def notified(hook: Receiver) -> list[tuple[str, str]]:
    return [(a["status"], a["labels"]["schedule"]) for body in hook.bodies() for a in body["alerts"]]


def test_s63_a_real_alertmanager_fires_and_resolves_the_alert(
        client: Any, conn: psycopg.Connection[Any], alertmanager: tuple[str, Receiver]) -> None:
    url, hook = alertmanager
    client.periodic("nightly", "0 2 * * *", "k", queue="reports")
    client.sync()
    client.actions.add_alert_sink("am", "alertmanager", url=url)
    conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health, reason) "
                 "VALUES ('nightly', now(), 'ok', 'failing', 'the last job failed')")
    done = Deliverer().round(conn)
    assert [(s.sink, s.delivered, s.error) for s in done.sinks] == [("am", True, None)]
    [alert] = active(url)
    assert alert["labels"] == {"alertname": "AwaScheduleFailing", "schedule": "nightly", "queue": "reports",
                               "severity": "critical", "source": "awa-tui"}  # no owner: no label
    assert alert["status"]["state"] == "active"
    assert alert["annotations"]["summary"] == "schedule nightly is failing: the last job failed"
    wait_for(lambda: ("firing", "nightly") in notified(hook), timeout=30, what="Alertmanager to notify firing")
    conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health) "
                 "VALUES ('nightly', now(), 'failing', 'ok')")
    Deliverer().round(conn)
    wait_for(lambda: active(url) == [], timeout=30, what="the alert to be resolved in Alertmanager")
    wait_for(lambda: ("resolved", "nightly") in notified(hook), timeout=30, what="Alertmanager to notify resolved")
    assert notified(hook)[0] == ("firing", "nightly")


def test_s70_a_real_alertmanager_fires_and_resolves_nobody_leading(
        client: Any, conn: psycopg.Connection[Any], alertmanager: tuple[str, Receiver]) -> None:
    url, hook = alertmanager
    client.actions.add_alert_sink("am", "alertmanager", url=url)
    conn.execute("INSERT INTO awa.fleet_transitions (at, from_state, to_state, reason) "
                 "VALUES (now(), 'ok', 'no_leader', 'no runtime holds the leader lock')")
    assert [(s.sink, s.delivered) for s in Deliverer().round(conn).sinks] == [("am", True)]
    [alert] = active(url)
    assert alert["labels"] == {"alertname": "AwaNoLeader", "severity": "critical", "source": "awa-tui"}
    assert alert["annotations"]["summary"] == "awa-tui fleet: no leader: no runtime holds the leader lock"
    kinds = lambda: [(a["status"], a["labels"]["alertname"]) for b in hook.bodies() for a in b["alerts"]]  # noqa: E731
    wait_for(lambda: ("firing", "AwaNoLeader") in kinds(), timeout=30, what="Alertmanager to notify firing")
    conn.execute("INSERT INTO awa.fleet_transitions (at, from_state, to_state, reason) "
                 "VALUES (now(), 'no_leader', 'ok', 'app-1 pid 7 leads (term 2) and passes')")
    Deliverer().round(conn)
    wait_for(lambda: active(url) == [], timeout=30, what="the alert to be resolved in Alertmanager")
    wait_for(lambda: ("resolved", "AwaNoLeader") in kinds(), timeout=30, what="Alertmanager to notify resolved")
