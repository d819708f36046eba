"""pytest plugin of the reliability suite: the `--soak` options and the summary table.

Registered from tests/conftest.py (`pytest_plugins`), because options and end-of-run
hooks must be known before collection, and under xdist only the controller prints: each
scenario writes its line to tests/reliability/results/ and the controller gathers them.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import pytest

from .harness import RESULTS_DIR, SESSION_ENV

SUMMARY_PATH = RESULTS_DIR / "reliability-summary.json"
OUTCOME = pytest.StashKey[str]()
COLUMNS = ("scenario", "runs", "fires checked", "duplicates", "losses", "max failover s", "seconds")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("reliability")
    group.addoption("--soak", action="store_true", default=False,
                    help="Run the reliability scenarios at soak scale (--soak-factor times the CI form).")
    group.addoption("--soak-factor", type=int, default=5, metavar="N",
                    help="How many times the CI form a --soak run does (default 5).")


SCALE_ENV = "AWA_REL_SCALE"


def pytest_configure(config: pytest.Config) -> None:
    # The controller names the session; xdist workers inherit the environment.
    if not hasattr(config, "workerinput"):
        os.environ[SESSION_ENV] = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    os.environ[SCALE_ENV] = str(scale_of(config))


def soak_scale() -> int:
    """The scale where no fixture reaches (hypothesis settings at import time)."""
    return int(os.environ.get(SCALE_ENV, "1"))


def scale_of(config: pytest.Config) -> int:
    return max(1, int(config.getoption("--soak-factor"))) if config.getoption("--soak") else 1


def _collect(session: str) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(RESULTS_DIR.glob(f".{session}-*.json")):
        try:
            rows.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
        path.unlink(missing_ok=True)
    return sorted(rows, key=lambda r: r["scenario"])


def _cell(row: dict[str, Any], column: str) -> str:
    value = {
        "scenario": row["scenario"], "runs": row["runs"], "fires checked": row["fires_checked"],
        "duplicates": row["duplicates"], "losses": row["losses"],
        "max failover s": row["max_failover_s"], "seconds": row["seconds"],
    }[column]
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    session = os.environ.get(SESSION_ENV)
    rows = _collect(session) if session and RESULTS_DIR.is_dir() else []
    if not rows:
        return
    table = [[_cell(r, c) for c in COLUMNS] for r in rows]
    widths = [max(len(c), *(len(line[i]) for line in table)) for i, c in enumerate(COLUMNS)]
    write = terminalreporter.write_line
    scale = scale_of(config)
    terminalreporter.section(f"reliability summary ({f'soak x{scale}' if scale > 1 else 'CI form'})")
    write("  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True)))
    for line in table:
        write("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)))
    for r in rows:
        if r.get("notes"):
            write(f"  {r['scenario']}: {r['notes']}")
    SUMMARY_PATH.write_text(json.dumps({"scale": scale_of(config), "scenarios": rows}, indent=2, default=str) + "\n")
    write(f"written to {SUMMARY_PATH.relative_to(RESULTS_DIR.parents[2])}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    # The summary fixture marks a failed scenario's line as such.
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.stash[OUTCOME] = report.outcome
