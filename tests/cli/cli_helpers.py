"""Run the real `awa-tui` executable in a subprocess, as an operator's shell would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
_SCRIPT = Path(sys.executable).with_name("awa-tui")
# The installed console script when there is one (it is what users run), else the module.
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "awa_tui"]
# Variables that would point the CLI at another database than the one a test names.
_DB_VARIABLES = ("AWA_DATABASE_URL", "DATABASE_URL", "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE",
                 "PGUSER", "PGSERVICE", "PGPASSWORD")


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DB_VARIABLES}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    env["COLUMNS"] = "200"  # tables are not squeezed to 80 columns when captured
    env.update(extra)
    return env


def awa(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *args], capture_output=True, text=True, env=env or cli_env(), timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def awa_many(
    commands: Sequence[Sequence[str]], env: dict[str, str] | None = None
) -> list[subprocess.CompletedProcess[str]]:
    """Several independent invocations at once (each is mostly interpreter start-up)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda args: awa(*args, env=env), commands))


def awa_json(*args: str) -> Any:
    """Run a command with --json; it must succeed, print nothing on stderr, and parse."""
    result = awa(*args, "--json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return json.loads(result.stdout)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The single `error: ...` line of a failed command (and nothing else anywhere)."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


def table(text: str) -> list[dict[str, str]]:
    """The rows of the first plain-text table in `text` (awa_tui/cli/table.py: a header line,
    a rule of dashes per column, then a line per row until the text ends or a line is not
    a row), each as {header: cell}. Columns are cut where the rule's dash runs start, so
    the cells must be single-width characters."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if i and line and set(line) <= {"-", " "})
    starts = [i for i, ch in enumerate(lines[rule]) if ch == "-" and (i == 0 or lines[rule][i - 1] == " ")]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))

    def cells(line: str) -> list[str]:
        return [line[start:end].rstrip(" ") if end is not None else line[start:] for start, end in bounds]

    headers = cells(lines[rule - 1])
    rows = []
    for line in lines[rule + 1:]:
        # A row's padding leaves the gap before each column blank; any other line ends the table.
        if not line or any(line[start - 2:start].strip() for start in starts[1:] if start <= len(line)):
            break
        rows.append(dict(zip(headers, cells(line), strict=True)))
    return rows

