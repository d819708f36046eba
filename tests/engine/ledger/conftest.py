"""The ledger's CLI tests run the real executable through the CLI suite's own runner
(tests/cli/cli_helpers.py): put it on the import path."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cli"))
