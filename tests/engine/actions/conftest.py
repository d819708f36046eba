"""The bulk-action tests run the CLI through its suite's runner and reuse the ownership
suite's helpers: put both on the import path (the `fleet` fixture is the engine suite's)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cli"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ownership"))
