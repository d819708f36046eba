"""`awa-tui --version` / `-V`, and `-h` beside `--help` at every level."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest
from cli_helpers import awa, cli_env

import awa_tui

MIGRATIONS = Path(awa_tui.__file__).parent / "engine" / "migrations"


def test_version_names_the_release_the_schema_and_the_protocol() -> None:
    newest = max(int(p.name[1:4]) for p in MIGRATIONS.glob("v[0-9][0-9][0-9]_*.sql"))
    expected = f"awa-tui {awa_tui.__version__} (schema version {newest}, runtime protocol 4)\n"  # 4 since v031
    for flag in ("--version", "-V"):
        result = awa(flag)
        assert (result.returncode, result.stdout, result.stderr) == (0, expected, "")


def test_the_package_metadata_carries_the_same_version() -> None:
    # One source: pyproject.toml reads awa_tui.__version__ (the installed metadata says so).
    assert importlib.metadata.version("awa-tui") == awa_tui.__version__
    assert awa_tui.__version__.count(".") == 2 and all(p.isdigit() for p in awa_tui.__version__.split("."))


@pytest.mark.parametrize("path", [(), ("cron",), ("cron", "list"), ("run",), ("db", "status"), ("migrate",),
                                  ("runtime", "list"), ("calendar",)])
def test_dash_h_is_help_at_every_level(path: tuple[str, ...]) -> None:
    env = cli_env(COLUMNS="120")
    short, long = awa(*path, "-h", env=env), awa(*path, "--help", env=env)
    assert short.returncode == long.returncode == 0, short.stderr
    assert short.stdout == long.stdout and "Usage: awa-tui" in short.stdout
    assert "-h" in short.stdout  # the help lists it
