"""Console test fixtures: a seeded real database and the console built by the same
factory the CLI uses (`create_app`), with a fixed clock and a pinned database label."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from lease_seed import leader_lock_held
from tui_seed import DB_LABEL, NOW, OPERATOR, RUNTIMES, seed

from awa_tui.engine.client import Client
from awa_tui.tui.config import ConsoleConfig
from awa_tui.tui.launch import console_client, create_app


@pytest.fixture
def seeded(dsn: str, conn: Any) -> Iterator[str]:
    seed(conn)
    with leader_lock_held(dsn, RUNTIMES[0]["instance_id"], NOW):  # app-1 leads (pg_locks)
        yield dsn


@pytest.fixture
def console_factory(seeded: str) -> Iterator[Callable[..., Any]]:
    """Build console apps on the seeded database; their clients are closed afterwards."""
    clients: list[Client] = []

    def make(read_only: bool = False, refresh: float = 2.0, dsn: str | None = None, **config: Any) -> Any:
        client = console_client(dsn or seeded, OPERATOR, read_only)
        clients.append(client)
        settings = {"db_label": DB_LABEL, "clock": lambda: NOW, "refresh": refresh, **config}
        return create_app(ConsoleConfig(client=client, **settings))

    yield make
    for client in clients:
        client.close()
