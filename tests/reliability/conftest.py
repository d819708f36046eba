"""Fixtures of the reliability suite (the options and summary live in plugin.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import Summary, record
from .plugin import OUTCOME, scale_of


@pytest.fixture
def scale(request: pytest.FixtureRequest) -> int:
    """1 in the CI form; the soak factor under --soak."""
    return scale_of(request.config)


@pytest.fixture
def summary(request: pytest.FixtureRequest) -> Iterator[Summary]:
    """The scenario's line of the summary table, written when the test passes or fails."""
    line = Summary(scenario=request.node.name.removeprefix("test_"))
    started = time.monotonic()
    yield line
    line.seconds = line.seconds or time.monotonic() - started
    outcome = request.node.stash.get(OUTCOME, "error")
    if outcome != "passed":
        line.notes = f"{outcome.upper()} {line.notes}".strip()
    record(line)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    path = tmp_path / "logs"
    path.mkdir()
    return path
