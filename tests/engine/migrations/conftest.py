"""The migration tests run the real `awa-tui` command too (the CLI suite's runner): put it on
the import path."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cli"))
