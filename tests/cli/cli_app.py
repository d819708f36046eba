"""The app `awa-tui run --app cli_app:setup` loads in the CLI tests: one per-second schedule."""

from __future__ import annotations

from typing import Any


def setup(client: Any) -> None:
    client.periodic("cli.tick", "* * * * * *", "cli.tick", {"from": "cli_app"})
    client.register_handler("cli.tick", lambda job: None)


def invalid_setup(client: Any) -> None:
    client.periodic("cli.bad", "every day at noon", "cli.bad")


def broken_setup(client: Any) -> None:
    raise RuntimeError("the app's own bug")


def blocking_setup(client: Any) -> None:
    """A handler that never returns (the shutdown tests: only a second signal releases it)."""
    import threading

    client.register_handler("cli.block", lambda job: threading.Event().wait())
