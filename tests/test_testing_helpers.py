"""awa_tui.testing: a throwaway database per test from a migrated template, and `run_due`,
one step of the scheduler and the worker at an instant the test chooses."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from awa_tui import Client, Job
from awa_tui.testing import Template, run_due


@pytest.fixture(scope="module")
def awa_template(pg_admin_dsn: str) -> Iterator[Template]:
    with Template(pg_admin_dsn) as template:
        yield template


def test_each_database_is_a_fresh_migrated_copy_dropped_after(awa_template: Template, pg_admin_dsn: str) -> None:
    with awa_template.database() as first, awa_template.database() as second:
        assert first != second
        for dsn in (first, second):
            with psycopg.connect(dsn) as conn:
                assert conn.execute("SELECT count(*) FROM awa.jobs").fetchone() == (0,)
        name = psycopg.conninfo.conninfo_to_dict(first)["dbname"]
    with psycopg.connect(pg_admin_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM pg_database WHERE datname = %s", (name,)).fetchone() == (0,)


def test_run_due_fires_and_runs_at_the_instant_given(awa_template: Template) -> None:
    seen: list[Any] = []
    with awa_template.database() as dsn:
        client = Client(dsn, operator="t@test")
        client.periodic("nightly", "30 2 * * *", "app.nightly")

        @client.handler("app.nightly")
        async def nightly(job: Job) -> None:
            seen.append(job.fire_time)

        try:
            tomorrow = datetime.now(UTC) + timedelta(days=1)  # as docs/running-jobs.md does
            outcomes = run_due(client, tomorrow)
            assert [(job.schedule, state) for job, state in outcomes] == [("nightly", "completed")]
            (fired,) = seen
            assert (fired.hour, fired.minute, fired.second) == (2, 30, 0)
            assert timedelta(0) <= tomorrow - fired < timedelta(days=1)  # the last 02:30 before it
        finally:
            client.close()

