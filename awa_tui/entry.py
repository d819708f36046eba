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


def may_skip_teardown() -> bool:
    """Whether this process may end without the interpreter's teardown (freeing every module
    and object: 30-60 ms of an operator's 300 ms command): not when an app's code is loaded
    (its exit handlers, an exporter flushing spans, must run) nor while a thread that is
    not a daemon still runs (the interpreter would wait for it)."""
    import threading

    bootstrap = sys.modules.get("awa_tui.bootstrap")
    if bootstrap is not None and bootstrap.loaded_apps:
        return False
    main_thread = threading.main_thread()
    return all(thread.daemon or thread is main_thread for thread in threading.enumerate())


def _end(done: SystemExit) -> None:
    """End a finished command at once with its exit status, its output flushed and its log
    handlers closed; a stream that cannot be flushed (a closed pipe) leaves the ending to
    the interpreter, which reports it as it always has."""
    import os

    code = done.code
    if code is not None and not isinstance(code, int):
        return  # a message to print: the interpreter's own way
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.shutdown()
    os._exit(code or 0)


def main() -> None:
    try:
        from awa_tui.cli import main as cli_main

        cli_main()
    except SystemExit as done:
        if may_skip_teardown():
            _end(done)
        raise
    except ModuleNotFoundError:
        missing = missing_requirements()
        if not missing:
            raise
        import shlex

        print("awa-tui: this installation has the engine only; the awa-tui command also needs: pip install "
              + " ".join(shlex.quote(r) for r in missing), file=sys.stderr)
        raise SystemExit(1) from None
