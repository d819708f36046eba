"""`awa-tui check --alive` and `--registered`, the probes of one runtime (a container's
liveness and readiness), through the real executable against a real runtime and a real
Postgres. A stuck loop is made by holding one step of the runtime's reporter on an event
(a fault in the runtime's own loop, released afterwards), never by faking the answer."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from cli_helpers import awa, cli_env
from helpers import wait_for

from awa_tui import Client
from awa_tui.engine.health.models import LoopState, RuntimeAlive
from awa_tui.engine.runtime.alive import alive_problems

# Where no database answers: a check that opened one would fail (exit 3), not pass.
NO_DATABASE = "postgresql://nobody@127.0.0.1:1/nothing?connect_timeout=2"
LOOPS = ["sync", "reporter", "leader", "evaluator", "duties", "alerts", "worker"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check(*args: str, env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    result = awa("check", *args, env=env)
    assert "Traceback" not in result.stderr + result.stdout
    return result.returncode, result.stdout.splitlines()


class Hold:
    """Holds the runtime's reporter inside its step while armed: a wedged call."""

    def __init__(self, client: Client) -> None:
        self.armed = threading.Event()
        self.release = threading.Event()
        self.entered = threading.Event()
        self._snapshot = client.runtime.snapshot

    def __call__(self, **kwargs: Any) -> Any:
        if self.armed.is_set():
            self.entered.set()
            self.release.wait(60)
        return self._snapshot(**kwargs)


@pytest.fixture
def runtime(dsn: str) -> Iterator[tuple[Client, int, Hold]]:
    """A real runtime of this process (leading, with a worker), its /metrics on a free port;
    its reporter steps every second so that a held step shows at once."""
    c = Client(dsn, operator="tester@test", snapshot_interval=timedelta(seconds=1))
    c.periodic("nightly", "0 3 * * *", "test.job")
    c.register_handler("test.job", lambda job: None)
    hold = Hold(c)
    c.runtime.snapshot = hold  # type: ignore[method-assign]
    port = c.serve_metrics("127.0.0.1:0").bound_port
    c.start()
    # Every loop has finished a step but sync, whose first comes after a minute.
    wait_for(lambda: all(loop.since_step_s is not None for loop in c.runtime.alive().loops if loop.name != "sync"),
             timeout=30, what="a step of every loop")
    yield c, port, hold
    hold.release.set()
    c.close()


def test_alive_is_ok_for_a_running_runtime_and_reads_no_database(runtime: Any) -> None:
    c, port, _ = runtime
    assert [loop.name for loop in c.runtime.alive().loops] == LOOPS
    code, lines = check("--alive", f"127.0.0.1:{port}", env=cli_env(AWA_DATABASE_URL=NO_DATABASE))
    assert (code, lines) == (0, [f"OK: runtime {socket.gethostname()}:{c.identity.pid} running, 7 loops, none stuck"])


def test_alive_finds_a_stuck_loop_and_ok_again_once_it_moves(runtime: Any) -> None:
    c, port, hold = runtime
    addr = f"127.0.0.1:{port}"
    assert check("--alive", addr, "--stuck-after", "1")[0] == 0  # the control: nothing held yet
    hold.armed.set()
    assert hold.entered.wait(10), "the reporter never entered a held step"
    wait_for(lambda: (next(loop.busy_s for loop in c.runtime.alive().loops if loop.name == "reporter") or 0) > 1.5,
             timeout=10, what="the reporter held for 1.5 s")
    code, lines = check("--alive", addr, "--stuck-after", "1")
    assert code == 2
    assert len(lines) == 2 and lines[1] == "CRITICAL: 1 problem(s)"
    assert re.fullmatch(r"CRITICAL loop reporter stuck: inside one step for \d+ s \(more than 1 s\)", lines[0])
    # The default bound (120 s) tolerates the same step: a slow step is not a stuck one.
    assert check("--alive", addr)[0] == 0
    hold.armed.clear()
    hold.release.set()
    wait_for(lambda: next(loop.busy_s for loop in c.runtime.alive().loops if loop.name == "reporter") is None,
             timeout=10, what="the reporter's held step to end")
    assert check("--alive", addr, "--stuck-after", "1")[0] == 0


def test_alive_with_nothing_listening_is_critical() -> None:
    port = free_port()
    code, lines = check("--alive", f"127.0.0.1:{port}")
    assert (code, lines) == (2, [f"CRITICAL no runtime answers at http://127.0.0.1:{port}/alive: "
                                 "[Errno 111] Connection refused", "CRITICAL: 1 problem(s)"])


def test_a_stopping_runtime_and_an_ended_loop_are_not_alive() -> None:
    def loops(**changes: Any) -> list[LoopState]:
        base = {"running": True, "busy_s": None, "since_step_s": 0.5, "bounded": True}
        return [LoopState(name="evaluator", **{**base, **changes})]

    alive = RuntimeAlive(instance_id="x", hostname="h", pid=1, state="running", loops=loops())
    assert alive_problems(alive) == []
    assert alive_problems(RuntimeAlive("x", "h", 1, "stopping", loops())) == ["the runtime is stopping"]
    assert alive_problems(RuntimeAlive("x", "h", 1, "running", loops(running=False))) == [
        "loop evaluator has ended"]
    # The worker's step runs jobs: an hour inside one is a long job, not a stuck loop.
    worker = [LoopState("worker", running=True, busy_s=3600.0, since_step_s=None, bounded=False)]
    assert alive_problems(RuntimeAlive("x", "h", 1, "running", worker)) == []
    assert alive_problems(RuntimeAlive("x", "h", 1, "running", loops(busy_s=121.0))) == [
        "loop evaluator stuck: inside one step for 121 s (more than 120 s)"]


def test_registered_with_a_live_runtime_then_none(runtime: Any, dsn: str, conn: psycopg.Connection[Any]) -> None:
    c, _, _ = runtime
    host = socket.gethostname()
    code, lines = check("--registered", "--dsn", dsn)
    assert (code, lines) == (0, [f"OK: registered as {c.identity.instance_id} on {host} (pid {c.identity.pid})"])
    c.close()  # a clean stop ends its snapshot at once (S21)
    code, lines = check("--registered", "--dsn", dsn)
    assert (code, lines) == (2, [f"CRITICAL no runtime on host {host} has a fresh snapshot (not started, "
                                 "stopped, or not reporting)", "CRITICAL: 1 problem(s)"])


def test_registered_ignores_a_silent_runtime_and_other_hosts(dsn: str, conn: psycopg.Connection[Any]) -> None:
    host = socket.gethostname()
    insert = ("INSERT INTO awa.runtime_instances (instance_id, hostname, pid, version, started_at, last_seen_at, "
              "snapshot_interval) VALUES (gen_random_uuid(), %s, 7, '0', now(), now() - %s::interval, '10 s')")
    conn.execute(insert, (host, "31 seconds"))  # killed with -9 half a minute ago: stale
    conn.execute(insert, ("another-pod", "0 seconds"))  # alive, but not on this host
    assert check("--registered", "--dsn", dsn)[0] == 2
    # Within the freshness window (3 x 10 s), with room for a slow machine to start the command.
    conn.execute(insert, (host, "20 seconds"))
    code, lines = check("--registered", "--dsn", dsn)
    assert code == 0 and re.fullmatch(rf"OK: registered as [0-9a-f-]{{36}} on {re.escape(host)} \(pid 7\)", lines[0])


def test_registered_cannot_tell_without_a_database_or_a_schema(empty_dsn: str) -> None:
    code, lines = check("--registered", "--dsn", empty_dsn)
    assert (code, lines) == (3, ["UNKNOWN: the database has no awa schema; run `awa-tui migrate`"])
    code, lines = check("--registered", "--dsn", NO_DATABASE)
    assert code == 3 and lines[0].startswith("UNKNOWN: ") and "127.0.0.1" in lines[0]


@pytest.mark.parametrize(("args", "message"), [
    (["--alive", "127.0.0.1:9464", "--owner", "billing"],
     "--alive and --registered check one runtime, not schedules: drop --owner, --schedule and --tag "
     "(or run a second check)"),
    (["--stuck-after", "30"], "--stuck-after applies only with --alive"),
    (["--registered", "--stuck-after", "30"], "--stuck-after applies only with --alive"),
    (["--alive", "127.0.0.1:9464", "--stuck-after", "0"], "--stuck-after: must be between 1 and 86400 seconds, got 0"),
    (["--alive", "localhost"], "--alive: expected HOST:PORT such as 127.0.0.1:9464, got 'localhost'"),
])
def test_probe_misuse_cannot_tell_in_one_line(args: list[str], message: str) -> None:
    result = awa("check", *args, env=cli_env(AWA_DATABASE_URL=NO_DATABASE))
    assert (result.returncode, result.stdout, result.stderr) == (3, f"UNKNOWN: {message}\n", f"error: {message}\n")
