"""Console test fixtures: a seeded real database and the console built by the same
factory the CLI uses (`create_app`), with a fixed clock and a pinned database label."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, NamedTuple

import pytest
from lease_seed import leader_lock_held
from textual.pilot import Pilot
from tui_helpers import ready
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


class Console(NamedTuple):
    """A console app under a pilot: `app, pilot = console`."""

    app: Any
    pilot: Pilot[Any]


@pytest.fixture
async def console(console_factory: Callable[..., Any], request: pytest.FixtureRequest) -> AsyncIterator[Console]:
    """The console on the seeded database, running at 120x36 with its first data on screen
    and no toasts: ready for keys. Other settings: `@pytest.mark.console(size=(80, 24),
    read_only=True, ...)` (size for the terminal, the rest for `console_factory`)."""
    marker = request.node.get_closest_marker("console")
    settings = dict(marker.kwargs) if marker else {}
    size = settings.pop("size", (120, 36))
    app = console_factory(**settings)
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        yield Console(app, pilot)
        # What the test's last key queued (a screen it pushed mounting its header, whose
        # title watcher runs after mount) is handled before the app is torn down under it.
        await pilot.pause()
