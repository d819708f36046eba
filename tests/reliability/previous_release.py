"""The previous release (the commit this release's work started from), built once from git
history into .cache/ (git-ignored): a worktree of that commit and a venv of its own with its
dependencies from the package index. Reruns reuse it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PREVIOUS = "c26b606"  # awa-tui 0.1.0, schema v018
HOME = ROOT / ".cache" / f"previous-{PREVIOUS}"


def previous_release() -> Path:
    """The previous release's `awa-tui` executable, built on first use."""
    command = HOME / ".venv" / "bin" / "awa-tui"
    if command.exists():
        return command
    if not HOME.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--force", "--detach", str(HOME), PREVIOUS],
                       check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "venv", str(HOME / ".venv")], check=True)
    subprocess.run([str(HOME / ".venv" / "bin" / "pip"), "install", "-q", str(HOME)], check=True)
    return command
