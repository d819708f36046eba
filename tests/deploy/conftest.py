"""The deployment tests run the runtime as deploy/ starts it: `awa-tui run` with the
manifest's own arguments, only the secret's path, the app and the port made local."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))

from cli_helpers import COMMAND, awa, cli_env
from helpers import wait_for

HERE = Path(__file__).resolve().parent
APP = "probe_app:setup"  # tests/deploy/probe_app.py


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env() -> dict[str, str]:
    base = cli_env()
    base["PYTHONPATH"] = os.pathsep.join([str(HERE), base["PYTHONPATH"]])
    return base


def localise(argv: list[str], *, secret: str, dsn_file: Path, port: int, app: str | None = APP) -> list[str]:
    """`argv` as it runs here: the secret's path -> `dsn_file`, port 9464 -> `port`, the
    --app value -> this suite's app. Nothing else changes."""
    out = []
    for i, arg in enumerate(argv):
        if arg == secret:
            arg = str(dsn_file)
        elif i and argv[i - 1] == "--app" and app is not None:
            arg = app
        elif arg.endswith(":9464"):
            arg = f"{arg[:-len('9464')]}{port}"
        out.append(arg)
    return out


def probe(argv: list[str]) -> tuple[int, list[str]]:
    """Run a probe's command (its first word `awa-tui`) as the container would."""
    assert argv[0] == "awa-tui"
    result = awa(*argv[1:], env=env())
    assert "Traceback" not in result.stderr + result.stdout
    return result.returncode, result.stdout.splitlines()


class Launched:
    def __init__(self, process: subprocess.Popen[str], log: Path) -> None:
        self.process = process
        self.log = log

    def stop(self) -> int:
        """SIGTERM, as a container runtime, systemd or the kubelet sends it; the exit code."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)

    def output(self) -> str:
        return self.log.read_text()


@pytest.fixture
def dsn_file(dsn: str, tmp_path: Path) -> Path:
    path = tmp_path / "dsn"
    path.write_text(dsn + "\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Callable[[list[str]], Launched]]:
    """Start `awa-tui run ...` (argv's first word `awa-tui`) in its own process; wait until
    it serves /alive as running."""
    from awa_tui.engine.errors import AwaError
    from awa_tui.engine.health.alive import fetch_alive

    started: list[Launched] = []

    def start(argv: list[str]) -> Launched:
        assert argv[:2] == ["awa-tui", "run"], argv
        addr = argv[argv.index("--metrics-addr") + 1].replace("0.0.0.0", "127.0.0.1")
        log = tmp_path / f"runtime-{len(started)}.log"
        with log.open("w") as sink:
            process = subprocess.Popen([*COMMAND, *argv[1:]], stdout=sink, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, env=env(), text=True)
        launched = Launched(process, log)
        started.append(launched)

        def running() -> bool:
            assert process.poll() is None, f"the runtime exited: {log.read_text()}"
            try:
                return fetch_alive(addr, timeout=1).state == "running"
            except AwaError:
                return False

        wait_for(running, timeout=60, interval=0.2, what=f"the runtime serving /alive on {addr}")
        return launched

    yield start
    for launched in started:
        if launched.process.poll() is None:
            launched.stop()
