"""The alert tests reuse the health suite's steps (a schedule at an exact creation instant)
and the CLI suite's runner: put both on the import path."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "health"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cli"))
