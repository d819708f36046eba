"""The fixtures of the deployment tests: a DSN file as a secret would mount it, and a
runtime started as deploy/ starts it (deploy_run.py)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from deploy_run import COMMAND, Launched, env
from helpers import wait_for


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
    from awa_tui.engine.core.errors import AwaError
    from awa_tui.engine.runtime.alive import fetch_alive

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
