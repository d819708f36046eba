"""Running what deploy/ runs: `awa-tui run` with a manifest's own arguments, only the
secret's path, the app and the port made local, and its probes as the container would."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))

from cli_helpers import COMMAND as COMMAND
from cli_helpers import awa, cli_env

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


