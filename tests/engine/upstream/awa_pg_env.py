"""The upstream Awa engine (awa-pg from PyPI) for the upstream-mode tests.

awa-pg is never a dependency of awa-tui: it lives in its own venv, .venv-awa-pg at the root,
created once (a stamp file records the version installed) and driven as a subprocess
through upstream_side.py. If it cannot be installed, the tests that need it FAIL with
the reason: a missing tool is not a reason to skip.

    python tests/engine/upstream/awa_pg_env.py        # create the venv by hand (optional)

AWA_PG_VERSION overrides the pinned version (a venv per version) to try another release.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PINNED_VERSION = "0.6.9"
# Outside tests/: the test tree holds only our own code (linted, searched for sleeps).
ROOT = Path(__file__).resolve().parents[3]
SIDE_SCRIPT = Path(__file__).with_name("upstream_side.py")
INSTALL_TIMEOUT_S = 600


class AwaPgUnavailable(RuntimeError):
    """awa-pg could not be installed or started; the message says why, in one line."""


def wanted_version() -> str:
    return os.environ.get("AWA_PG_VERSION") or PINNED_VERSION


def venv_dir(version: str) -> Path:
    suffix = "" if version == PINNED_VERSION else f"-{version}"
    return ROOT / f".venv-awa-pg{suffix}"


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"


@contextmanager
def _install_lock(path: Path) -> Iterator[None]:
    """Serialise installers (two xdist workers may both find no stamp)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_awa_pg(version: str | None = None) -> Path:
    """The python of a venv holding awa-pg==version, installing it once; else AwaPgUnavailable."""
    version = version or wanted_version()
    venv = venv_dir(version)
    python = venv / "bin" / "python"
    stamp = venv / ".awa-pg-installed"
    if python.exists() and stamp.exists() and stamp.read_text().strip() == version:
        return python
    with _install_lock(ROOT / f".venv-awa-pg-{version}.lock"):
        if python.exists() and stamp.exists() and stamp.read_text().strip() == version:
            return python  # another worker installed it while we waited
        try:
            if not python.exists():
                made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True,
                                      timeout=120)
                if made.returncode != 0:
                    raise AwaPgUnavailable(f"cannot create {venv}: {_last_line(made.stderr or made.stdout)}")
            pip = subprocess.run(
                [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", f"awa-pg=={version}"],
                capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
            )
            if pip.returncode != 0:
                raise AwaPgUnavailable(
                    f"pip install awa-pg=={version} into {venv} failed: {_last_line(pip.stderr or pip.stdout)}"
                )
            probe = subprocess.run([str(python), "-c", "import awa"], capture_output=True, text=True, timeout=60)
            if probe.returncode != 0:
                raise AwaPgUnavailable(f"awa-pg=={version} does not import: {_last_line(probe.stderr)}")
        except (OSError, subprocess.SubprocessError) as exc:
            raise AwaPgUnavailable(f"cannot set up {venv}: {exc}") from None
        stamp.write_text(version + "\n")
    return python


def installed_version(python: Path) -> str:
    out = subprocess.run([str(python), "-m", "pip", "show", "awa-pg"], capture_output=True, text=True, timeout=60)
    return next((ln.split(":", 1)[1].strip() for ln in out.stdout.splitlines() if ln.startswith("Version:")), "?")


def migrate(python: Path, url: str) -> None:
    """Run upstream's own migrator on `url` (awa.AsyncClient.migrate)."""
    done = subprocess.run([str(python), str(SIDE_SCRIPT), "migrate", url], capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise AwaPgUnavailable(f"awa-pg migrate failed: {_last_line(done.stdout + done.stderr)}")


class UpstreamProcess:
    """An upstream runtime (leader + worker) in a subprocess; stdout is one JSON event a line."""

    def __init__(self, python: Path, url: str, spec: dict[str, Any]) -> None:
        self.events: list[dict[str, Any]] = []
        self.stderr_tail: list[str] = []
        self.proc = subprocess.Popen(
            [str(python), str(SIDE_SCRIPT), "run", url, json.dumps(spec)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self._readers = [
            threading.Thread(target=self._read_events, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_events(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                self.events.append({"event": "output", "text": line.rstrip()})

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_tail = [*self.stderr_tail[-19:], line.rstrip()]

    def event(self, name: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e.get("event") == name), None)

    def wait_started(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        pause = threading.Event()
        while time.monotonic() < deadline:
            if self.event("started"):
                return
            error = self.event("error")
            if error or self.proc.poll() is not None:
                reason = error["message"] if error else f"exited with {self.proc.returncode}"
                raise AwaPgUnavailable(f"awa-pg runtime did not start: {reason}; stderr: {self.stderr_tail[-3:]}")
            pause.wait(0.05)
        raise AwaPgUnavailable(f"awa-pg runtime did not start within {timeout}s; stderr: {self.stderr_tail[-3:]}")

    def stop(self) -> None:
        """Close stdin (the side script shuts down cleanly on EOF); kill if it hangs."""
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for reader in self._readers:
            reader.join(5)


if __name__ == "__main__":
    try:
        where = ensure_awa_pg()
    except AwaPgUnavailable as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
    print(f"{where} (awa-pg {installed_version(where)})")
