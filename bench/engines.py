"""The two engines behind one small interface: start N registered schedules, stop, CPU.

awa-tui runs in this process (its loops are threads), or, for cold starts, as its own
CLI in a subprocess (`python -m awa_tui run`, OursProcess) so that interpreter start and
imports count as they do for awa-pg; awa-pg always runs in its own venv as a subprocess
(bench/awa_pg_side.py) because it must never be installed beside the product.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from bench.common import BENCH_DIR, BENCH_KIND, BENCH_QUEUE, as_url, connect
from bench.engine_proc import ENV_EXPR, ENV_N, ENV_POLICY

UPSTREAM_VENV = BENCH_DIR / ".venv-awa-pg"
UPSTREAM_REQUIREMENTS = BENCH_DIR / "requirements-awa-pg.txt"
SIDE_SCRIPT = BENCH_DIR / "awa_pg_side.py"
INSTALL_TIMEOUT_S = 300


class Running(Protocol):
    def stop(self) -> None: ...
    def cpu_seconds(self) -> float: ...


class Engine(Protocol):
    name: str

    def migrate(self, dsn: str) -> None: ...
    def start(self, dsn: str, n: int, expr: str, policy: str, max_seconds: float) -> Running: ...


class Spawned(Running, Protocol):
    def exited(self) -> str | None: ...


class Spawner(Protocol):
    """An engine started as a process and not waited for: cold starts time from the spawn."""

    name: str

    def migrate(self, dsn: str) -> None: ...
    def spawn(self, dsn: str, n: int, expr: str, policy: str, max_seconds: float) -> Spawned: ...


# --- awa-tui -------------------------------------------------------------------------------------


@dataclass
class OursRunning:
    client: Any
    register_s: float
    start_s: float

    def stop(self) -> None:
        self.client.close()

    def cpu_seconds(self) -> float:
        return time.process_time()


class Ours:
    name = "ours"

    def __init__(self, forward_other_kind: bool = False) -> None:
        self.forward_other_kind = forward_other_kind

    def migrate(self, dsn: str) -> None:
        from awa_tui.engine.migrations import migrate

        migrate(dsn)
        if self.forward_other_kind:  # `bench.run --forward-other-kind`: its trigger's WHEN is false for every fire
            from awa_tui.engine.actions import forward

            script = forward.install_sql(forward.forward("forwarded.elsewhere", "some_task"))
            with connect(dsn) as conn:
                conn.execute(script.removeprefix("BEGIN;\n").removesuffix("COMMIT;\n"))  # type: ignore[arg-type]

    def register(self, dsn: str, n: int, expr: str, policy: str) -> Any:
        from awa_tui import Client

        client = Client(dsn, application_name="bench-ours", operator="bench")
        for i in range(1, n + 1):
            client.periodic(f"bench-{i:06d}", expr, BENCH_KIND, None, queue=BENCH_QUEUE, missed_fire_policy=policy)
        return client

    def start(self, dsn: str, n: int, expr: str, policy: str, max_seconds: float) -> OursRunning:
        from awa_tui.engine.runtime.heap import registered_then_frozen

        # As `awa-tui run` registers: the collector off, then the heap frozen. Here that also
        # freezes what earlier scenarios left in this process (the cron caches of 100k
        # distinct expressions: a full collection of them took 0.45 s, inside the pass).
        began = time.perf_counter()
        client, _ = registered_then_frozen(lambda: self.register(dsn, n, expr, policy))
        registered = time.perf_counter()
        client.start(run_worker=False)  # migrate check, sync, then the loops
        return OursRunning(client, registered - began, time.perf_counter() - registered)


def _proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def _stop_process(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class OursProcRunning:
    """`python -m awa_tui run` in a subprocess; its stderr (the run log) goes to a temp file."""

    proc: subprocess.Popen[bytes]
    log: IO[bytes]
    _last_cpu: float = 0.0

    def cpu_seconds(self) -> float:
        try:
            self._last_cpu = _proc_cpu_seconds(self.proc.pid)
        except (OSError, IndexError, ValueError):
            pass  # exited: keep the last reading
        return self._last_cpu

    def exited(self) -> str | None:
        """Why the runtime is gone (exit status and the last log line), or None if it runs."""
        code = self.proc.poll()
        if code is None:
            return None
        self.log.seek(0)
        tail = self.log.read().decode(errors="replace").strip().splitlines()[-1:]
        return f"awa-tui run exited with status {code}: {' '.join(tail)[:300]!r}"

    def stop(self) -> None:
        _stop_process(self.proc)
        self.log.close()


class OursProcess:
    """awa-tui through its own CLI, `python -m awa_tui run --app bench.engine_proc:setup`."""

    name = "ours"

    def migrate(self, dsn: str) -> None:
        Ours().migrate(dsn)

    def spawn(self, dsn: str, n: int, expr: str, policy: str, max_seconds: float) -> OursProcRunning:
        # max_seconds is the caller's business: the runtime runs until stop() sends SIGTERM.
        env = os.environ | {"AWA_DATABASE_URL": dsn, ENV_N: str(n), ENV_EXPR: expr, ENV_POLICY: policy}
        log = tempfile.TemporaryFile()  # closed by OursProcRunning.stop
        proc = subprocess.Popen([sys.executable, "-m", "awa_tui", "run", "--app", "bench.engine_proc:setup",
                                 "--operator", "bench"], cwd=BENCH_DIR.parent, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        return OursProcRunning(proc, log)


# --- awa-pg (upstream) ------------------------------------------------------------------------


@dataclass
class UpstreamRunning:
    proc: subprocess.Popen[str]
    events: list[dict[str, Any]] = field(default_factory=list)
    _last_cpu: float = 0.0

    def __post_init__(self) -> None:
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                self.events.append({"event": "output", "text": line.rstrip()})

    def event(self, name: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e.get("event") == name), None)

    def wait_event(self, name: str, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        pause = threading.Event()
        while time.monotonic() < deadline:
            found = self.event(name) or self.event("error")
            if found or self.proc.poll() is not None:
                return self.event(name) or self.event("error")
            pause.wait(0.05)
        return None

    def cpu_seconds(self) -> float:
        try:
            self._last_cpu = _proc_cpu_seconds(self.proc.pid)
        except (OSError, IndexError, ValueError):
            pass  # exited: keep the last reading
        return self._last_cpu

    def exited(self) -> str | None:
        """Why awa-pg is gone (exit status, its error event), or None if it runs."""
        code = self.proc.poll()
        if code is None:
            return None
        return f"awa-pg exited with status {code}: {self.event('error')}"

    def stop(self) -> None:
        _stop_process(self.proc)
        self._reader.join(2)


class Upstream:
    name = "upstream"

    def __init__(self) -> None:
        self.python = UPSTREAM_VENV / "bin" / "python"

    def ensure_installed(self) -> str | None:
        """Create bench/.venv-awa-pg with awa-pg once. Returns why it is unusable, or None."""
        try:
            if not self.python.exists():
                subprocess.run([sys.executable, "-m", "venv", str(UPSTREAM_VENV)], check=True,
                               capture_output=True, timeout=120)
            probe = subprocess.run([str(self.python), "-c", "import awa"], capture_output=True, timeout=60)
            if probe.returncode != 0:
                pip = subprocess.run(
                    [str(self.python), "-m", "pip", "install", "-q", "-r", str(UPSTREAM_REQUIREMENTS)],
                    capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                )
                if pip.returncode != 0:
                    tail = (pip.stderr or pip.stdout).strip().splitlines()[-1:]
                    return f"pip install awa-pg failed: {' '.join(tail)}"
                probe = subprocess.run([str(self.python), "-c", "import awa"], capture_output=True, text=True,
                                       timeout=60)
                if probe.returncode != 0:
                    return f"awa-pg does not import: {probe.stderr.strip().splitlines()[-1:]}"
        except (OSError, subprocess.SubprocessError) as exc:
            return f"cannot set up bench/.venv-awa-pg: {exc}"
        return None

    def version(self) -> str:
        out = subprocess.run([str(self.python), "-m", "pip", "show", "awa-pg"], capture_output=True, text=True)
        return next((ln.split(":", 1)[1].strip() for ln in out.stdout.splitlines() if ln.startswith("Version")),
                    "?")

    def _spawn(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([str(self.python), str(SIDE_SCRIPT), *args], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, stdin=subprocess.DEVNULL)

    def migrate(self, dsn: str) -> None:
        proc = subprocess.run([str(self.python), str(SIDE_SCRIPT), "migrate", as_url(dsn)], capture_output=True,
                              text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"awa-pg migrate failed: {proc.stdout.strip()[-300:]}")

    def spawn(self, dsn: str, n: int, expr: str, policy: str, max_seconds: float) -> UpstreamRunning:
        proc = self._spawn("run", as_url(dsn), "--n", str(n), "--expr", expr, "--policy", policy,
                           "--seconds", str(max_seconds))
        return UpstreamRunning(proc)

    def start(self, dsn: str, n: int, expr: str, policy: str, max_seconds: float) -> UpstreamRunning:
        running = self.spawn(dsn, n, expr, policy, max_seconds)
        started = running.wait_event("started", timeout=120)
        if started is None or started.get("event") == "error":
            running.stop()
            raise RuntimeError(f"awa-pg did not start: {started}")
        return running
