"""The `awa-tui` command's entry point. An application that embeds only the engine may
install awa-tui without the console's and the CLI's dependencies (docs/operations.md,
"Embedding the engine only"); there the command says, in one line, what to install
instead of failing with a traceback on a missing module."""

from __future__ import annotations

import sys

DISTRIBUTION = "awa-tui"
# The name at the head of a requirement string (its grammar is PEP 508's).
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"


def missing_requirements() -> list[str]:
    """The runtime requirements of the installed awa-tui (as its metadata spells them) whose
    distribution is not installed; empty when awa-tui itself is not installed (a checkout).
    Imported here, on the failure path only: every command starts through this module."""
    import importlib.metadata
    import re

    try:
        requirements = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    missing = []
    for requirement in requirements:
        if "extra ==" in requirement.partition(";")[2]:
            continue  # an optional extra's (test) requirement
        name = re.match(_NAME, requirement)
        if name is None:
            continue
        try:
            importlib.metadata.version(name.group())
        except importlib.metadata.PackageNotFoundError:
            missing.append(requirement.partition(";")[0].strip())
    return missing


def main() -> None:
    try:
        from awa_tui.cli import main as cli_main

        cli_main()
    except ModuleNotFoundError:
        missing = missing_requirements()
        if not missing:
            raise
        import shlex

        print("awa-tui: this installation has the engine only; the awa-tui command also needs: pip install "
              + " ".join(shlex.quote(r) for r in missing), file=sys.stderr)
        raise SystemExit(1) from None
