"""The health tests reuse the engine suite's helpers (exact instants, hand edits) and the
CLI suite's runner: put both on the import path."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cli"))
