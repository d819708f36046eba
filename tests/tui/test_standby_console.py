"""S58: the console on a hot standby (`awa-tui --read-only --dsn <standby>`): its status
bar says STANDBY with the server and the replay lag, refreshed with the rest; what the
primary writes appears once replayed; the write keys are gone, and a console that was not
started --read-only finds out from the server and says so naming it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import until
from tui_helpers import notes, ready, settled, table_keys

from awa_tui import Client
from awa_tui.tui.actions import ACTS
from awa_tui.tui.config import ConsoleConfig
from awa_tui.tui.launch import console_client, create_app

PREFIX = "sb-tui-"
MUTATION_LABELS = {a.label for a in ACTS if a.mutation}


def status_bar(app: Any) -> str:
    return str(app.main.query_one("#status-bar").render())


def footer_labels(app: Any) -> set[str]:
    return {binding.description for _, binding, _, _ in app.screen.active_bindings.values() if binding.show}


@pytest.fixture
def primary_client(standby_pair: Any) -> Iterator[Client]:
    client = Client(standby_pair.dsn(standby_pair.primary), operator="alice@ops")
    yield client
    client.close()


@pytest.fixture
def replay_paused(standby_pair: Any) -> Iterator[Any]:
    """Replay held on the standby (WAL still arrives): resumed whatever the test does."""
    with standby_pair.connect(standby_pair.standby) as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
        try:
            yield conn
        finally:
            conn.execute("SELECT pg_wal_replay_resume()")


def make_console(standby_pair: Any, *, read_only: bool) -> Any:
    client = console_client(standby_pair.dsn(standby_pair.standby), "alice@ops", read_only)
    return create_app(ConsoleConfig(client=client, refresh=0.5, db_label="standby"))


async def test_the_status_bar_says_standby_and_follows_replay(
    standby_pair: Any, primary_client: Client, replay_paused: Any
) -> None:
    """Replay is held, then released: the bar's bytes-to-replay and the panel move together."""
    where = re.escape(standby_pair.standby.where)
    app = make_console(standby_pair, read_only=True)
    try:
        async with app.run_test(size=(140, 36)) as pilot:
            await ready(pilot, app)
            # Replay is held but nothing new has arrived yet: caught up, with the age of the
            # newest change (minutes, when the session's standby has been idle).
            idle = r"(caught up · newest change \S+ old|nothing replayed yet, 0 B to replay)"
            assert re.search(rf" STANDBY  {where} · {idle}", status_bar(app)), status_bar(app)
            assert "READ-ONLY" in status_bar(app)
            primary_client.periodic(f"{PREFIX}fresh", "*/5 * * * *", "tick")
            primary_client.sync()
            # Received, not replayed: the bar counts the bytes waiting; the panel lacks the row.
            await until(pilot, lambda: replay_paused.execute(
                "SELECT pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn() AS behind").fetchone()["behind"],
                what="the write to reach the standby")
            await settled(pilot, app)
            waiting = re.search(r"(\d+(?:\.\d)?) (B|kB|MB) to replay", status_bar(app))
            assert waiting and float(waiting.group(1)) > 0, status_bar(app)
            assert f"{PREFIX}fresh" not in table_keys(app)
            replay_paused.execute("SELECT pg_wal_replay_resume()")
            standby_pair.wait_replayed()
            await settled(pilot, app)
            assert f"{PREFIX}fresh" in table_keys(app)
            assert re.search(rf" STANDBY  {where} · caught up · newest change \d+\.\ds old", status_bar(app)), \
                status_bar(app)
    finally:
        app.client.close()


async def test_read_only_console_on_the_standby_has_no_write_keys(standby_pair: Any) -> None:
    app = make_console(standby_pair, read_only=True)
    try:
        async with app.run_test(size=(140, 36)) as pilot:
            await ready(pilot, app)
            assert footer_labels(app) & MUTATION_LABELS == set()
            assert footer_labels(app)  # the footer itself is there: reading keys remain
    finally:
        app.client.close()


async def test_a_writable_console_on_the_standby_turns_read_only_naming_it(
    standby_pair: Any, primary_client: Client
) -> None:
    """Started without --read-only: the first poll finds the server in recovery; the write
    keys go, and pressing one says why in one line naming the standby."""
    primary_client.periodic(f"{PREFIX}target", "*/5 * * * *", "tick")
    primary_client.sync()
    standby_pair.wait_replayed()
    refusal = f"{standby_pair.standby.where} is a read-only standby (in recovery): writes go to the primary"
    app = make_console(standby_pair, read_only=False)
    try:
        async with app.run_test(size=(140, 36)) as pilot:
            await ready(pilot, app)
            assert app.read_only_reason == refusal
            assert " STANDBY " in status_bar(app) and "READ-ONLY" in status_bar(app)
            assert footer_labels(app) & MUTATION_LABELS == set()
            table = app.main.panel("schedules").table
            table.move_cursor(row=table.get_row_index(f"{PREFIX}target"), animate=False)
            await pilot.press("s")
            await until(pilot, lambda: notes(app), what="the refusal")
            labels = ", ".join(dict.fromkeys(a.label for a in ACTS if a.mutation and a.scope == "schedules"))
            assert notes(app) == [f"read-only console ({refusal}): {labels} are disabled here"]
    finally:
        app.client.close()
    with standby_pair.connect(standby_pair.primary) as conn:
        row = conn.execute("SELECT paused_at FROM awa.cron_jobs WHERE name = %s", (f"{PREFIX}target",)).fetchone()
    assert row is not None and row["paused_at"] is None
