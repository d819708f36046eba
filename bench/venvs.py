"""The one way to build bench/.venv-procrastinate: Procrastinate at the version
bench/requirements-procrastinate.txt pins, in a venv of its own, never beside the product.
Used by bench/worker_throughput.py and by the forwarding tests (tests/engine/forwarding).

Rebuilt when the requirements change (the venv records the ones it was built from);
concurrent callers (pytest -n 2) wait on a lock instead of building it twice. A failure
raises with pip's reason: the tests that need it fail, they never skip.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
VENV = BENCH / ".venv-procrastinate"
REQUIREMENTS = BENCH / "requirements-procrastinate.txt"


def procrastinate_venv() -> Path:
    """The venv's python, built if missing or made from other requirements."""
    python = VENV / "bin" / "python"
    built_from = VENV / "built-from.txt"
    wanted = REQUIREMENTS.read_text()
    with open(BENCH / ".venv-procrastinate.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if python.exists() and built_from.exists() and built_from.read_text() == wanted:
            return python
        shutil.rmtree(VENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, timeout=120)
        out = subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", "-r", str(REQUIREMENTS)],
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise RuntimeError(f"could not install {REQUIREMENTS.name} into {VENV}: {out.stderr.strip()[-2000:]}")
        built_from.write_text(wanted)  # last: a half-built venv is rebuilt next time
    return python
